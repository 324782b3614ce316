import CLinux
import Glibc
import Logging
import TouchModel

/// `touchd run`: the input loop around the ``Engine``. One thread owns libinput and the engine; it waits in `poll(2)`
/// on libinput's fd, the signalfd, the control server's note fd and a udev monitor, with the engine's next deadline
/// (and the watchdog's, when systemd asked for one) as timeout, so an idle daemon never wakes. At each wake-up it reads
/// what happened, hands it to the engine with the time, and performs the engine's effects: actions go to the
/// executors (socket sends, commands) on their own threads, control messages to the control server, lines to the
/// log, statuses to systemd. The decisions are the engine's; this file only does what they say.
final class Daemon {
    private let configurationPath: String
    /// `--strict-permissions`: a reload refuses a file others can change, as the start did.
    private let strictPermissions: Bool
    /// The engine. Every change goes through ``engine``, which marks the forecasts stale; only the calls that change
    /// nothing and are `mutating` to work in place (``refreshForecasts()``, the deadline before each wait) use it
    /// directly.
    private var storedEngine: Engine
    private(set) var engine: Engine {
        // Read in place: a `get` would hand out a copy of the whole engine for every read of one of its parts.
        _read { yield storedEngine }
        _modify {
            // Any change may change what is certain to reach the application: the forecasts are made anew before the
            // next frame (refreshForecasts()).
            defer { forecastsStale = true }
            yield &storedEngine
        }
        set {
            storedEngine = newValue
            forecastsStale = true
        }
    }
    /// Whether the engine changed since the edge panels' forecasts were made (EdgeForecast, ``refreshForecasts()``).
    private var forecastsStale = true
    let logger: Logger
    private let notifier: Notifier
    /// Socket targets and commands.
    let executors: Executors
    /// The executors, the control server and speech, stopped in their order at shutdown.
    let workers: WorkerGroup
    var input: LibinputContext?
    /// The headphone jacks, for `[accessibility] start_on_headphones` (Daemon+Speech.swift).
    var headphoneJack: HeadphoneJack?
    /// From each frame's libinput timestamp to its actions being handed to their executor.
    private(set) var processing = LatencyHistogram()
    /// The part of `processing` spent inside touchd: from `poll` returning (``wokeAt``) to the actions being handed
    /// over. The rest is the kernel and the scheduler waking the input thread.
    private(set) var handling = LatencyHistogram()
    /// When `poll` last returned: read by ``checkClocks()``, right after it or, for a frame forwarded first with no
    /// contact down, right after the twin's write.
    private var wokeAt: UInt64 = 0
    /// Whether this wake-up's clocks are still to be read (``checkClocks()``).
    private var clocksPending = false
    /// Deliveries of the current batch for socket targets and for commands, handed over together by ``handOver()``.
    private var outbox = Executors.Batch()
    /// The libinput times of the batch's deliveries that input caused, for the processing-time figures.
    private var inputTimes: [UInt64] = []
    private var nextWatchdog: UInt64?
    /// The control socket's server; nil when `[control_socket] enabled = false` or it could not be set up.
    let control: (any ControlChannel)?
    /// Responses and events for the control socket, handed over with the batch's deliveries.
    private var controlOutbox: [ControlMessage] = []
    /// Control clients that asked for a reload in this batch: one reload answers them all.
    private var reloadRequesters: [ControlRequester] = []
    /// Frames that could not be written to a twin (filter mode), for the log's rate limit.
    private var forwardFailures = 0
    /// The loop's wait, once it runs: filter mode's edge panels join and leave it (``syncEdges()``).
    private var waiting: ReadyWait?
    /// The edge panels in the wait, by device id, and their places in the wait's mask (63 down).
    private var edgeWaits: SmallMap<Int, (edge: EdgePanel, index: Int)> = [:]
    /// Notices a system suspend between two wake-ups (fault-cases.md P1).
    private var suspendWatch = SuspendWatch()
    /// Whether the input thread sends under SCHED_IDLE, so that the target it wakes runs at once on its CPU
    /// (SendYield.swift); found when the loop starts.
    private var sendYield = SendYield.off
    /// `touchd run --yield-on-send` turns the yield on (it is off by default).
    private let yieldOnSend: Bool
    /// When the daemon started (monotonic microseconds), for `stats`.
    let startedAt = monotonicMicroseconds()
    /// The seat's one-instance lock, held until the daemon ends; its probes are drained in the loop.
    private let instanceLock: InstanceLock?

