import Logging
import TouchModel

/// Explore by touch's bookkeeping in the engine (docs/accessibility.md): whether speech mode is on, the model that
/// reads the customer's touches (``ExploreByTouch``), the items of the screen, and which contacts are kept from the
/// scene.
struct SpeechModeState: Sendable {
    /// The contact number of a synthesized activation tap: beyond any seat slot and any touch script's contact.
    static let activationContact: ContactID = TouchScript.maximumContact + 1

    var isOn = false
    /// Whether the speech server can speak (``Engine/speechAvailability(_:now:)``): speech mode starts only then.
    var isAvailable = false
    /// Whether the server tells when an utterance ends (``Engine/speechEnded(mark:now:)``): hints then follow the
    /// end of their announcement; without (a dry run), its start.
    var endsReported = false
    /// The announcement whose end the focused item's hint waits for: its mark and its item.
    var awaitedEnd: (mark: UInt64, item: Int)?
    /// The last mark given to an utterance.
    var lastEndMark: UInt64 = 0
    /// Plugging headphones in started the mode: unplugging them ends it.
    var startedByHeadphones = false
    /// While on: the model, and the active screen's items in reading order (the model's items, index for index).
    var explorer: ExploreByTouch?
    var items: [SpeechItem] = []
    /// While on: a scene holding only the start gesture, which sees the exploring touches so that the gesture can
    /// end the mode (the app's scene does not see them).
    var detector: Scene?
    /// The main scene recognized the start gesture in the output being delivered.
    var startRecognized = false
    /// Contacts handed to the model, until they lift.
    var exploring: Set<ContactID> = []
    /// Contacts kept from the scene until they lift: down when the mode started (the scene cancelled them) or when it
    /// ended (they began as exploring touches).
    var swallowed: Set<ContactID> = []
    /// Contacts that began in a passthrough region: the scene has them as usual.
    var passthrough: Set<ContactID> = []
    /// A two-finger tap paused speech; the next resumes it.
    var isPaused = false
    /// The last announcement, said again when speech resumes (the touch that paused it cancelled it).
    var lastUtterance: Utterance?
    /// When the last touch happened, for `exit_after_idle_s`.
    var lastActivity = Instant.zero
    /// The touchscreen and slot of the last exploring touch: the twin that a synthesized tap goes to.
    var lastOrigin: (device: Int, slot: Int)?
    var sessions = 0
    var activations = 0
    var failures = 0

    /// When the mode ends for want of touches, if it is on and nothing is down.
    func idleDeadline(after timeout: UInt64) -> Instant? {
        guard isOn, timeout > 0, exploring.isEmpty, swallowed.isEmpty, passthrough.isEmpty else { return nil }
        return lastActivity.advanced(by: timeout)
    }
}

/// Why speech mode starts or ends, for the log and the control socket.
enum SpeechModeReason: String, Sendable {
    case gesture = "the start gesture"
    case controlSocket = "the control socket"
    case headphones = "headphones plugged in or out"
    case idle = "no touch for exit_after_idle_s"
    case unavailable = "the speech server cannot speak"
    case reload = "the reload turned [accessibility] off"
}

extension Engine {
    /// The text of a speech-mode state line: `on`, `off`.
    var speechModeName: String { speech.isOn ? "on" : "off" }

    /// When speech mode next needs ``advance(to:)``: the model's repeat or hint, the start gesture's detector, idle.
    var speechDeadline: Instant? {
        // No array: this runs before every wait of the input loop while [accessibility] is on.
        func earlier(_ first: Instant?, _ second: Instant?) -> Instant? {
            guard let first else { return second }
            guard let second else { return first }
            return min(first, second)
        }
        return earlier(
            earlier(speech.explorer?.nextDeadline, speech.detector?.nextDeadline),
            speech.idleDeadline(after: configuration.accessibility.exitAfterIdle))
    }

    /// Whether the speech hooks around each frame have anything to do.
    var speechIntercepts: Bool {
        speech.isOn || !speech.swallowed.isEmpty || !speech.passthrough.isEmpty
    }

    // MARK: - Inputs

