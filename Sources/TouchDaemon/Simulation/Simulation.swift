import TouchModel

/// Runs a configuration through the daemon's own ``Engine`` in virtual time, fed from a touch script or a
/// `libinput record` file instead of libinput, and renders what happened as the JSON Lines documented in docs/configuration.md ("Gestures in `simulate`") and the README: control
/// events, gesture events, resolved actions and diagnostics, in order. Recordings go through the engine's router as
/// live input does (the allow-list, regions, the mapping, SYN_DROPPED's cancellations); a touch script is already in
/// output pixels and goes to the scene as frames.
struct Simulation {
    /// What to play.
    enum Input: Sendable {
        /// A touch script's frames, in output pixels.
        case script([Frame])
        /// A touch script's text, already checked (``TouchScript/check(_:context:)``): played a step at a time as it
        /// is read, so a long script is never held as frames. Its screen lines switch the active screen.
        case scriptText(String)
        /// A recording, decoded for the router.
        case recording(LibinputRecording.Input)
    }

    let configuration: Configuration
    private(set) var engine: Engine

    init(configuration: Configuration) throws(Scene.BuildError) {
        self.configuration = configuration
        self.engine = Engine(configuration: configuration, scene: try configuration.makeScene(), observesOutput: true)
        // Time 0 is the start: `[idle]`'s clock starts there, as the daemon's starts when it is ready.
        self.engine.armIdle(at: .zero)
        // simulate prints what would be spoken: its speech server always can.
        _ = self.engine.speechAvailability(true, now: 0)
    }

    /// Feeds every frame of a touch script, firing due deadlines in between, and returns the output lines.
    mutating func run(_ frames: [Frame]) -> [String] {
        lines(.script(frames))
    }

    /// Plays `input` and returns the output lines.
    mutating func lines(_ input: Input) -> [String] {
        var lines: [String] = []
        let configuration = configuration
        run(
            input, screen: { lines.append(Self.render(screen: $0, at: $1)) },
            effects: { effects in
                for effect in effects {
                    switch effect {
                    case .output(let output, let time):
                        lines += Self.render(output, at: time, configuration: configuration)
                    case .idle(let transition): lines += Self.render(transition)
                    case .wakeTouch(let touch): lines.append(Self.render(touch))
                    case .speech(let command, let time):
                        if let line = Self.render(command, at: time) { lines.append(line) }
                    case .speechMode(let on, let time): lines.append(Self.render(speechMode: on, at: time))
                    default: continue
                    }
                }
            })
        return lines
    }

    /// Plays `input`, firing due deadlines in between (each at its own time), and hands each batch of the engine's
    /// effects to `handle`, in order. A script's screen line goes to `screen` first, then the effects of the switch
    /// (the touchCancel of a control that is no longer on the active screen) to `handle`.
    mutating func run(_ input: Input, _ handle: ([Effect]) -> Void) {
        run(input, screen: { _, _ in }, effects: handle)
    }

    /// ``run(_:_:)``, with a script's screen lines handed to `screen` as they are played.
    mutating func run(_ input: Input, screen: (String, Instant) -> Void, effects handle: ([Effect]) -> Void) {
        switch input {
        case .script(let frames):
            for frame in frames {
                fireDeadlines(upTo: frame.time, handle)
                handle(engine.handle(frame: frame))
            }
        case .scriptText(let text):
            TouchScript.forEachStep(text) { step in
                switch step {
                case .frame(let frame):
                    fireDeadlines(upTo: frame.time, handle)
                    handle(engine.handle(frame: frame))
                case .screen(let id, let time):
                    fireDeadlines(upTo: time, handle)
                    screen(id, time)
                    handle(engine.switchScreen(to: id, at: time))
                }
            }
        case .recording(let recording):
            // The devices are there from the start, as libinput adds the seat's devices before their first event.
            handle(engine.handle(recording.devices.map { .deviceAdded($0) }, now: 0))
            for group in recording.groups {
                fireDeadlines(upTo: group.time, handle)
                handle(engine.handle(group.events, now: group.time.microseconds))
            }
        }
    }

    /// Whatever falls due before `time` happens first, at its own time.
    private mutating func fireDeadlines(upTo time: Instant, _ handle: ([Effect]) -> Void) {
        while let due = engine.nextDeadline, due <= time {
            handle(engine.advance(to: due.microseconds))
        }
    }

    /// A touch script's screen line, as it is played: `{"type":"screen","time_ms":…,"screen":"ID"}`.
    static func render(screen: String, at time: Instant) -> String {
        var json = JSONLine()
        json.add("type", "screen")
        json.add("time_ms", milliseconds: time.microseconds)
        json.add("screen", screen)
        return json.line
    }