    init(
        configurationPath: String, configuration: Configuration, scene: Scene, logger: Logger, notifier: Notifier,
        executors: Executors, control: (any ControlChannel)?, workers: WorkerGroup,
        controlProblem: String? = nil, strictPermissions: Bool = false, instanceLock: InstanceLock? = nil,
        yieldOnSend: Bool = false
    ) {
        self.instanceLock = instanceLock
        self.yieldOnSend = yieldOnSend
        self.configurationPath = configurationPath
        self.strictPermissions = strictPermissions
        self.storedEngine = Engine(
            configuration: configuration, scene: scene, logsDebug: logger.logLevel <= .debug,
            controlProblem: controlProblem)
        self.logger = logger
        self.notifier = notifier
        self.executors = executors
        self.control = control
        self.workers = workers
    }

    /// Runs until SIGTERM or SIGINT; returns the exit status.
    func run(signals: SignalChannel) -> Int32 {
        // Filter mode grabs panels only if it can forward them (fault-cases.md F4): checked before any device opens.
        if engine.configuration.filter.enabled, let problem = LibinputContext.uinputProblem() {
            logger.critical(
                "filter mode is on but touchd cannot create virtual touchscreens: \(problem)",
                metadata: ["config": "\(configurationPath)"])
            notifier.notify(["STATUS=filter mode refused: \(problem)", "ERRNO=\(EACCES)"])
            return 78  // EX_CONFIG: the file asks for what this machine does not give; restarting cannot help
        }
        let input: LibinputContext
        do {
            input = try LibinputContext(seat: engine.configuration.seat, logger: logger)
        } catch {
            logger.critical(
                "cannot start the input layer: \(error)", metadata: ["seat": "\(engine.configuration.seat)"])
            notifier.notify(["STATUS=cannot start the input layer: \(error)", "ERRNO=\(ENODEV)"])
            return 69  // EX_UNAVAILABLE
        }
        self.input = input
        // From here on a SIGHUP or SIGTERM that lands on a thread which unblocked it comes to this thread's signalfd.
        signals.receiveOnCurrentThread()
        executors.configure(engine.configuration)
        applySpeech(engine.configuration)
        logger.info(
            "touchd started",
            metadata: [
                "version": "\(Touchd.version)", "config": "\(configurationPath)",
                "seat": "\(engine.configuration.seat)",
                "generation": "\(engine.generation)", MessageID.metadataKey: "\(MessageID.started)",
            ])
        // Before any device: the first real tap must not pay for faulting in its path's code (TapPathWarmUp.swift).
        TapPathWarmUp.run(engine.configuration)
        // Devices present at start arrive with the first dispatch; READY=1 does not wait for a touchscreen.
        perform(engine.handle(input.dispatch(), now: monotonicMicroseconds()))
        perform(engine.unusableTouchscreens(input.unusableTouchscreens()))
        perform(engine.started(now: monotonicMicroseconds()))
        if let interval = notifier.watchdogInterval {
            nextWatchdog = monotonicMicroseconds()
            logger.info("systemd watchdog enabled", metadata: ["interval_us": "\(interval)"])
        }

        sendYield = yieldOnSend ? SendYield.forCallingThread() : .off
        switch sendYield.state {
        case .on:
            logger.info("the input thread yields its CPU to each socket target it wakes (SCHED_IDLE for the send)")
        case .notNeeded(let reason):
            logger.info(
                "the input thread could yield its CPU to the targets it wakes, but does not need to",
                metadata: ["reason": "\(reason)"])
        case .turnedOff:
            logger.info(
                "the input thread does not yield its CPU to the targets it wakes",
                metadata: ["reason": "off by default (touchd run --yield-on-send turns it on)"])
        case .unavailable(let reason):
            logger.notice(
                "the input thread cannot yield its CPU to the targets it wakes: a target may be woken on another CPU",
                metadata: ["reason": "\(reason)"])
        }
        _ = suspendWatch.check(monotonic: monotonicMicroseconds(), boottime: boottimeMicroseconds())
        // The descriptors' places in the wait's mask: the input first, then the signals, then what this run has.
        var descriptors = [input.fileDescriptor, signals.fileDescriptor]
        var controlIndex: Int?
        if let control {
            controlIndex = descriptors.count
            descriptors.append(control.noteFileDescriptor)
        }
        var monitorIndex: Int?
        if let monitor = input.monitorFileDescriptor {
            monitorIndex = descriptors.count
            descriptors.append(monitor)
        }
        var lockIndex: Int?
        if let instanceLock {
            lockIndex = descriptors.count
            descriptors.append(instanceLock.fileDescriptor)
        }
        var speechIndex: Int?
        if let speech = workers.speech?.fileDescriptor {
            speechIndex = descriptors.count
            descriptors.append(speech)
        }
        let jackStart = descriptors.count
        let jacks = openHeadphoneJacks()
        descriptors += jacks
        let waiting: ReadyWait
        do {
            waiting = try ReadyWait(descriptors)
        } catch {
            logger.critical("cannot set up the input loop's wait: \(error)")
            notifier.notify(["STATUS=cannot set up the input loop's wait: \(error)", "ERRNO=\(error.errno)"])
            return 71  // EX_OSERR
        }
        // One array of events and one of effects for every wake-up, emptied with their room kept: a touch's path
        // makes and frees neither.
        var events: [InputEvent] = []
        events.reserveCapacity(8)
        var effects: [Effect] = []
        effects.reserveCapacity(8)
        self.waiting = waiting
        // Panels grabbed during the first dispatch, before the wait existed.
        syncEdges()
        while true {
            pingWatchdogIfDue()
            let ready = waiting.wait(timeout: timeout())
            if ready.count < 0 && errno != EINTR {
                logger.critical("epoll_wait failed: \(LibinputContext.errnoText())")
                return 70  // EX_SOFTWARE
            }
            // The clocks and the suspend check come before the input that woke us: it may be the release of a finger
            // that lifted while the system slept. Only a filtered panel's frame with no contact down anywhere has them
            // after the twin's write (a resume then cancels nothing); everything else has them first.
            clocksPending = true
            // Filter mode's grabbed panels that touchd reads itself (EdgePanel.swift): the application's touches, first
            // of all (docs/performance.md measures each step before the twin's write).
            for entry in edgeWaits.values where ready.contains(entry.index) {
                let edge = entry.edge
                // A frame handled before may have let go of it (in this wake-up's copy of the wait's list).
                guard !edge.isRetired else { continue }
                edge.read(prepare: { prepareToForward(edge) }) { frame, written in
                    // What is certain to reach the application goes to the twin first: a frame that changes one
                    // contact alone straight from the panel's events, before they were decoded (EdgePanel.read);
                    // another from its decoded events. The engine then handles the frame, and its scene makes what
                    // was written.
                    var first = written?.frame
                    if let code = written?.failure { forwardFailed(device: edge.device, errno: code) }
                    if written == nil {
                        prepareToForward(edge)
                        first = edge.certain(of: frame)
                        if let first, let code = edge.forwardFirst(first) {
                            forwardFailed(device: edge.device, errno: code)
                        }
                    }
                    // Before the engine handles the frame, whatever was written first.
                    checkClocks()
                    engine.handle(taking: &frame, now: wokeAt, into: &effects, forwardedFirst: first)
                    perform(taking: &effects)
                    handOver()
                    return !edge.isRetired
                }
                if let failure = edge.failure { edgeFailed(edge.device, errno: failure) }
            }
            checkClocks()
            if ready.contains(1) {
                var stop = false
                var reload = false
                for signal in signals.drain() {
                    if signal == SIGHUP { reload = true } else { stop = true }
                }
                if stop { return shutdown() }
                if reload {
                    self.reload()
                    rescanIfNoTouchscreen()
                }
            }
            if ready.contains(0) {
                input.dispatch(into: &events)
                engine.handle(taking: &events, now: wokeAt, into: &effects)
                perform(taking: &effects)
                // At once, before the loop's other work: a tap's message is what the kiosk app waits for.
                handOver()
                // A grab that waits for contacts to lift (filter mode): the panel's events, the lift among them, woke
                // us.
                if engine.filterWaits { perform(engine.retryWaitingGrabs()) }
            }
            if let index = monitorIndex, ready.contains(index) {
                // An input device came or went. libinput got the same uevent at the same moment: dispatch it first so
                // that a device it takes is known before the comparison.
                input.drainMonitor()
                perform(engine.handle(input.dispatch(), now: monotonicMicroseconds()))
                perform(engine.unusableTouchscreens(input.unusableTouchscreens()))
                // A panel's sibling node may come after the panel, or get udev's properties later.
                updateSiblingGrabs()
            }
            // A second instance asked who holds the seat (it read our pid from the connection).
            if let index = lockIndex, ready.contains(index) { instanceLock?.drain() }
            // The speech server came or went (Daemon+Speech.swift).
            if let index = speechIndex, ready.contains(index) { handleSpeechAvailability() }
            for (offset, jack) in jacks.enumerated() where ready.contains(jackStart + offset) {
                handleHeadphoneJack(jack)
            }
            // After the input, so that a request sees the touches that came with it.
            if let index = controlIndex, ready.contains(index) { handleControlNotes() }
            // The clock only when something can be due.
            if storedEngine.nextDeadlineInPlace() != nil { perform(engine.advance(to: monotonicMicroseconds())) }
            // What this wake-up's device changes, control notes and deadlines caused.
            handOver()
            refreshForecasts()
        }
    }