    /// The speech server can speak (connected) or cannot (absent, gone, failing): rule 3. Speech mode ends when it
    /// cannot, and touches flow to the application as usual.
    mutating func speechAvailability(_ available: Bool, reportsEnds: Bool = false, now: UInt64) -> [Effect] {
        speech.endsReported = available && reportsEnds
        guard available != speech.isAvailable else { return [] }
        speech.isAvailable = available
        var effects: [Effect] = []
        let time = Instant(microseconds: now)
        if available {
            if configuration.accessibility.enabled {
                effects.append(.log(.info, "the speech server can speak: speech mode can start", [:]))
            }
        } else {
            if configuration.accessibility.enabled {
                speech.failures &+= 1
                effects.append(
                    .log(
                        .warning,
                        speech.isOn
                            ? "speech mode ended: the speech server cannot speak; touches reach the application again"
                            : "the speech server cannot speak: speech mode cannot start",
                        MessageID.speechUnavailable.metadata))
            }
            if speech.isOn { leaveSpeechMode(at: time, reason: .unavailable, into: &effects) }
        }
        return effects
    }

    /// The speech server finished speaking the utterance with `mark` (its `702 END`), at `now`: when that was the
    /// focused item's announcement, its hint is due ``Configuration/Accessibility/hintDelay`` later (rule 7:
    /// TalkBack's 400 ms after the announcement ends). Any other end changes nothing: one for an announcement a
    /// touch has since replaced, or that came after the focus moved.
    mutating func speechEnded(mark: UInt64, now: UInt64) -> [Effect] {
        guard speech.isOn, let awaited = speech.awaitedEnd, awaited.mark == mark, var explorer = speech.explorer
        else { return [] }
        speech.awaitedEnd = nil
        explorer.announcementEnded(awaited.item, at: Instant(microseconds: now))
        speech.explorer = explorer
        return []
    }

    /// The headphone jack changed (an input switch's `SW_HEADPHONE_INSERT`, read at the edge): with
    /// `[accessibility] start_on_headphones`, plugging in enters speech mode (rule 1) and unplugging leaves it when
    /// the plug started it. Without a server that can speak, the mode does not start and the log says why (rule 3).
    mutating func headphonesChanged(inserted: Bool, now: UInt64) -> [Effect] {
        var effects: [Effect] = []
        let time = Instant(microseconds: now)
        guard configuration.accessibility.enabled, configuration.accessibility.startOnHeadphones else { return [] }
        if inserted {
            guard !speech.isOn else { return [] }
            guard speech.isAvailable else {
                speech.failures &+= 1
                effects.append(
                    .log(
                        .warning, "speech mode not started: the speech server cannot speak; touches flow as usual",
                        MessageID.speechUnavailable.metadata.merging(["requested_by": "headphones"]) { $1 }))
                return effects
            }
            enterSpeechMode(at: time, reason: .headphones, into: &effects)
            speech.startedByHeadphones = true
        } else if speech.isOn, speech.startedByHeadphones {
            leaveSpeechMode(at: time, reason: .headphones, into: &effects)
        }
        return effects
    }

    /// Enters or leaves speech mode at a controller's request (the control socket): whether it is on afterwards, or
    /// nil with the reason it could not start.
    mutating func requestSpeechMode(_ on: Bool, at time: Instant, into effects: inout [Effect]) -> String? {
        guard on != speech.isOn else { return nil }
        if on {
            guard configuration.accessibility.enabled else { return "[accessibility] is not enabled" }
            guard speech.isAvailable else {
                speech.failures &+= 1
                effects.append(
                    .log(
                        .warning, "speech mode not started: the speech server cannot speak; touches flow as usual",
                        MessageID.speechUnavailable.metadata.merging(["requested_by": "control socket"]) { $1 }))
                return "the speech server cannot speak"
            }
            enterSpeechMode(at: time, reason: .controlSocket, into: &effects)
        } else {
            leaveSpeechMode(at: time, reason: .controlSocket, into: &effects)
        }
        return nil
    }

    // MARK: - Around each frame

