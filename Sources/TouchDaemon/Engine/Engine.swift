import Logging
import TouchModel

/// What the daemon must do, as a value: the engine decides, the loop around it does it.
enum Effect: Sendable {
    /// Filter mode: grab exactly these touchscreens and give each a twin; release every other grab and remove its
    /// twin (an empty list turns the filter off), with the axes each twin has (``TwinAxes``: a twin whose axes change
    /// is made anew). The loop answers with ``Engine/filterApplied(_:)``.
    case filterDevices([DeviceInfo], cancelWith: Configuration.Filter.CancelWith, axes: [Int: TwinAxes])
    /// Filter mode: one frame of what the application sees, for a touchscreen's twin.
    case forward(TwinFrame)
    /// Hand an action to its target's executor. `fromInput`: it was caused by an input event (so its time is a
    /// kernel timestamp and it counts in the processing-latency figures).
    case deliver(ActionDelivery, executor: ExecutorKind, fromInput: Bool)
    /// Send a response or an event to control-socket clients.
    case control(ControlMessage)
    /// Write a log line.
    case log(Logger.Level, String, Logger.Metadata)
    /// Tell systemd something (sd_notify).
    case notify(Notification)
    /// A reload was taken: hand over what is pending under the old targets, then configure the executors for these.
    /// Boxed: a configuration is larger than any other payload, and inline it made every effect as large.
    indirect case configureExecutors(Configuration)
    /// The scene's output as it came, for an observer (`touchd simulate` prints it); only when the engine was made
    /// with `observesOutput`. `time` is the input's or the deadline's time.
    case output(Output, at: Instant)
    /// An `[idle]` event and the actions it fired, for an observer (`touchd simulate` prints them); only when the
    /// engine was made with `observesOutput`. The deliveries themselves come as ``deliver(_:executor:fromInput:)``.
    case idle(IdleTransition)
    /// A touch-down that woke an idle kiosk (or came while that touch was down) and that nobody sees, for an observer
    /// (`touchd simulate` prints a `wake_touch` line); only when the engine was made with `observesOutput`.
    case wakeTouch(WakeTouch)
    /// A controller asked over the control socket for a reload: read the file and hand the outcome to
    /// ``Engine/reload(_:path:now:requesters:)`` with this requester, who gets the answer.
    case reloadConfiguration(requestedBy: ControlRequester)
    /// Explore by touch: a command for the speech server (Speech/SpeechCommand.swift), in order; `time` is the input's
    /// or the deadline's. `touchd run` hands it to the SSIP client, `touchd simulate` prints what is spoken.
    case speech(SpeechCommand, at: Instant)
    /// Explore by touch: speech mode started (`on`) or ended at `time`.
    case speechMode(on: Bool, at: Instant)

    enum Notification: Equatable, Sendable {
        /// `READY=1` with the status: after start and after a reload (taken or refused).
        case ready(status: String)
        /// The status alone.
        case status(String)
    }
}

/// A reload's reading of the file: a configuration to take, or the problem lines that refuse it (as `touchd check`
/// prints them, for control clients) and the same lines for the log, without the `error: ` the log's level already
/// says (nil: the same lines).
enum LoadOutcome: Sendable {
    case loaded(Configuration)
    case refused([String], logged: [String]? = nil)
}