    /// Before `edge` forwards a frame first: the clocks, unless the edge's forecast is current and finds no contact
    /// down anywhere (a resume would cancel nothing, so the forecast holds whatever the clocks say; they are read after
    /// the twin's write), then the forecasts made anew if a resume or the frame before changed the engine (nothing when
    /// neither did).
    @inline(__always)
    private func prepareToForward(_ edge: EdgePanel) {
        if clocksPending, forecastsStale || edge.forecast?.resumeCancelsNothing != true { checkClocks() }
        refreshForecasts()
    }

    /// Reads the clocks for this wake-up (``wokeAt``) and checks for a suspend since the last (fault-cases.md P1), once:
    /// nothing when they were read since the wake-up.
    private func checkClocks() {
        guard clocksPending else { return }
        clocksPending = false
        wokeAt = monotonicMicroseconds()
        if let asleep = suspendWatch.check(monotonic: wokeAt, boottime: boottimeMicroseconds()) {
            perform(engine.resumed(afterSleeping: asleep, now: wokeAt))
        }
    }

    /// Milliseconds until the nearest deadline (rounded up so the deadline has passed on waking), or −1 for none.
    private func timeout() -> Int32 {
        // No array for two optionals: this runs before every poll.
        var deadline = storedEngine.nextDeadlineInPlace()?.microseconds
        if let watchdog = nextWatchdog { deadline = Swift.min(deadline ?? watchdog, watchdog) }
        // No deadline, no clock read (one fewer system call per wake-up).
        guard let deadline else { return -1 }
        return pollTimeout(until: deadline, now: monotonicMicroseconds())
    }

