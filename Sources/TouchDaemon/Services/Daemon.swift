import Glibc
import Logging
import TouchModel

/// `touchd run`: the input loop. One thread owns libinput, the router and the scene; it waits in `poll(2)` on
/// libinput's fd and the signalfd with the scene's next deadline (and the watchdog's, when systemd asked for one) as
/// timeout, so an idle daemon never wakes. Everything with side effects beyond the loop (socket sends, running
/// commands) happens on the executors' own threads and tasks: the loop only hands them values.
final class Daemon {
    /// Counters kept by the input loop.
    struct Statistics: Sendable {
        var frames = 0
        var controlEvents = 0
        var gestureEvents = 0
        var actions = 0
        /// Actions no responder handled (nil target and nobody in the chain responds).
        var unhandledActions = 0
        /// Contacts ignored because `max_contacts` were already down.
        var contactsOverLimit = 0
        var diagnostics = 0
        var reloads = 0
        var reloadFailures = 0
    }

    private let configurationPath: String
    /// `--strict-permissions`: a reload refuses a file others can change, as the start did.
    private let strictPermissions: Bool
    var configuration: Configuration
    var scene: Scene
    var router: TouchRouter
    var generation = 1
    let logger: Logger
    private let notifier: Notifier
    let sockets: SocketTargetSender
    let commands: CommandRunner
    var input: LibinputContext?
    private(set) var statistics = Statistics()
    /// From each frame's libinput timestamp to its actions being handed to their executor.
    private(set) var processing = LatencyHistogram()
    /// The part of `processing` spent inside touchd: from `poll` returning to the actions being handed over. The rest
    /// is the kernel and the scheduler waking the input thread.
    private(set) var handling = LatencyHistogram()
    /// When `poll` last returned.
    private var wokeAt: UInt64 = 0
    /// Deliveries of the current batch of input, handed over together by ``handOver()``; `command` says whether they
    /// go to the command runner (else the socket sender), `fromInput` whether their time is an input event's (and so
    /// counts in the processing-time figures).
    private var outbox: [(delivery: ActionDelivery, command: Bool, fromInput: Bool)] = []
    private var sceneDeadline: Instant?
    private var nextWatchdog: UInt64?
    private var diagnosticLimit = RateLimit()
    private var lastStatus = ""
    /// Set when a touchscreen was added or removed, so the status is rebuilt only then, not on every wake-up.
    private var touchscreensChanged = false
    /// The control socket's server; nil when `[control_socket] enabled = false` or it could not be set up.
    let control: (any ControlChannel)?
    /// Why there is no control socket, for the systemd status; nil when there is one or it is turned off.
    private let controlProblem: String?
    /// Responses and events for the control socket, handed over with the batch's deliveries.
    var controlOutbox: [ControlMessage] = []
    var subscriptions = ControlSubscriptions()
    /// Touchscreens udev knows that libinput did not take (fault-cases.md D12), for the status and the log.
    private var unusable: [UnusableTouchscreen] = []
    /// Notices a system suspend between two wake-ups (fault-cases.md P1).
    private var suspendWatch = SuspendWatch()
    /// When the daemon started (monotonic microseconds), for `stats`.
    let startedAt = monotonicMicroseconds()

    init(
        configurationPath: String, configuration: Configuration, scene: Scene, logger: Logger, notifier: Notifier,
        sockets: SocketTargetSender, commands: CommandRunner, control: (any ControlChannel)?,
        controlProblem: String? = nil, strictPermissions: Bool = false
    ) {
        self.configurationPath = configurationPath
        self.strictPermissions = strictPermissions
        self.configuration = configuration
        self.scene = scene
        self.router = TouchRouter(output: configuration.output, allowList: configuration.devices)
        self.logger = logger
        self.notifier = notifier
        self.sockets = sockets
        self.commands = commands
        self.control = control
        self.controlProblem = controlProblem
    }