    /// Before the scene: in speech mode, takes out of `frame` every sample the application must not see (rule 4) and
    /// hands it to the model; contacts that began in a passthrough region stay, and contacts kept from the scene
    /// (``SpeechModeState/swallowed``) go nowhere until they lift.
    mutating func speechBeforeFrame(_ frame: inout Frame, into effects: inout [Effect]) {
        // Any touch counts as activity for exit_after_idle_s, a passthrough region's too.
        if speech.isOn && !frame.samples.isEmpty { speech.lastActivity = frame.time }
        var explored: [ContactSample] = []
        var index = 0
        while index < frame.samples.count {
            let sample = frame.samples[index]
            let contact = sample.contact
            let ends = sample.phase == .ended || sample.phase == .cancelled
            var keep: Bool
            if sample.phase == .began {
                speech.swallowed.remove(contact)
                speech.passthrough.remove(contact)
                if speech.isOn {
                    if let location = sample.location,
                        configuration.accessibility.passthrough.contains(where: { $0.contains(location) })
                    {
                        speech.passthrough.insert(contact)
                        keep = true
                    } else {
                        speech.exploring.insert(contact)
                        if let origin = router.origin(of: contact) { speech.lastOrigin = origin }
                        explored.append(sample)
                        keep = false
                    }
                } else {
                    keep = true
                }
            } else if speech.passthrough.contains(contact) {
                if ends { speech.passthrough.remove(contact) }
                keep = true
            } else if speech.swallowed.contains(contact) {
                if ends { speech.swallowed.remove(contact) }
                keep = false
            } else if speech.exploring.contains(contact) {
                if ends { speech.exploring.remove(contact) }
                explored.append(sample)
                keep = false
            } else {
                keep = true
            }
            if keep {
                index += 1
            } else {
                frame.samples.remove(at: index)
            }
        }
        guard speech.isOn, !explored.isEmpty else { return }
        let touches = Frame(time: frame.time, samples: explored)
        // The start gesture first: recognized again, it ends the mode, and its touches mean nothing else.
        if var detector = speech.detector {
            let output = detector.handle(touches)
            speech.detector = detector
            if recognizesStart(output) {
                leaveSpeechMode(at: frame.time, reason: .gesture, into: &effects)
                return
            }
        }
        guard var explorer = speech.explorer else { return }
        var events: [ExploreByTouch.Event] = []
        explorer.handle(touches, into: &events)
        speech.explorer = explorer
        perform(events, at: frame.time, into: &effects)
    }

    /// After the scene: when it recognized the start gesture, speech mode starts (rule 1), or is refused with its
    /// reason when the server cannot speak (rule 3).
    mutating func speechAfterScene(at time: Instant, into effects: inout [Effect]) {
        guard speech.startRecognized else { return }
        speech.startRecognized = false
        guard configuration.accessibility.enabled, !speech.isOn else { return }
        guard speech.isAvailable else {
            speech.failures &+= 1
            effects.append(
                .log(
                    .warning,
                    "speech mode not started: the speech server cannot speak; touches reach the application as usual",
                    MessageID.speechUnavailable.metadata.merging(
                        ["gesture.id": "\(configuration.accessibility.startGesture ?? "")"]) { $1 }))
            return
        }
        enterSpeechMode(at: time, reason: .gesture, into: &effects)
    }

    /// A gesture record of the main scene: notes the start gesture's recognition (acted on after the output, in
    /// ``speechAfterScene(at:into:)``).
    mutating func noteGesture(_ record: GestureEventRecord) {
        if record.event.contains(.recognized), record.gesture == configuration.accessibility.startGesture {
            speech.startRecognized = true
        }
    }

    /// What fell due by `time`: the model's repeat and hint, the start gesture held long enough, idle's end.
    mutating func advanceSpeech(to time: Instant, into effects: inout [Effect]) {
        guard speech.isOn else { return }
        if var detector = speech.detector, let due = detector.nextDeadline, due <= time {
            let output = detector.advance(to: time)
            speech.detector = detector
            if recognizesStart(output) { return leaveSpeechMode(at: time, reason: .gesture, into: &effects) }
        }
        if let due = speech.idleDeadline(after: configuration.accessibility.exitAfterIdle), due <= time {
            return leaveSpeechMode(at: time, reason: .idle, into: &effects)
        }
        if var explorer = speech.explorer, let due = explorer.nextDeadline, due <= time {
            var events: [ExploreByTouch.Event] = []
            explorer.advance(to: time, into: &events)
            speech.explorer = explorer
            perform(events, at: time, into: &effects)
        }
    }