    private func pingWatchdogIfDue() {
        guard let due = nextWatchdog, let interval = notifier.watchdogInterval else { return }
        let now = monotonicMicroseconds()
        guard now >= due else { return }
        notifier.watchdog()
        // systemd recommends pinging at half the interval.
        nextWatchdog = now &+ max(interval / 2, 1)
    }

    // MARK: - Effects

    /// Does what the engine decided, in order. Deliveries and control messages wait for the batch's hand-over.
    private func perform(_ effects: consuming [Effect]) {
        perform(taking: &effects)
    }

    /// ``perform(_:)`` taking the effects out of `effects`, which it leaves empty with its room kept: the input loop's
    /// way. Each effect is moved out, never copied (a copy of an effect is a call to its copy witness, a switch over
    /// every case, and a delivery's seven strings retained and released again).
    private func perform(taking effects: inout [Effect]) {
        effects.drainInOrder { effect in perform(one: effect) }
    }

    /// One effect, moved in (only a method's parameter can be matched by `switch consume`, which moves a delivery out
    /// of its effect instead of copying it through the runtime's tuple witness).
    private func perform(one effect: consuming Effect) {
        switch consume effect {
        case .deliver(let delivery, let executor, let fromInput):
            file(delivery, to: executor, fromInput: fromInput)
        case .control(let message):
            controlOutbox.append(message)
        case .log(let level, let message, let metadata):
            logger.log(level: level, "\(message)", metadata: metadata.isEmpty ? nil : metadata)
        case .notify(.ready(let status)):
            notifier.ready(status: status)
        case .notify(.status(let status)):
            notifier.status(status)
        case .configureExecutors(let configuration):
            // What the old configuration caused goes out under the old targets first.
            handOver()
            control?.setGeneration(engine.generation)
            executors.configure(configuration)
            applySpeech(configuration)
        case .output, .idle, .wakeTouch:
            break  // only an observer asks for them (the engine is not made with observesOutput here)
        case .speech(let command, _):
            performSpeech(command)
        case .speechMode:
            break  // the engine logged the change; simulate prints it
        case .reloadConfiguration(let requester):
            reloadRequesters.append(requester)
        case .filterDevices(let devices, let cancelWith, let axes):
            guard let input else { return }
            perform(engine.filterApplied(input.applyFilter(devices, cancelWith: cancelWith, axes: axes)))
            updateSiblingGrabs()
            syncEdges()
        case .forward(let frame):
            forwardToTwin(frame)
        }
    }