    /// An `[idle]` event's actions, as action lines: `control` is `idle`, `event` is `idle` or `wake`.
    static func render(_ transition: IdleTransition) -> [String] {
        transition.actions.map { fired in
            var json = JSONLine()
            json.add("type", "action")
            json.add("time_ms", milliseconds: transition.time.microseconds)
            json.add("control", Engine.idleSender)
            json.add("event", transition.event.rawValue)
            json.add("action", fired.action)
            json.add("target", fired.target)
            json.add("responder", fired.responder)
            return json.line
        }
    }

    /// What speech mode says: `{"type":"speech","time_ms":…,"text":"…"}` for each utterance, in order, and
    /// `{"type":"sound","time_ms":…,"icon":"end-of-list"}` for a sound icon; nil for cancel, pause and resume, which
    /// say nothing by themselves.
    static func render(_ command: SpeechCommand, at time: Instant) -> String? {
        var json = JSONLine()
        switch command {
        case .speak(let utterance):
            json.add("type", "speech")
            json.add("time_ms", milliseconds: time.microseconds)
            json.add("text", utterance.text)
        case .soundIcon(let icon):
            json.add("type", "sound")
            json.add("time_ms", milliseconds: time.microseconds)
            json.add("icon", icon)
        case .cancel, .pause, .resume:
            return nil
        }
        return json.line
    }

    /// Speech mode started or ended: `{"type":"speech_mode","time_ms":…,"on":true}`.
    static func render(speechMode on: Bool, at time: Instant) -> String {
        var json = JSONLine()
        json.add("type", "speech_mode")
        json.add("time_ms", milliseconds: time.microseconds)
        json.add("on", on)
        return json.line
    }

    /// A touch-down that nobody sees because it woke the kiosk (`[idle]`):
    /// `{"type":"wake_touch","time_ms":…,"contact":N,"x":…,"y":…}`.
    static func render(_ touch: WakeTouch) -> String {
        var json = JSONLine()
        json.add("type", "wake_touch")
        json.add("time_ms", milliseconds: touch.time.microseconds)
        json.add("contact", touch.contact)
        if let location = touch.location {
            json.add("x", location.x)
            json.add("y", location.y)
        }
        return json.line
    }

    func render(_ output: Output, at time: Instant) -> [String] {
        Self.render(output, at: time, configuration: configuration)
    }

    /// The JSON lines of one output of the scene.
    static func render(_ output: Output, at time: Instant, configuration: Configuration) -> [String] {
        var lines: [String] = []
        for entry in output.entries {
            var json = JSONLine()
            switch entry {
            case .event(let record):
                json.add("type", "event")
                json.add("time_ms", milliseconds: record.time.microseconds)
                json.add("control", record.control)
                json.add("event", configuration.name(of: record.event))
                if let contact = record.contact { json.add("contact", contact) }
                if let location = record.location {
                    json.add("x", location.x)
                    json.add("y", location.y)
                }
                json.add("state", record.state.description)
                if let value = record.value { json.add("value", value) }
            case .gesture(let record):
                json.add("type", "gesture")
                json.add("time_ms", milliseconds: record.time.microseconds)
                json.add("gesture", record.gesture)
                // The event is printed as `state` (the documented gesture line): began, changed,
                // recognized, ended, cancelled or failed.
                json.add("state", record.event.description)
                if let location = record.location {
                    json.add("x", location.x)
                    json.add("y", location.y)
                }
                if let translation = record.translation {
                    json.add("translation_x", translation.x)
                    json.add("translation_y", translation.y)
                }
                if let scale = record.scale { json.add("scale", scale) }
                if let direction = record.direction { json.add("direction", direction.names.joined(separator: ",")) }
            case .action(let action):
                json.add("type", "action")
                json.add("time_ms", milliseconds: action.time.microseconds)
                if let event = action.gestureEvent {
                    // Named as in a socket target's message: the gesture's id as `control`, and again as `gesture`.
                    json.add("control", action.control)
                    json.add("gesture", action.control)
                    json.add("event", event.description)
                } else {
                    json.add("control", action.control)
                    json.add("event", configuration.name(of: action.event))
                }
                json.add("action", action.action)
                json.add("target", action.target)
                json.add("responder", action.responder?.id)
                if let value = action.value { json.add("value", value) }
            case .app(let record):
                // What the application beneath touchd receives through the twin (filter mode).
                json.add("type", "app")
                json.add("time_ms", milliseconds: record.time.microseconds)
                json.add("contact", record.contact)
                if record.phase == .cancel && configuration.filter.cancelWith == .lift {
                    json.add("touch", "up")
                    json.add("cancelled", true)
                } else {
                    json.add("touch", record.phase.rawValue)
                }
                if let location = record.location {
                    json.add("x", location.x)
                    json.add("y", location.y)
                }
            }
            lines.append(json.line)
        }
        for diagnostic in output.diagnostics {
            var json = JSONLine()
            json.add("type", "diagnostic")
            json.add("time_ms", milliseconds: time.microseconds)
            json.add("message", diagnostic.description)
            lines.append(json.line)
        }
        return lines
    }
}