    /// The screen changed (rule 14): its title, then its first item, which takes the focus.
    mutating func speechScreenChanged(at time: Instant, into effects: inout [Effect]) {
        guard speech.isOn, var explorer = speech.explorer else { return }
        if let screen = scene.activeScreen, var detector = speech.detector {
            _ = detector.activateScreen(screen, at: time)
            speech.detector = detector
        }
        speech.items = configuration.speechItems(onScreen: scene.activeScreen)
        explorer.replaceItems(exploreItems(speech.items), focus: nil)
        let first = explorer.moveFocus(to: 0, at: time)
        speech.explorer = explorer
        var parts: [String] = []
        if let title = screenSpeech?.title { parts.append(title) }
        var focused: Int?
        if case .focus(let item) = first {
            parts.append(describe(item))
            focused = item
        }
        guard !parts.isEmpty else { return }
        say(parts.joined(separator: ". "), .text, at: time, endOf: focused, into: &effects)
    }

    /// A reload was taken: speech mode goes on with the new items (the focus is lost), or ends when the new file
    /// turned it off.
    mutating func speechReloaded(at time: Instant, into effects: inout [Effect]) {
        guard speech.isOn else { return }
        guard configuration.accessibility.enabled else {
            return leaveSpeechMode(at: time, reason: .reload, into: &effects)
        }
        speech.items = configuration.speechItems(onScreen: scene.activeScreen)
        speech.explorer = ExploreByTouch(items: exploreItems(speech.items), settings: exploreSettings)
        speech.detector = makeDetector()
        // The model's fingers are gone with it: what is down stays away from the application until it lifts.
        speech.swallowed.formUnion(speech.exploring)
        speech.exploring.removeAll()
    }

    // MARK: - Entering and leaving

    private mutating func enterSpeechMode(at time: Instant, reason: SpeechModeReason, into effects: inout [Effect]) {
        speech.isOn = true
        speech.startedByHeadphones = false
        speech.sessions &+= 1
        speech.isPaused = false
        speech.lastActivity = time
        // What is down now began for the application: it ends for it (its copies are cancelled) and stays away from
        // the scene until it lifts.
        let down = scene.contactIDs
        if !down.isEmpty {
            deliver(
                scene.handle(Frame(time: time, samples: down.map { .cancelled($0) })), at: time, device: nil,
                fromInput: false, now: time.microseconds, into: &effects)
            speech.swallowed.formUnion(down)
        }
        speech.items = configuration.speechItems(onScreen: scene.activeScreen)
        speech.explorer = ExploreByTouch(items: exploreItems(speech.items), settings: exploreSettings)
        speech.detector = makeDetector()
        effects.append(
            .log(
                .info, "speech mode started",
                MessageID.speechMode.metadata.merging(
                    ["reason": "\(reason.rawValue)", "items": "\(speech.items.count)"]) { $1 }))
        effects.append(.speechMode(on: true, at: time))
        broadcastSpeech(into: &effects)
        effects.append(.speech(.cancel, at: time))
        say(configuration.accessibility.introduction, .important, at: time, into: &effects)
    }

    private mutating func leaveSpeechMode(at time: Instant, reason: SpeechModeReason, into effects: inout [Effect]) {
        guard speech.isOn else { return }
        let wasPaused = speech.isPaused
        speech.isOn = false
        speech.explorer = nil
        speech.detector = nil
        speech.items = []
        speech.isPaused = false
        speech.lastUtterance = nil
        speech.swallowed.formUnion(speech.exploring)
        speech.exploring.removeAll()
        effects.append(
            .log(
                .info, "speech mode ended",
                MessageID.speechMode.metadata.merging(["reason": "\(reason.rawValue)"]) { $1 }
            ))
        if reason != .unavailable {
            effects.append(.speech(.cancel, at: time))
            if wasPaused { effects.append(.speech(.resume, at: time)) }
            effects.append(
                .speech(
                    .speak(
                        Utterance(
                            text: configuration.accessibility.farewell, priority: .important,
                            language: language)), at: time))
        }
        effects.append(.speechMode(on: false, at: time))
        broadcastSpeech(into: &effects)
    }