    /// Writes a frame to its twin, in the loop's turn: no thread hop on the application's path.
    private func forwardToTwin(_ frame: TwinFrame) {
        guard let code = input?.forward(frame) else { return }
        forwardFailed(device: frame.device, errno: code)
    }

    /// A frame could not be written to its twin. A twin that stopped taking frames fails on every touch: said once,
    /// then every 1000th time.
    private func forwardFailed(device: Int, errno code: Int32) {
        forwardFailures &+= 1
        if forwardFailures == 1 || forwardFailures % 1000 == 0 {
            logger.warning(
                "cannot forward a frame to the application",
                metadata: [
                    "device": "\(device)", "errno": "\(LibinputContext.errnoText(code))",
                    "failures": "\(forwardFailures)",
                ])
        }
    }

    /// Makes each edge panel's forecast anew when the engine changed since (EdgeForecast).
    private func refreshForecasts() {
        guard forecastsStale else { return }
        forecastsStale = false
        // On the stored engine in place (Engine.edgeForecast(for:) says why it is mutating), after every frame; its
        // forecast changes nothing, so the forecasts stay fresh. Each is written over the edge's last, in its room.
        for entry in edgeWaits.values { storedEngine.refreshEdgeForecast(&entry.edge.forecast, for: entry.edge.device) }
    }

    /// Puts filter mode's new edge panels in the loop's wait and takes out those let go of (before their descriptors
    /// close), and hands the engine the cancels of contacts that were down on a panel let go of.
    private func syncEdges() {
        guard let input, let waiting else { return }
        for edge in input.takeRetiredEdges() {
            if let entry = edgeWaits[edge.device], entry.edge === edge {
                waiting.remove(edge.fd)
                edgeWaits[edge.device] = nil
            }
        }
        // Not one whose read failed (edgeFailed(_:errno:)): libinput reports its removal, which retires it.
        for (id, edge) in input.edges where edge.failure == nil && edgeWaits[id]?.edge !== edge {
            if let stale = edgeWaits[id] { waiting.remove(stale.edge.fd) }
            let used = Set(edgeWaits.values.map(\.index))
            // The fixed descriptors take the mask's low places; the edges take the high ones.
            guard let index = (32..<64).reversed().first(where: { !used.contains($0) }) else { continue }
            if let code = waiting.add(edge.fd, index: index) {
                logger.error(
                    "cannot wait on a filtered touchscreen: the application gets none of its touches",
                    metadata: ["device": "\(id)", "errno": "\(LibinputContext.errnoText(code))"])
                continue
            }
            edgeWaits[id] = (edge, index)
            forecastsStale = true
        }
        if !input.edgeLeftovers.isEmpty {
            let leftovers = input.edgeLeftovers
            input.edgeLeftovers = []
            perform(engine.handle(leftovers, now: monotonicMicroseconds()))
        }
    }

    /// An edge panel's read failed (the device went away, most often): out of the wait, which would otherwise wake for
    /// it at once forever. libinput reports the removal, and the engine lets go of the panel then.
    private func edgeFailed(_ id: Int, errno code: Int32) {
        guard let entry = edgeWaits.removeValue(forKey: id) else { return }
        waiting?.remove(entry.edge.fd)
        logger.log(
            level: code == ENODEV ? .info : .warning, "a filtered touchscreen stopped answering",
            metadata: ["device": "\(id)", "errno": "\(LibinputContext.errnoText(code))"])
    }

    /// The speech server became available or unavailable (Daemon+Speech.swift): the engine's input (speech mode may
    /// start only while available, and ends when it is not: the contract's rule 3). The client has already logged the
    /// change itself, with the reason.
    func speechAvailabilityChanged(_ availability: SpeechAvailability) {
        perform(engine.speechAvailability(availability.isAvailable, reportsEnds: true, now: monotonicMicroseconds()))
    }