    /// Runs until SIGTERM or SIGINT; returns the exit status.
    func run(signals: SignalChannel) -> Int32 {
        let input: LibinputContext
        do {
            input = try LibinputContext(seat: configuration.seat, logger: logger)
        } catch {
            logger.critical("cannot start the input layer: \(error)", metadata: ["seat": "\(configuration.seat)"])
            notifier.notify(["STATUS=cannot start the input layer: \(error)", "ERRNO=\(ENODEV)"])
            return 69  // EX_UNAVAILABLE
        }
        self.input = input
        // From here on a SIGHUP or SIGTERM that lands on a thread which unblocked it comes to this thread's signalfd.
        signals.receiveOnCurrentThread()
        sockets.configure(configuration.socketTargets)
        commands.configure(configuration.execTargets)
        logger.info(
            "touchd started",
            metadata: [
                "version": "\(Touchd.version)", "config": "\(configurationPath)", "seat": "\(configuration.seat)",
                "generation": "\(generation)", MessageID.metadataKey: "\(MessageID.started)",
            ])
        // Devices present at start arrive with the first dispatch; READY=1 does not wait for a touchscreen.
        handle(input.dispatch())
        checkUnusableTouchscreens()
        if router.touchscreens.isEmpty { logWaiting() }
        lastStatus = statusText
        notifier.ready(status: lastStatus)
        logger.info("ready", metadata: ["status": "\(lastStatus)", MessageID.metadataKey: "\(MessageID.ready)"])
        if let interval = notifier.watchdogInterval {
            nextWatchdog = monotonicMicroseconds()
            logger.info("systemd watchdog enabled", metadata: ["interval_us": "\(interval)"])
        }

        _ = suspendWatch.check(monotonic: monotonicMicroseconds(), boottime: boottimeMicroseconds())
        var descriptors = [
            pollfd(fd: input.fileDescriptor, events: Int16(POLLIN), revents: 0),
            pollfd(fd: signals.fileDescriptor, events: Int16(POLLIN), revents: 0),
        ]
        var controlIndex: Int?
        if let control {
            controlIndex = descriptors.count
            descriptors.append(pollfd(fd: control.noteFileDescriptor, events: Int16(POLLIN), revents: 0))
        }
        var monitorIndex: Int?
        if let monitor = input.monitorFileDescriptor {
            monitorIndex = descriptors.count
            descriptors.append(pollfd(fd: monitor, events: Int16(POLLIN), revents: 0))
        }
        while true {
            pingWatchdogIfDue()
            let ready = poll(&descriptors, nfds_t(descriptors.count), timeout())
            wokeAt = monotonicMicroseconds()
            if ready < 0 && errno != EINTR {
                logger.critical("poll failed: \(LibinputContext.errnoText())")
                return 70  // EX_SOFTWARE
            }
            // Before the input that woke us: it may be the release of a finger that lifted while the system slept.
            if let asleep = suspendWatch.check(monotonic: wokeAt, boottime: boottimeMicroseconds()) {
                resumed(afterSleeping: asleep)
            }
            if descriptors[1].revents != 0 {
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
            if descriptors[0].revents != 0 { handle(input.dispatch()) }
            if let index = monitorIndex, descriptors[index].revents != 0 {
                // An input device came or went. libinput got the same uevent at the same moment: dispatch it first so
                // that a device it takes is known before the comparison.
                input.drainMonitor()
                handle(input.dispatch())
                checkUnusableTouchscreens()
            }
            // After the input, so that a request sees the touches that came with it.
            if let index = controlIndex, descriptors[index].revents != 0 { handleControlNotes() }
            if let deadline = sceneDeadline, monotonicMicroseconds() >= deadline.microseconds {
                deliver(
                    scene.advance(to: Instant(microseconds: monotonicMicroseconds())), device: nil, fromInput: false)
            }
            handOver()
            if touchscreensChanged { updateStatusIfChanged() }
        }
    }

    /// Milliseconds until the nearest deadline (rounded up so the deadline has passed on waking), or −1 for none.
    private func timeout() -> Int32 {
        pollTimeout(
            until: [sceneDeadline?.microseconds, nextWatchdog].compactMap { $0 }.min(), now: monotonicMicroseconds())
    }

    private func pingWatchdogIfDue() {
        guard let due = nextWatchdog, let interval = notifier.watchdogInterval else { return }
        let now = monotonicMicroseconds()
        guard now >= due else { return }
        notifier.watchdog()
        // systemd recommends pinging at half the interval.
        nextWatchdog = now &+ max(interval / 2, 1)
    }

    // MARK: - Input

    private func handle(_ events: [InputEvent]) {
        for event in events {
            for note in router.handle(event, now: scene.now.microseconds) {
                switch note {
                case .frame(let frame, let device):
                    statistics.frames &+= 1
                    deliver(scene.handle(frame), device: device, fromInput: true)
                case .accepted(let device):
                    touchscreensChanged = true
                    logger.info(
                        "touchscreen added",
                        metadata: Self.metadata(of: device).merging(MessageID.deviceAdded.metadata) { $1 })
                    broadcastDevice("added", device)
                case .ignored(let device, let reason):
                    var metadata = Self.metadata(of: device)
                    metadata["reason"] = "\(reason)"
                    metadata[MessageID.metadataKey] = "\(MessageID.deviceIgnored)"
                    logger.info("input device ignored", metadata: metadata)
                    broadcastDevice("ignored", device, reason: "\(reason)")
                case .removed(let device, let wasUsed):
                    guard wasUsed else {
                        logger.debug("input device removed", metadata: Self.metadata(of: device))
                        continue
                    }
                    touchscreensChanged = true
                    logger.info(
                        "touchscreen removed",
                        metadata: Self.metadata(of: device).merging(MessageID.deviceRemoved.metadata) { $1 })
                    broadcastDevice("removed", device)
                    if router.touchscreens.isEmpty { logWaiting() }
                }
            }
        }
    }

    /// Hands the output's actions to their executors and logs its events and diagnostics.
    func deliver(_ output: Output, device: DeviceInfo?, fromInput: Bool) {
        sceneDeadline = output.nextDeadline
        for entry in output.entries {
            switch entry {
            case .event(let record):
                statistics.controlEvents &+= 1
                logger.debug(
                    "control event",
                    metadata: [
                        "control.id": "\(record.control)", "event": "\(configuration.name(of: record.event))",
                        "contact": "\(record.contact.map { "\($0)" } ?? "-")", "state": "\(record.state)",
                    ])
            case .gesture(let record):
                statistics.gestureEvents &+= 1
                logger.debug(
                    "gesture event",
                    metadata: [
                        "gesture.id": "\(record.gesture)", "event": "\(record.event)",
                        "state": "\(record.state.rawValue)",
                        "contacts": "\(record.contacts.map(String.init).joined(separator: ","))",
                    ])
            case .action(let action):
                if let event = ControlSubscriptions.event(
                    for: action, configuration: configuration, device: device?.sysname, generation: generation)
                {
                    controlOutbox.append(.event(event))
                    continue
                }
                statistics.actions &+= 1
                dispatch(action, device: device, fromInput: fromInput)
            }
        }
        for diagnostic in output.diagnostics { report(diagnostic) }
    }

    private func dispatch(_ action: ResolvedAction, device: DeviceInfo?, fromInput: Bool) {
        let event = ActionDelivery.eventName(of: action, configuration: configuration)
        guard let targetName = action.target,
            let target = configuration.targets.first(where: { $0.name == targetName })
        else {
            statistics.unhandledActions &+= 1
            logger.debug(
                "action not handled by any responder",
                metadata: ["action": "\(action.action)", "control.id": "\(action.control)", "event": "\(event)"])
            return
        }
        guard
            let delivery = ActionDelivery(
                action, configuration: configuration, device: device?.sysname, generation: generation)
        else { return }
        switch target.kind {
        case .socket: outbox.append((delivery, false, fromInput))
        case .exec: outbox.append((delivery, true, fromInput))
        }
        logger.debug(
            "action", metadata: ["action": "\(action.action)", "target": "\(targetName)", "event": "\(event)"])
    }

    private func report(_ diagnostic: Diagnostic) {
        statistics.diagnostics &+= 1
        let level: Logger.Level
        switch diagnostic {
        case .contactLimitReached:
            statistics.contactsOverLimit &+= 1
            level = .warning
        case .unexpectedTransition, .unexpectedGestureTransition: level = .error
        case .trackingCancelled(_, _, let reason): level = reason == .stuck ? .warning : .debug
        case .timeWentBackwards, .controlBusy: level = .debug
        case .unknownContact, .contactRestarted, .invalidLocation: level = .warning
        case .unknownControl, .unknownScreen, .unknownTarget, .unknownGesture, .targetDoesNotRespond, .invalidValue:
            level = .info
        }
        guard level > .debug else {
            logger.debug("\(diagnostic)")
            return
        }
        switch diagnosticLimit.check(now: monotonicMicroseconds()) {
        case .suppress: return
        case .pass(let suppressed):
            var metadata: Logger.Metadata = [:]
            if suppressed > 0 { metadata["suppressed"] = "\(suppressed)" }
            logger.log(level: level, "\(diagnostic)", metadata: metadata)
        }
    }

    /// Hands the batch's deliveries to the socket sender and the command runner, one call each (neither blocks), and
    /// records how long each input event took to get here: from its libinput timestamp (processing) and from `poll`
    /// returning (handling).
    private func handOver() {
        if !controlOutbox.isEmpty {
            control?.post(controlOutbox)
            controlOutbox.removeAll(keepingCapacity: true)
        }
        guard !outbox.isEmpty else { return }
        let now = monotonicMicroseconds()
        for (delivery, _, fromInput) in outbox where fromInput {
            processing.record(now.saturatingSubtract(delivery.timeMicroseconds))
            handling.record(now.saturatingSubtract(wokeAt))
        }
        if outbox.contains(where: { !$0.command }) {
            sockets.submit(outbox.lazy.filter { !$0.command }.map(\.delivery))
        }
        if outbox.contains(where: \.command) {
            commands.submit(outbox.lazy.filter(\.command).map(\.delivery))
        }
        outbox.removeAll(keepingCapacity: true)
    }

    // MARK: - Reload and stop

    private func reload() {
        notifier.reloading()
        logger.info("reloading the configuration", metadata: ["config": "\(configurationPath)"])
        let loaded: Configuration
        let newScene: Scene
        switch ConfigurationFile.load(path: configurationPath, strictPermissions: strictPermissions) {
        case .failure(let error):
            for line in error.warningLines { logger.warning("\(line)") }
            return reloadFailed(error.reportedLines)
        case .success(let configuration):
            // Every load, not only the first: a reload may add a command whose program is missing (C13), and the
            // file's mode may have changed since the start (C5).
            for warning in configuration.warnings { logger.warning("\(warning.formatted(path: configurationPath))") }
            do {
                newScene = try configuration.makeScene()
            } catch {
                return reloadFailed(error.problems.map { "\(configurationPath): error: \($0)" })
            }
            loaded = configuration
        }
        // Contacts that are down belong to the old layout: they end there, with touchCancel, and the router ignores
        // them until they lift, so the new layout never sees a touch that began nowhere. Their actions go out under
        // the old targets, before the sender and the runner are reconfigured.
        cancelActiveContacts()
        handOver()
        let previousControl = configuration.control
        configuration = loaded
        scene = newScene
        sceneDeadline = nil
        generation += 1
        // Subscribers are weak targets of the old scene: they follow the new one.
        subscriptions.reinstall(in: &scene)
        control?.setGeneration(generation)
        statistics.reloads &+= 1
        let notes = router.reconfigure(output: loaded.output, allowList: loaded.devices)
        sockets.configure(loaded.socketTargets)
        // Commands that are running go on running (fault-cases.md C18); only what comes next uses the new targets.
        commands.configure(loaded.execTargets)
        for note in notes {
            switch note {
            case .accepted(let device): logger.info("touchscreen now used", metadata: Self.metadata(of: device))
            case .ignored(let device, let reason):
                var metadata = Self.metadata(of: device)
                metadata["reason"] = "\(reason)"
                logger.info("touchscreen no longer used", metadata: metadata)
            case .frame, .removed: break
            }
        }
        logger.info(
            "configuration reloaded",
            metadata: [
                "generation": "\(generation)", "controls": "\(loaded.controls.count)",
                MessageID.metadataKey: "\(MessageID.configLoaded)",
            ])
        if loaded.control != previousControl {
            logger.warning(
                "the [control_socket] settings changed; they apply at the next start",
                metadata: ["config": "\(configurationPath)"])
        }
        broadcastConfig("reloaded")
        lastStatus = statusText
        notifier.ready(status: lastStatus)
    }

    private func reloadFailed(_ lines: [String]) {
        statistics.reloadFailures &+= 1
        for line in lines { logger.error("\(line)") }
        logger.error(
            "reload failed; the previous configuration stays in use",
            metadata: [
                "generation": "\(generation)", "problems": "\(lines.count)",
                MessageID.metadataKey: "\(MessageID.configRejected)",
            ])
        let first = lines.first ?? "unknown error"
        notifier.notify(["READY=1", "STATUS=reload failed: \(first)"])
        broadcastConfig("rejected", problems: lines.count)
    }

    /// A SIGHUP with no touchscreen in use also retries the devices libinput could not open (fault-cases.md D2).
    private func rescanIfNoTouchscreen() {
        guard router.touchscreens.isEmpty, let input else { return }
        logger.info("no touchscreen in use: rescanning the seat", metadata: ["seat": "\(configuration.seat)"])
        input.rescan()
        handle(input.dispatch())
        checkUnusableTouchscreens()
    }

    /// Compares udev's touchscreens with libinput's and says, once per device, which cannot be used and why
    /// (fault-cases.md D12); the systemd status lists them until they are unplugged.
    private func checkUnusableTouchscreens() {
        guard let input else { return }
        let current = input.unusableTouchscreens()
        guard current != unusable else { return }
        for device in current where !unusable.contains(device) {
            var metadata: Logger.Metadata = [
                "device.name": "\(device.name)", "device.sysname": "\(device.sysname)", "reason": "\(device.reason)",
                MessageID.metadataKey: "\(MessageID.deviceUnusable)",
            ]
            if let node = device.devnode { metadata["device.node"] = "\(node)" }
            logger.warning("touchscreen not usable: \(device.reason)", metadata: metadata)
        }
        for device in unusable where !current.contains(where: { $0.sysname == device.sysname }) {
            logger.info("unusable touchscreen gone", metadata: ["device.sysname": "\(device.sysname)"])
        }
        unusable = current
        touchscreensChanged = true
    }

    /// After a suspend (fault-cases.md P1): the contacts that were down end with touchCancel, and the router drops
    /// whatever else they send, lift included, so nothing clicks. Gestures and long presses they were part of are
    /// cancelled with them.
    private func resumed(afterSleeping asleep: UInt64) {
        let contacts = router.orphanActiveContacts()
        logger.info(
            "the system was suspended; contacts that were down are cancelled",
            metadata: ["suspended_ms": "\(asleep / 1000)", "contacts": "\(contacts.count)"])
        guard !contacts.isEmpty else { return }
        deliver(
            scene.handle(Frame(time: scene.now, samples: contacts.map { .cancelled($0) })), device: nil,
            fromInput: false)
    }

    private func cancelActiveContacts() {
        let contacts = router.activeContacts
        guard !contacts.isEmpty else { return }
        deliver(
            scene.handle(Frame(time: scene.now, samples: contacts.map { .cancelled($0) })), device: nil,
            fromInput: false)
    }

    private func shutdown() -> Int32 {
        notifier.stopping()
        logger.info("stopping", metadata: MessageID.shutdown.metadata)
        cancelActiveContacts()
        handOver()
        // Subscribers get a shutdown line first, so they know the connection's end is not a crash.
        control?.stop(flushTimeoutMicroseconds: 500_000)
        sockets.stop(flushTimeoutMicroseconds: 1_000_000)
        commands.stop(graceMicroseconds: Self.commandStopGrace)
        // From libinput's event timestamp to the executor (the contract's figure), and the in-process part of it.
        var latency = processing.summary.mapValues { Logger.MetadataValue.string($0) }
        for (key, value) in handling.summary where key != "samples" { latency["handling_\(key)"] = .string(value) }
        logger.info("processing latency", metadata: latency)
        logger.info(
            "touchd stopped",
            metadata: [
                "frames": "\(statistics.frames)", "actions": "\(statistics.actions)",
                "unhandled_actions": "\(statistics.unhandledActions)",
                "contacts_over_limit": "\(statistics.contactsOverLimit)",
                "reloads": "\(statistics.reloads)", "reload_failures": "\(statistics.reloadFailures)",
                "libinput_lost_event_warnings": "\(input?.lostEventWarnings ?? 0)",
            ])
        logCommandStatistics()
        return 0
    }

    /// At shutdown, children still running get SIGTERM on their process group, and SIGKILL after this long.
    static let commandStopGrace: UInt64 = 1_000_000

    /// One line per command target that was ever configured.
    private func logCommandStatistics() {
        let all = commands.statistics
        for name in all.keys.sorted() {
            let counts = all[name]!
            logger.info(
                "command target statistics",
                metadata: [
                    "target": "\(name)", "started": "\(counts.started)", "succeeded": "\(counts.succeeded)",
                    "failed": "\(counts.failed)", "timed_out": "\(counts.timedOut)",
                    "terminated": "\(counts.terminated)", "spawn_errors": "\(counts.spawnErrors)",
                    "dropped": "\(counts.dropped)",
                ])
        }
    }

    // MARK: - Status

    private var statusText: String {
        let screens = router.touchscreens
        let text: String
        switch screens.count {
        case 0: text = "waiting for a touchscreen"
        case 1: text = "1 touchscreen: \(screens[0].name)"
        default: text = "\(screens.count) touchscreens: \(screens.map(\.name).joined(separator: ", "))"
        }
        let unusableText =
            unusable.isEmpty
            ? "" : "; not usable: " + unusable.map { "\($0.name) (\($0.sysname))" }.joined(separator: ", ")
        return (controlProblem.map { "\(text); \($0)" } ?? text) + unusableText
    }

    private func updateStatusIfChanged() {
        touchscreensChanged = false
        let status = statusText
        guard status != lastStatus else { return }
        lastStatus = status
        notifier.status(status)
    }

    private func logWaiting() {
        logger.info("waiting for a touchscreen", metadata: ["seat": "\(configuration.seat)"])
    }

    static func metadata(of device: DeviceInfo) -> Logger.Metadata {
        var metadata: Logger.Metadata = [
            "device.name": "\(device.name)", "device.sysname": "\(device.sysname)",
            "device.vendor": "\(DeviceInfo.hex(device.vendor))", "device.product": "\(DeviceInfo.hex(device.product))",
        ]
        if let width = device.widthMillimetres, let height = device.heightMillimetres {
            metadata["device.size_mm"] = "\(Int(exactly: width.rounded()) ?? 0)x\(Int(exactly: height.rounded()) ?? 0)"
        }
        if let node = device.devnode { metadata["device.node"] = "\(node)" }
        if device.touchCount > 0 { metadata["device.contacts"] = "\(device.touchCount)" }
        return metadata
    }
}

extension UInt64 {
    /// `self − other`, or 0 when `other` is larger.
    func saturatingSubtract(_ other: UInt64) -> UInt64 { self >= other ? self - other : 0 }
}