    /// A scene that holds only the start gesture (with the control or groups that give its region, and no actions):
    /// it sees the exploring touches, so the gesture can end the mode.
    private func makeDetector() -> Scene? {
        guard let id = configuration.accessibility.startGesture,
            var gesture = configuration.gestures.first(where: { $0.id == id })
        else { return nil }
        gesture.actions = []
        gesture.simultaneousWith = []
        gesture.requiresFailureOf = []
        let controls = configuration.controls.filter { $0.id == gesture.control }.map { control in
            var silent = control
            silent.actions = TargetActionTable()
            silent.target = nil
            return silent
        }
        let groups = configuration.groups.map { group in
            var plain = group
            plain.target = nil
            return plain
        }
        let screens = configuration.screens.map { Screen(id: $0.id, groups: $0.groups) }
        var detector = try? Scene(
            controls: controls, gestures: [gesture.recognizer], groups: groups, screens: screens,
            activeScreen: scene.activeScreen,
            settings: Scene.Settings(maximumContacts: configuration.tracking.maximumContacts, stuckContactTimeout: 0))
        detector?.recordsEvents = true
        return detector
    }

    private func recognizesStart(_ output: Output) -> Bool {
        output.entries.contains { entry in
            guard case .gesture(let record) = entry else { return false }
            return record.event.contains(.recognized)
        }
    }

    // MARK: - What the touches mean

    private var screenSpeech: Configuration.ScreenSpeech? {
        scene.activeScreen.flatMap { configuration.screenSpeech[$0] }
    }

    /// The model's settings: the configuration's, with hints after their announcement's end when the server tells it.
    private var exploreSettings: ExploreByTouch.Settings {
        var settings = configuration.accessibility.exploreSettings
        settings.hintFollowsEnd = speech.endsReported
        return settings
    }

    /// The screen's language, else `[accessibility] lang`: every utterance names one, so a screen without `lang`
    /// never keeps the language the previous screen set on the server (SSIP cannot restore the server's default).
    private var language: String { screenSpeech?.language ?? configuration.accessibility.language }

    /// The role and state words in the screen's language.
    private var words: SpokenWords { SpokenWords.forLanguage(language) }

    private func exploreItems(_ items: [SpeechItem]) -> [ExploreByTouch.Item] {
        items.map { item in
            var adjustable = false
            var hint: String?
            switch item.source {
            case .control(let id):
                if let control = scene.control(id) {
                    switch control.kind {
                    case .slider, .segmented: adjustable = true
                    case .button, .toggle: break
                    }
                }
                hint = configuration.controlSpeech[id]?.hint
            case .element(let index):
                hint = configuration.elements[index].speech.hint
            }
            return ExploreByTouch.Item(
                shape: item.shape, rank: item.rank, isAdjustable: adjustable, hasHint: hint != nil)
        }
    }

    private mutating func perform(_ events: [ExploreByTouch.Event], at time: Instant, into effects: inout [Effect]) {
        for event in events {
            switch event {
            case .interrupt:
                effects.append(.speech(.cancel, at: time))
            case .focus(let item):
                say(describe(item), .text, at: time, endOf: item, into: &effects)
                broadcastSpeech(into: &effects)
            case .repeatFocus(let item):
                say(describe(item), .text, at: time, endOf: item, into: &effects)
            case .hint(let item):
                if let hint = hint(of: item) { say(hint, .message, at: time, into: &effects) }
            case .activate(let item):
                speech.activations &+= 1
                activate(item, at: time, into: &effects)
            case .nothingFocused:
                say(words.nothingSelected, .text, at: time, into: &effects)
            case .adjust(let item, let up):
                adjust(item, up: up, at: time, into: &effects)
            case .edge:
                effects.append(.speech(.soundIcon(SpeechModeState.edgeSound), at: time))
            case .pauseOrResume:
                if speech.isPaused {
                    speech.isPaused = false
                    effects.append(.speech(.resume, at: time))
                    if let last = speech.lastUtterance { effects.append(.speech(.speak(last), at: time)) }
                } else {
                    speech.isPaused = true
                    effects.append(.speech(.pause, at: time))
                }
            }
        }
    }

    /// Speaks `text` in the screen's language (rule 16), resuming speech first when a two-finger tap paused it.
    /// `endOf`: the item this announces; when its hint waits for the announcement's end, the utterance carries a
    /// new mark, and only that mark's end (``speechEnded(mark:now:)``) times the hint.
    private mutating func say(
        _ text: String, _ priority: Utterance.Priority, at time: Instant, endOf item: Int? = nil,
        into effects: inout [Effect]
    ) {
        if speech.isPaused {
            speech.isPaused = false
            effects.append(.speech(.resume, at: time))
        }
        var utterance = Utterance(text: text, priority: priority, language: language)
        if let item, speech.explorer?.awaitsEnd == item {
            speech.lastEndMark &+= 1
            speech.awaitedEnd = (speech.lastEndMark, item)
            utterance.endMark = speech.lastEndMark
        }
        if priority == .text { speech.lastUtterance = utterance }
        effects.append(.speech(.speak(utterance), at: time))
    }