    /// Headphones were plugged in or out (Daemon+Speech.swift).
    func headphonesChanged(inserted: Bool) {
        perform(engine.headphonesChanged(inserted: inserted, now: monotonicMicroseconds()))
    }

    /// The speech server finished speaking an utterance touchd marked (SpeechEdge, on the input thread).
    func speechEnded(mark: UInt64, at time: UInt64) {
        perform(engine.speechEnded(mark: mark, now: time))
    }

    /// Files a delivery in its executor's outbox for the hand-over, with its time when input caused it.
    private func file(_ delivery: consuming ActionDelivery, to executor: ExecutorKind, fromInput: Bool) {
        // The time first: then the delivery's last use is the append, which takes it without a copy.
        if fromInput { inputTimes.append(delivery.timeMicroseconds) }
        outbox.append(delivery, for: executor)
    }

    /// Hands the batch's deliveries to the socket sender and the command runner, one call each (neither blocks), and
    /// records how long each input event took to get here: from its libinput timestamp (processing) and from `poll`
    /// returning (handling). The socket targets' messages go first, the figures are recorded after them: even the clock
    /// is read after the hand-over (in the emulated test guest a clock read is a syscall and a device read).
    private func handOver() {
        if !outbox.isEmpty {
            let lowered = !outbox.sockets.isEmpty && sendYield.lower()
            executors.submit(outbox)
            if lowered { restoreAfterSend() }
            outbox.removeAllKeepingCapacity()
        }
        // The figures of what input caused: also of an answered frame's messages, which the socket sender took straight.
        if !inputTimes.isEmpty {
            let now = monotonicMicroseconds()
            for time in inputTimes {
                processing.record(now.saturatingSubtract(time))
                handling.record(now.saturatingSubtract(wokeAt))
            }
            inputTimes.removeAllKeepingCapacity()
        }
        if !controlOutbox.isEmpty {
            control?.post(controlOutbox)
            controlOutbox.removeAllKeepingCapacity()
        }
    }

    /// The input thread back to SCHED_OTHER after a send made under SCHED_IDLE; if it cannot come back, it stops
    /// yielding and says so.
    private func restoreAfterSend() {
        guard let error = sendYield.restore() else { return }
        sendYield.turnOff(because: "\(error)")
        logger.error(
            "the input thread could not come back from SCHED_IDLE after a send; it stays there and no longer yields",
            metadata: ["error": "\(error)"])
    }

    /// Answers every waiting control note; the responses and the events they cause go out with the batch's hand-over.
    private func handleControlNotes() {
        guard let control else { return }
        for note in control.takeNotes() {
            perform(engine.handle(note, now: monotonicMicroseconds(), edge: edgeStatistics))
        }
        // Requests of one batch share one reload (fault-cases.md: reloads over the socket are coalesced).
        if !reloadRequesters.isEmpty {
            let requesters = reloadRequesters
            reloadRequesters.removeAll()
            reload(requesters: requesters)
        }
    }

    /// The figures of the parts around the engine, for `stats`.
    private func edgeStatistics() -> EdgeStatistics {
        EdgeStatistics(
            uptimeMicroseconds: monotonicMicroseconds().saturatingSubtract(startedAt),
            lostEventWarnings: input?.lostEventWarnings ?? 0, processing: processing, handling: handling,
            targets: executors.targetReports, controlCounters: control?.counters ?? [])
    }

    // MARK: - Reload and stop

    /// Reads the file again and hands the outcome to the engine; `requesters` (control clients) get the answer.
    private func reload(requesters: [ControlRequester] = []) {
        notifier.reloading()
        logger.info("reloading the configuration", metadata: ["config": "\(configurationPath)"])
        let loaded: LoadOutcome
        switch ConfigurationFile.load(path: configurationPath, strictPermissions: strictPermissions) {
        case .failure(let error):
            for line in error.loggedWarningLines { logger.warning("\(line)") }
            loaded = .refused(error.reportedLines, logged: error.loggedLines)
        case .success(let configuration):
            // Every load, not only the first: a reload may add a command whose program is missing (C13), and the
            // file's mode may have changed since the start (C5).
            for warning in configuration.warnings {
                logger.warning("\(warning.formatted(path: configurationPath, severity: false))")
            }
            if configuration.filter.enabled, !engine.configuration.filter.enabled,
                let problem = LibinputContext.uinputProblem()
            {
                // A reload that turns filter mode on is refused like a broken file: the old configuration stays.
                loaded = .refused(
                    ["\(configurationPath): error: [filter] enabled: \(problem)"],
                    logged: ["\(configurationPath): [filter] enabled: \(problem)"])
            } else {
                loaded = .loaded(configuration)
            }
        }
        perform(engine.reload(loaded, path: configurationPath, now: monotonicMicroseconds(), requesters: requesters))
        // A reload may turn grab_siblings on or off with the same touchscreens filtered.
        updateSiblingGrabs()
    }