/// The daemon's logic with no I/O: one value that takes what happens (decoded input events, deadlines reached, a
/// suspend noticed, control-socket requests, a new configuration) with the time it happened, and returns what to do
/// as ``Effect`` values, in order. It owns the scene, the router, reloads (hand-over included), the statistics, the
/// status text and the log policy for diagnostics. It holds no file descriptor, reads no clock and starts no thread:
/// `touchd run`'s input loop feeds it and performs its effects, and tests drive it directly.
struct Engine {
    /// Counters kept by the engine.
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
        /// Frames whose application part went to the twin before the engine handled them (``EdgeForecast``).
        var forwardedFirst = 0
        /// Forwarded-first changes the scene then did not make: never expected (the forecast is proven against the
        /// scene); each is logged as an error and its touch cancelled for the application.
        var forecastMisses = 0
    }

    private(set) var configuration: Configuration
    /// Changed only by the engine's own methods (this file and Engine+ControlSocket.swift).
    var scene: Scene
    private(set) var router: TouchRouter
    /// 1 at start, one more per reload taken.
    private(set) var generation = 1
    /// Changed only by the engine's own files (Engine/).
    var statistics = Statistics()
    /// The control socket's subscribers: weak targets in the scene.
    var subscriptions = ControlSubscriptions()
    /// When the scene next needs ``Scene/advance(to:)``, if ever.
    private(set) var sceneDeadline: Instant?
    /// `[idle]`'s clock (Engine+Idle.swift).
    var idleClock = IdleClock()
    /// The twin changes the edge wrote for the frame being handled, before the engine handled it (``EdgeForecast``):
    /// the scene makes them, and ``forward(_:into:)`` writes them no second time.
    var forwardedFirst: TwinFrame?
    /// Explore by touch: speech mode (Engine+Speech.swift).
    var speech = SpeechModeState()
    /// When the engine next needs ``advance(to:)``, if ever: the scene's deadline, idle's or speech mode's.
    var nextDeadline: Instant? {
        var deadline = sceneDeadline
        if let idle = idleClock.deadline { deadline = deadline.map { min($0, idle) } ?? idle }
        if speech.isOn || configuration.accessibility.enabled, let spoken = speechDeadline {
            deadline = deadline.map { min($0, spoken) } ?? spoken
        }
        return deadline
    }
    /// ``nextDeadline``, read in place by a caller that keeps the engine in a class (the daemon, before every wait).
    /// It changes nothing; it is `mutating` only so that the call works on the engine where it is: read through a
    /// non-mutating getter there, the compiler copies the whole engine (about a hundred references retained, then
    /// released) to call ``speechDeadline`` while `[accessibility]` is on.
    mutating func nextDeadlineInPlace() -> Instant? { nextDeadline }
    /// Whether debug lines (every control event and action) are wanted; building them costs time on every touch.
    let logsDebug: Bool
    /// Whether each output of the scene is also handed out as it is (``Effect/output(_:at:)``).
    let observesOutput: Bool
    /// Why there is no control socket, shown in the status; nil when there is one or it is turned off.
    let controlProblem: String?
    /// Touchscreens udev knows that libinput did not take (fault-cases.md D12), shown in the status.
    private(set) var unusable: [UnusableTouchscreen] = []
    private var diagnosticLimit = RateLimit()
    /// The status systemd was last told.
    private var lastStatus: String?
    /// Filter mode: which touchscreens are grabbed and twinned, and which twin each application touch is on.
    var filter = FilterState()
    /// While a reload or lost events cancel touchd's contacts: the application's copies of them are not ended but
    /// follow the real fingers (``followOrphan(_:to:device:into:)``).
    var appFollowsCancels = false
    /// Set when a device came, went or was left out, so the status is rebuilt only then, not on every touch.
    private var devicesChanged = false
    /// The router's notes of the event being handled, kept empty between calls: one array for every event.
    private var routerNotes: [TouchRouter.Note] = []
    /// The scene's output of the frame being handled, kept empty between frames: one output for every frame.
    private var sceneOutput = Output()

    /// Starts with a configuration and the scene made from it (the caller made it, to report a scene that cannot be
    /// built before anything starts).
    init(
        configuration: Configuration, scene: Scene, logsDebug: Bool = false, observesOutput: Bool = false,
        controlProblem: String? = nil
    ) {
        self.configuration = configuration
        self.scene = scene
        self.router = TouchRouter(
            output: configuration.output, allowList: configuration.devices,
            ignoresVirtual: configuration.ignoreVirtual)
        self.logsDebug = logsDebug
        self.observesOutput = observesOutput
        self.controlProblem = controlProblem
        self.scene.recordsEvents = readsRecords
    }

    /// Whether anything reads the scene's event records on every frame: the debug lines and an observer. A contact
    /// watcher reads them too, and turns them on for its frames (``handleWatched(_:device:fromInput:now:into:)``).
    /// Otherwise the scene only counts its events, for the statistics.
    /// With a start gesture for speech mode, the scene's gesture records say when it is recognized.
    var readsRecords: Bool { logsDebug || observesOutput || configuration.accessibility.startGesture != nil }

    // MARK: - Input

    /// Handles one dispatch's worth of decoded input events; `now` is the monotonic time (microseconds) they were
    /// read at, used for the router's own notes (a removed device's cancellations).
    mutating func handle(_ events: [InputEvent], now: UInt64, forwardedFirst: TwinFrame? = nil) -> [Effect] {
        var events = events
        var effects: [Effect] = []
        handle(taking: &events, now: now, into: &effects, forwardedFirst: forwardedFirst)
        return effects
    }

    /// ``handle(_:now:)`` taking the events out of `events`, which it leaves empty with its room kept, and appending
    /// to `effects`: the input loop's way, with one array of events and one of effects kept for every batch. Each
    /// event, each router note and each scene output is moved from one step to the next, never copied: a copy of one
    /// of these enums is a call to its copy witness, a switch over every case.
    ///
    /// `forwardedFirst`: the twin changes the edge already wrote for these events (``edgeForecast(for:)``), which the
    /// scene now makes.
    mutating func handle(
        taking events: inout [InputEvent], now: UInt64, into effects: inout [Effect], forwardedFirst: TwinFrame? = nil
    ) {
        if let forwardedFirst {
            statistics.forwardedFirst &+= 1
            self.forwardedFirst = forwardedFirst
        }
        defer { if self.forwardedFirst != nil { forecastMissed(into: &effects) } }
        // The router's notes go into one array kept between batches, taken out of the engine while it is read (the
        // loop below changes the engine).
        var notes = routerNotes
        routerNotes = []
        events.drainInOrder { event in
            router.handle(event, now: now, into: &notes)
            if case .eventsLost = event {
                // The router answers with the cancellations (fault-cases.md D5); say so before they go out.
                let cancelled = notes.reduce(0) { count, note in
                    if case .frame(let frame, _) = note { count + frame.samples.count } else { count }
                }
                effects.append(
                    .log(
                        .warning, "input events were lost (SYN_DROPPED); contacts that were down are cancelled",
                        ["contacts": "\(cancelled)"]))
            }
            // Lost events end touchd's contacts, not the application's: its copies follow the real fingers to
            // their real ends (Engine+Filter.swift, followOrphan).
            appFollowsCancels = { if case .eventsLost = event { true } else { false } }()
            notes.drainInOrder { note in handle(note, now: now, into: &effects) }
            appFollowsCancels = false
        }
        routerNotes = notes
        if devicesChanged {
            planFilter(into: &effects)
            statusIfChanged(into: &effects)
        }
    }

    /// One note of the router's, moved in.
    private mutating func handle(_ note: consuming TouchRouter.Note, now: UInt64, into effects: inout [Effect]) {
        switch consume note {
        case .frame(let frame, let device):
            statistics.frames &+= 1
            handleFrame(frame, device: device, fromInput: true, now: now, into: &effects)
        case .orphan(let contact, let location, let device):
            followOrphan(contact, to: location, device: device, into: &effects)
        case .accepted(let device):
            devicesChanged = true
            var metadata = Self.metadata(of: device).merging(MessageID.deviceAdded.metadata) { $1 }
            if let mapper = router.mapper(for: device.id) {
                metadata.merge(Self.matrixMetadata(device, mapper)) { $1 }
            }
            effects.append(.log(.info, "touchscreen added", metadata))
            broadcastDevice("added", device, into: &effects)
        case .ignored(let device, let reason):
            var metadata = Self.metadata(of: device)
            metadata["reason"] = "\(reason)"
            metadata[MessageID.metadataKey] = "\(MessageID.deviceIgnored)"
            effects.append(.log(.info, "input device ignored", metadata))
            broadcastDevice("ignored", device, reason: "\(reason)", into: &effects)
        case .removed(let device, let wasUsed):
            devicesChanged = true
            guard wasUsed else {
                if logsDebug { effects.append(.log(.debug, "input device removed", Self.metadata(of: device))) }
                return
            }
            effects.append(
                .log(
                    .info, "touchscreen removed",
                    Self.metadata(of: device).merging(MessageID.deviceRemoved.metadata) { $1 }))
            broadcastDevice("removed", device, into: &effects)
            if router.touchscreens.isEmpty { effects.append(waitingLine) }
        }
    }

    /// A frame already in output pixels, from no device: a touch script's (`touchd simulate`), which is written
    /// after the mapping that the router does for live input and recordings.
    mutating func handle(frame: Frame) -> [Effect] {
        var effects: [Effect] = []
        statistics.frames &+= 1
        handleFrame(frame, device: nil, fromInput: true, now: frame.time.microseconds, into: &effects)
        return effects
    }

    /// Every frame goes to the scene here: around it, `[idle]`'s clock (a touch-down wakes, a last lift starts it) and,
    /// only while a controller watches live contacts, the monitor's lines (Engine+Monitor.swift). The wake touch's
    /// samples are taken out first, and a frame that held nothing else does not reach the scene (Engine+Idle.swift).
    private mutating func handleFrame(
        _ frame: consuming Frame, device: String?, fromInput: Bool, now: UInt64, into effects: inout [Effect]
    ) {
        let hadSamples = !frame.samples.isEmpty
        idleBeforeFrame(&frame, fromInput: fromInput, now: now, into: &effects)
        // Speech mode keeps the touches from the scene (and the application) and explores with them instead.
        if speechIntercepts { speechBeforeFrame(&frame, into: &effects) }
        if hadSamples && frame.samples.isEmpty {
            idleAfterFrame(at: frame.time)
            return
        }
        if subscriptions.watchesContacts {
            handleWatched(frame, device: device, fromInput: fromInput, now: now, into: &effects)
        } else {
            // Into the one output kept for every frame, taken out of the engine while `deliver` changes the engine.
            var output = sceneOutput
            sceneOutput = Output()
            scene.handle(frame, into: &output)
            deliver(taking: &output, at: frame.time, device: device, fromInput: fromInput, now: now, into: &effects)
            sceneOutput = output  // emptied by the scene when it writes the next frame into it
        }
        speechAfterScene(at: frame.time, into: &effects)
        idleAfterFrame(at: frame.time)
    }

    /// Fires what fell due by `now` (long presses, repeat windows, gesture timeouts, idle); nothing when nothing is
    /// due.
    mutating func advance(to now: UInt64) -> [Effect] {
        guard let deadline = nextDeadline, now >= deadline.microseconds else { return [] }
        var effects: [Effect] = []
        let time = Instant(microseconds: now)
        if let due = sceneDeadline, now >= due.microseconds {
            deliver(scene.advance(to: time), at: time, device: nil, fromInput: false, now: now, into: &effects)
            speechAfterScene(at: time, into: &effects)
        }
        fireIdleIfDue(at: time, now: now, into: &effects)
        advanceSpeech(to: time, into: &effects)
        return effects
    }

    /// After a suspend (fault-cases.md P1): the contacts that were down end with touchCancel, and the router drops
    /// whatever else they send, lift included, so nothing clicks. Gestures and long presses they were part of are
    /// cancelled with them.
    mutating func resumed(afterSleeping asleep: UInt64, now: UInt64) -> [Effect] {
        let contacts = router.orphanActiveContacts()
        var effects: [Effect] = [
            .log(
                .info, "the system was suspended; contacts that were down are cancelled",
                ["suspended_ms": "\(asleep / 1000)", "contacts": "\(contacts.count)"])
        ]
        cancel(contacts, now: now, into: &effects)
        return effects
    }

    /// Takes the touchscreens udev knows that libinput did not take as one: says once per device which cannot be
    /// used and why (fault-cases.md D12); the status lists them until they are unplugged.
    mutating func unusableTouchscreens(_ current: [UnusableTouchscreen]) -> [Effect] {
        guard current != unusable else { return [] }
        var effects: [Effect] = []
        for device in current where !unusable.contains(device) {
            var metadata: Logger.Metadata = [
                "device.name": "\(device.name)", "device.sysname": "\(device.sysname)", "reason": "\(device.reason)",
                MessageID.metadataKey: "\(MessageID.deviceUnusable)",
            ]
            if let node = device.devnode { metadata["device.node"] = "\(node)" }
            effects.append(.log(.warning, "touchscreen not usable: \(device.reason)", metadata))
        }
        for device in unusable where !current.contains(where: { $0.sysname == device.sysname }) {
            effects.append(.log(.info, "unusable touchscreen gone", ["device.sysname": "\(device.sysname)"]))
        }
        unusable = current
        statusIfChanged(into: &effects)
        return effects
    }

    // MARK: - Start, reload, stop

    /// The first status, for `READY=1`: call once, after the devices present at start were handled. `now` starts
    /// `[idle]`'s clock: start-up counts as a lift.
    mutating func started(now: UInt64 = 0) -> [Effect] {
        var effects: [Effect] = []
        armIdle(at: Instant(microseconds: now))
        if router.touchscreens.isEmpty { effects.append(waitingLine) }
        lastStatus = status
        effects.append(.notify(.ready(status: status)))
        effects.append(.log(.info, "ready", ["status": "\(status)", MessageID.metadataKey: "\(MessageID.ready)"]))
        return effects
    }

    /// A reload's outcome: the loaded configuration, or the problem lines that refused it. A configuration is taken
    /// only if its scene can be built; then the contacts that are down end in the old layout (touchCancel, their
    /// actions under the old targets) and the router ignores them until they lift, so the new layout never sees a
    /// touch that began nowhere.
    ///
    /// `requesters` are the control-socket clients that asked for this reload (`touchd ctl reload`): each gets the new
    /// generation, or every problem.
    mutating func reload(
        _ loaded: LoadOutcome, path: String, now: UInt64, requesters: [ControlRequester] = []
    ) -> [Effect] {
        let configuration: Configuration
        var newScene: Scene
        var carriedNotes: [Effect] = []
        switch loaded {
        case .refused(let lines, let logged):
            return reloadFailed(lines, logged: logged ?? lines, requesters: requesters)
        case .loaded(let candidate):
            do {
                // The carried state changes only enabled, selected and values clamped into range, so the scene
                // builds exactly when the file as written would: a file that cannot work is still refused.
                let carried = carryingState(into: candidate)
                newScene = try carried.configuration.makeScene()
                configuration = carried.configuration
                carriedNotes = carried.notes
            } catch {
                return reloadFailed(
                    error.problems.map { "\(path): error: \($0)" }, logged: error.problems.map { "\(path): \($0)" },
                    requesters: requesters)
            }
            carriedNotes += carryScreen(into: &newScene)
        }
        var effects: [Effect] = []
        // A reload ends touchd's contacts in the old layout; the application's copies go on to their real ends while
        // filter mode stays on (turned off, the twins go away and the application reads the panel again).
        appFollowsCancels = configuration.filter.enabled
        cancel(router.activeContacts, now: now, into: &effects)
        appFollowsCancels = false
        let previousControl = self.configuration.controlSocket
        self.configuration = configuration
        // The wake touch counts from the last lift, not from the reload.
        newScene.appIdleSince = scene.appIdleSince
        newScene.recordsEvents = readsRecords
        scene = newScene
        sceneDeadline = nil
        generation += 1
        // Every contact was just cancelled: that counts as a lift (an idle kiosk stays idle until a touch wakes it).
        reloadIdle(at: scene.now)
        // Subscribers are weak targets of the old scene: they follow the new one.
        subscriptions.reinstall(in: &scene, configuration: configuration)
        statistics.reloads &+= 1
        let notes = router.reconfigure(
            output: configuration.output, allowList: configuration.devices,
            ignoresVirtual: configuration.ignoreVirtual)
        // Commands that are running go on running (fault-cases.md C18); only what comes next uses the new targets.
        effects.append(.configureExecutors(configuration))
        for note in notes {
            switch note {
            case .accepted(let device): effects.append(.log(.info, "touchscreen now used", Self.metadata(of: device)))
            case .ignored(let device, let reason):
                var metadata = Self.metadata(of: device)
                metadata["reason"] = "\(reason)"
                effects.append(.log(.info, "touchscreen no longer used", metadata))
            case .frame, .removed, .orphan: break
            }
        }
        effects += carriedNotes
        effects.append(
            .log(
                .info, "configuration reloaded",
                [
                    "generation": "\(generation)", "controls": "\(configuration.controls.count)",
                    MessageID.metadataKey: "\(MessageID.configLoaded)",
                ]))
        if configuration.controlSocket != previousControl {
            effects.append(
                .log(
                    .warning, "the [control_socket] settings changed; they apply at the next start",
                    ["config": "\(path)"]))
        }
        speechReloaded(at: scene.now, into: &effects)
        broadcastConfig("reloaded", into: &effects)
        answerReload(requesters, into: &effects)
        lastStatus = status
        effects.append(.notify(.ready(status: status)))
        // After READY=1: the loop grabs at once, and the status that follows says how it went.
        planFilter(retry: true, into: &effects)
        return effects
    }

    private mutating func reloadFailed(
        _ lines: [String], logged: [String], requesters: [ControlRequester]
    ) -> [Effect] {
        statistics.reloadFailures &+= 1
        var effects: [Effect] = logged.map { .log(.error, $0, [:]) }
        effects.append(
            .log(
                .error, "reload failed; the previous configuration stays in use",
                [
                    "generation": "\(generation)", "problems": "\(lines.count)",
                    MessageID.metadataKey: "\(MessageID.configRejected)",
                ]))
        effects.append(.notify(.ready(status: "reload failed: \(lines.first ?? "unknown error")")))
        broadcastConfig("rejected", problems: lines.count, into: &effects)
        refuseReload(lines, requesters: requesters, into: &effects)
        return effects
    }

    /// At stop: the contacts that are down end with touchCancel, their actions still delivered.
    mutating func stopping(now: UInt64) -> [Effect] {
        var effects: [Effect] = []
        cancel(router.activeContacts, now: now, into: &effects)
        return effects
    }

    // MARK: - Status

    /// The systemd status: the touchscreens in use (or that none is), the control socket's problem, the unusable
    /// touchscreens.
    var status: String {
        let screens = router.touchscreens
        var text: String
        switch screens.count {
        case 0: text = "waiting for a touchscreen"
        case 1: text = "1 touchscreen: \(screens[0].name)"
        default: text = "\(screens.count) touchscreens: \(screens.map(\.name).joined(separator: ", "))"
        }
        if let controlProblem { text += "; \(controlProblem)" }
        if let filterStatus { text += "; \(filterStatus)" }
        if !unusable.isEmpty {
            text += "; not usable: " + unusable.map { "\($0.name) (\($0.sysname))" }.joined(separator: ", ")
        }
        return text
    }

    /// Tells systemd the status when it changed since it was last told (devices come and go).
    mutating func statusIfChanged(into effects: inout [Effect]) {
        devicesChanged = false
        guard let last = lastStatus else { return }  // not started yet: READY=1 carries the first status
        let current = status
        guard current != last else { return }
        lastStatus = current
        effects.append(.notify(.status(current)))
    }

    private var waitingLine: Effect {
        .log(.info, "waiting for a touchscreen", ["seat": "\(configuration.seat)"])
    }

    // MARK: - Delivering the scene's output

    /// Cancels `contacts` in the scene (and delivers what that causes).
    private mutating func cancel(_ contacts: [ContactID], now: UInt64, into effects: inout [Effect]) {
        guard !contacts.isEmpty else { return }
        handleFrame(
            Frame(time: scene.now, samples: contacts.map { .cancelled($0) }), device: nil, fromInput: false, now: now,
            into: &effects)
    }

    /// Turns the scene's output into effects: deliveries for the configured targets, events for subscribers, debug
    /// lines, and diagnostics at their level (rate-limited above debug).
    mutating func deliver(
        _ output: consuming Output, at time: Instant, device: String?, fromInput: Bool, now: UInt64,
        into effects: inout [Effect]
    ) {
        deliver(taking: &output, at: time, device: device, fromInput: fromInput, now: now, into: &effects)
    }

    /// ``deliver(_:at:device:fromInput:now:into:)`` taking the entries out of `output` (moved, not copied),
    /// which keeps its room for the next frame.
    mutating func deliver(
        taking output: inout Output, at time: Instant, device: String?, fromInput: Bool, now: UInt64,
        into effects: inout [Effect]
    ) {
        sceneDeadline = output.nextDeadline
        statistics.controlEvents &+= output.controlEventCount
        statistics.gestureEvents &+= output.gestureEventCount
        if observesOutput { effects.append(.output(output, at: time)) }
        var appRecords: [AppTouchRecord] = []
        defer { forward(appRecords, into: &effects) }
        output.entries.drainInOrder { entry in
            deliver(entry, device: device, fromInput: fromInput, appRecords: &appRecords, into: &effects)
        }
        for diagnostic in output.diagnostics { report(diagnostic, now: now, into: &effects) }
    }

    /// One entry of the scene's output, moved in: a method rather than the body of the drain's closure, because only
    /// a method's parameter can be matched by `switch consume`, which moves the payload out instead of copying it.
    private mutating func deliver(
        _ entry: consuming Output.Entry, device: String?, fromInput: Bool, appRecords: inout [AppTouchRecord],
        into effects: inout [Effect]
    ) {
        switch consume entry {
        case .event(let record):
            guard logsDebug else { return }
            effects.append(
                .log(
                    .debug, "control event",
                    [
                        "control.id": "\(record.control)", "event": "\(configuration.name(of: record.event))",
                        "contact": "\(record.contact.map { "\($0)" } ?? "-")", "state": "\(record.state)",
                    ]))
        case .gesture(let record):
            if configuration.accessibility.startGesture != nil { noteGesture(record) }
            guard logsDebug else { return }
            effects.append(
                .log(
                    .debug, "gesture event",
                    [
                        "gesture.id": "\(record.gesture)", "event": "\(record.event)",
                        "state": "\(record.state.rawValue)",
                        "contacts": "\(record.contacts.map(String.init).joined(separator: ","))",
                    ]))
        case .app(let record):
            appRecords.append(record)
        case .action(let action):
            // Only a subscriber's scene target stands for a connection: with none, every action is a delivery.
            if !subscriptions.subscriptions.isEmpty,
                let event = ControlSubscriptions.event(
                    for: action, configuration: configuration, device: device, generation: generation)
            {
                effects.append(.control(.event(event)))
                return
            }
            statistics.actions &+= 1
            dispatch(action, device: device, fromInput: fromInput, into: &effects)
        }
    }

    private mutating func dispatch(
        _ action: ResolvedAction, device: String?, fromInput: Bool, into effects: inout [Effect]
    ) {
        let event = action.gestureEvent.map(\.description) ?? configuration.name(of: action.event)
        guard let targetName = action.target,
            let definition = configuration.targets.first(where: { $0.name == targetName })
        else {
            statistics.unhandledActions &+= 1
            if logsDebug {
                effects.append(
                    .log(
                        .debug, "action not handled by any responder",
                        ["action": "\(action.action)", "control.id": "\(action.control)", "event": "\(event)"]))
            }
            return
        }
        effects.append(
            .deliver(
                ActionDelivery(
                    action: action.action, target: targetName, control: action.control, event: event,
                    timeMicroseconds: action.time.microseconds, contact: action.contact, x: action.location?.x,
                    y: action.location?.y, value: action.value, responder: action.responder?.id,
                    gesture: action.gestureEvent == nil ? nil : action.control, device: device,
                    generation: generation),
                executor: definition.kind.executor, fromInput: fromInput))
        if logsDebug {
            effects.append(
                .log(.debug, "action", ["action": "\(action.action)", "target": "\(targetName)", "event": "\(event)"]))
        }
    }

    private mutating func report(_ diagnostic: Diagnostic, now: UInt64, into effects: inout [Effect]) {
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
            if logsDebug { effects.append(.log(.debug, "\(diagnostic)", [:])) }
            return
        }
        switch diagnosticLimit.check(now: now) {
        case .suppress: return
        case .pass(let suppressed):
            var metadata: Logger.Metadata = [:]
            if suppressed > 0 { metadata["suppressed"] = "\(suppressed)" }
            effects.append(.log(level, "\(diagnostic)", metadata))
        }
    }

    /// Which matrices turn this device's positions into output pixels: libinput's own (udev), touchd's (calibration
    /// then rotation) and the two combined, the one in effect (docs/configuration.md, "Rotation and calibration").
    static func matrixMetadata(_ device: DeviceInfo, _ mapper: CoordinateMapper) -> Logger.Metadata {
        let libinput = device.libinputCalibration ?? CoordinateMapper.identity
        return [
            "device.libinput_matrix": "\(CoordinateMapper.describe(libinput))",
            "device.touchd_matrix": "\(CoordinateMapper.describe(mapper.matrix))",
            "device.rotation": "\(mapper.rotation.rawValue)",
            "device.matrix": "\(CoordinateMapper.describe(CoordinateMapper.compose(mapper.matrix, after: libinput)))",
        ]
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
        // A uinput device under a panel's name and ids is a clone of it (docs/security.md): say what it is.
        if device.isVirtual { metadata["device.virtual"] = "true" }
        if device.touchCount > 0 { metadata["device.contacts"] = "\(device.touchCount)" }
        return metadata
    }
}