    /// Rule 7: the label, the value, the role, the state; a private item's value and state are never spoken
    /// (rule 15).
    func describe(_ item: Int) -> String {
        guard speech.items.indices.contains(item) else { return "" }
        switch speech.items[item].source {
        case .control(let id):
            guard let control = scene.control(id) else { return configuration.controlSpeech[id]?.label ?? id }
            var parts = [configuration.controlSpeech[id]?.label ?? id]
            let isPrivate = configuration.isPrivate(control: id)
            let words = words
            if !isPrivate, let value = spokenValue(of: control) { parts.append(value) }
            parts.append(words.role(of: control.kind))
            if !isPrivate {
                switch control.kind {
                case .toggle: parts.append(control.isSelected ? words.on : words.off)
                case .button: if control.isSelected { parts.append(words.selected) }
                case .slider, .segmented: break
                }
            }
            if !control.isEnabled { parts.append(words.dimmed) }
            return parts.joined(separator: ", ")
        case .element(let index):
            let element = configuration.elements[index]
            // The default role is a word of the table; any other is spoken as the integrator wrote it.
            let role = element.role == Schema.element.role.defaultValue ? words.button : element.role
            return [element.speech.label ?? element.id, role].joined(separator: ", ")
        }
    }

    /// A slider's value, a segmented control's selected segment; nil for the others.
    private func spokenValue(of control: Control) -> String? {
        switch control.kind {
        case .slider: Configuration.number(control.value)
        case .segmented(let segmented):
            // The value is a whole segment index, 0…count−1 (the scene keeps it so).
            "\(Configuration.number(control.value + 1)) \(words.of) \(segmented.count)"
        case .button, .toggle: nil
        }
    }

    private func hint(of item: Int) -> String? {
        guard speech.items.indices.contains(item) else { return nil }
        switch speech.items[item].source {
        case .control(let id): return configuration.controlSpeech[id]?.hint
        case .element(let index): return configuration.elements[index].speech.hint
        }
    }

    /// Rule 10: a control is tapped through its own tracking (its events, target-action, responder chain); an
    /// element gets one tap through the twin at its activation point. Then the new state or value is spoken.
    private mutating func activate(_ item: Int, at time: Instant, into effects: inout [Effect]) {
        guard speech.items.indices.contains(item) else { return }
        switch speech.items[item].source {
        case .control(let id):
            guard let control = scene.control(id) else { return }
            guard control.isEnabled else { return say(words.dimmed, .text, at: time, into: &effects) }
            synthesizeTap(at: Self.pointInside(control.shape), time: time, into: &effects)
            guard !configuration.isPrivate(control: id), let after = scene.control(id) else { return }
            switch after.kind {
            case .toggle: say(after.isSelected ? words.on : words.off, .text, at: time, into: &effects)
            case .slider, .segmented:
                if let value = spokenValue(of: after) { say(value, .text, at: time, into: &effects) }
            case .button: break
            }
        case .element(let index):
            synthesizeTap(at: configuration.elements[index].activationPoint, time: time, into: &effects)
        }
    }

    /// One down and one up at `point`, through the scene as a real finger's (the application's copy goes to the
    /// twin of the touchscreen last explored on).
    private mutating func synthesizeTap(at point: Point, time: Instant, into effects: inout [Effect]) {
        let contact = SpeechModeState.activationContact
        for sample in [ContactSample.began(contact, at: point), .ended(contact, at: point)] {
            deliver(
                scene.handle(Frame(time: time, samples: [sample])), at: time, device: nil, fromInput: true,
                now: time.microseconds, into: &effects)
        }
    }

    /// Where the twin puts a synthesized tap: the touchscreen and slot of the last exploring touch.
    func syntheticOrigin(of contact: ContactID) -> (device: Int, slot: Int)? {
        contact == SpeechModeState.activationContact ? speech.lastOrigin.map { ($0.device, -1) } : nil
    }