    /// Filter mode's sibling grab (`[filter] grab_siblings`, docs/kiosk.md): brings the grabs of the filtered panels'
    /// sibling pointer nodes in line with the configuration, and logs what changed.
    private func updateSiblingGrabs() {
        guard let input else { return }
        let filter = engine.configuration.filter
        guard filter.enabled || !input.siblingGrabs.isEmpty else { return }
        for change in input.updateSiblingGrabs(enabled: filter.enabled && filter.grabSiblings) {
            switch change {
            case .grabbed(let sysname, let name, let panel):
                logger.notice(
                    "sibling node grabbed: the compositor no longer reads it",
                    metadata: ["device": "\(name) (\(sysname))", "panel": "\(panel)"])
            case .released(let sysname, let name):
                logger.info("sibling node released", metadata: ["device": "\(name) (\(sysname))"])
            case .refused(let sysname, let name, let panel, let problem):
                logger.warning(
                    "sibling node not grabbed: \(problem)",
                    metadata: ["device": "\(name) (\(sysname))", "panel": "\(panel)"])
            }
        }
    }

    /// A SIGHUP with no touchscreen in use also retries the devices libinput could not open (fault-cases.md D2).
    private func rescanIfNoTouchscreen() {
        guard engine.router.touchscreens.isEmpty, let input else { return }
        logger.info("no touchscreen in use: rescanning the seat", metadata: ["seat": "\(engine.configuration.seat)"])
        input.rescan()
        perform(engine.handle(input.dispatch(), now: monotonicMicroseconds()))
        perform(engine.unusableTouchscreens(input.unusableTouchscreens()))
    }

    private func shutdown() -> Int32 {
        notifier.stopping()
        logger.info("stopping", metadata: MessageID.shutdown.metadata)
        perform(engine.stopping(now: monotonicMicroseconds()))
        handOver()
        // The application reads the panels directly again (its twins' contacts were cancelled above).
        input?.releaseFilter()
        // Control subscribers get their shutdown line, socket targets are flushed, commands stopped (WorkerGroup).
        workers.stop()
        // From libinput's event timestamp to the executor (the contract's figure), and the in-process part of it.
        var latency = processing.summary.mapValues { Logger.MetadataValue.string($0) }
        for (key, value) in handling.summary where key != "samples" { latency["handling_\(key)"] = .string(value) }
        // The input thread's own page faults and context switches over its life: what its work costs the kernel.
        var usage = rusage()
        if touchd_thread_rusage(&usage) == 0 {
            latency["input_thread_minor_faults"] = "\(usage.ru_minflt)"
            latency["input_thread_voluntary_switches"] = "\(usage.ru_nvcsw)"
            latency["input_thread_involuntary_switches"] = "\(usage.ru_nivcsw)"
        }
        logger.info("processing latency", metadata: latency)
        let statistics = engine.statistics
        logger.info(
            "touchd stopped",
            metadata: [
                "frames": "\(statistics.frames)", "actions": "\(statistics.actions)",
                "unhandled_actions": "\(statistics.unhandledActions)",
                "contacts_over_limit": "\(statistics.contactsOverLimit)",
                "forwarded_first": "\(statistics.forwardedFirst)", "forecast_misses": "\(statistics.forecastMisses)",
                "reloads": "\(statistics.reloads)", "reload_failures": "\(statistics.reloadFailures)",
                "libinput_lost_event_warnings": "\(input?.lostEventWarnings ?? 0)",
            ])
        logTargetStatistics()
        return 0
    }

    /// One line per target that was ever configured, with its counters.
    private func logTargetStatistics() {
        for report in executors.targetReports { logger.info("target statistics", metadata: report.metadata) }
    }
}

extension UInt64 {
    /// `self − other`, or 0 when `other` is larger.
    func saturatingSubtract(_ other: UInt64) -> UInt64 { self >= other ? self - other : 0 }
}