    /// Rule 12: a slider steps by its `step` (a tenth of its range without one), a segmented control by one segment;
    /// its valueChanged actions go out as UIKit's accessibilityIncrement sends them, and only the new value is
    /// spoken.
    private mutating func adjust(_ item: Int, up: Bool, at time: Instant, into effects: inout [Effect]) {
        guard speech.items.indices.contains(item), case .control(let id) = speech.items[item].source,
            let control = scene.control(id), control.isEnabled
        else { return }
        let target: Double
        switch control.kind {
        case .slider(let slider):
            let step = slider.step ?? (slider.maximum - slider.minimum) / 10
            target = slider.clamp(control.value + (up ? step : -step))
        case .segmented(let segmented):
            target = min(max(control.value + (up ? 1 : -1), 0), Double(segmented.count - 1))
        case .button, .toggle:
            return
        }
        guard target != control.value else {
            return effects.append(.speech(.soundIcon(SpeechModeState.edgeSound), at: time))
        }
        deliver(
            scene.setValue(id, target, at: time), at: time, device: nil, fromInput: true, now: time.microseconds,
            into: &effects)
        deliver(
            scene.sendActions(for: .valueChanged, control: id, at: time), at: time, device: nil, fromInput: true,
            now: time.microseconds, into: &effects)
        guard !configuration.isPrivate(control: id), let after = scene.control(id),
            let value = spokenValue(of: after)
        else { return }
        say(value, .text, at: time, into: &effects)
    }

    /// A point inside `shape`: its box's centre when the shape holds it, else the first point of a 9×9 grid over the
    /// box that it holds (a ring, an L-shaped polygon), else the first vertex.
    static func pointInside(_ shape: Shape) -> Point {
        let box = shape.boundingBox
        if shape.contains(box.center) { return box.center }
        for row in 1...9 {
            for column in 1...9 {
                let point = Point(
                    x: box.minX + box.width * Double(column) / 10, y: box.minY + box.height * Double(row) / 10)
                if shape.contains(point) { return point }
            }
        }
        if case .polygon(let polygon) = shape, let first = polygon.vertices.first { return first }
        return box.center
    }

    // MARK: - Control socket

    /// `speech` state: the mode, whether the server can speak, the focused item (a private control's only for a
    /// controller: which key of a PIN pad the finger is on is what an observer must not learn), as the `speech` verb's
    /// result, a member of `state` and a subscriber's event.
    func speechJSON(for role: ControlRole = .controller) -> String {
        var line = JSONLine()
        line.add("mode", speechModeName)
        line.add("available", speech.isAvailable)
        var focus: String?
        if let index = speech.explorer?.focus, speech.items.indices.contains(index) {
            switch speech.items[index].source {
            case .control(let id):
                focus = role == .observer && configuration.isPrivate(control: id) ? nil : id
            case .element(let element): focus = configuration.elements[element].id
            }
        }
        line.add("focus", focus)
        line.add("paused", speech.isPaused)
        return line.line
    }

    /// Tells subscribers of `speech` events the mode or the focus changed; a private control's focus reaches only
    /// those who may see private controls, the others hear of a focus they may not know (`"focus":null`).
    func broadcastSpeech(into effects: inout [Effect]) {
        guard configuration.accessibility.enabled else { return }
        func members(_ role: ControlRole) -> String {
            var line = JSONLine()
            line.add("kind", ControlSubscriptions.Kind.speech.rawValue)
            line.add("speech", json: speechJSON(for: role))
            return line.members
        }
        let everyone = subscriptions.recipients(of: .speech)
        guard !everyone.isEmpty else { return }
        let controllerView = members(.controller)
        let observerView = members(.observer)
        guard controllerView != observerView else {
            return effects.append(.control(.event(ControlEvent(recipients: everyone, members: controllerView))))
        }
        let seeing = subscriptions.recipients(of: .speech, isPrivate: true)
        let others = everyone.filter { !seeing.contains($0) }
        if !seeing.isEmpty {
            effects.append(.control(.event(ControlEvent(recipients: seeing, members: controllerView))))
        }
        if !others.isEmpty { effects.append(.control(.event(ControlEvent(recipients: others, members: observerView)))) }
    }
}

extension SpeechModeState {
    /// The sound icon at the end of the list, or of an adjustable item's range (SSIP `SOUND_ICON`).
    static let edgeSound = "end-of-list"
}
