import TouchModel

/// Runs a configuration's scene over frames in virtual time and renders what happened as the
/// JSON Lines of DESIGN.md: control events, gesture events, resolved actions and diagnostics, in order.
struct Simulation {
    let configuration: Configuration
    private(set) var scene: Scene

    init(configuration: Configuration) throws(Scene.BuildError) {
        self.configuration = configuration
        self.scene = try configuration.makeScene()
    }

    /// Feeds every frame, firing due deadlines in between, and returns the output lines.
    mutating func run(_ frames: [Frame]) -> [String] {
        var lines: [String] = []
        let configuration = configuration
        run(frames) { output, time in lines += Self.render(output, at: time, configuration: configuration) }
        return lines
    }

    /// Feeds every frame, firing due deadlines in between, and hands each output to `handle` with the time it
    /// happened at, in order.
    mutating func run(_ frames: [Frame], _ handle: (Output, Instant) -> Void) {
        var deadline: Instant? = nil
        for frame in frames {
            // Whatever falls due before the frame happens first, at its own time.
            while let due = deadline, due <= frame.time {
                let output = scene.advance(to: due)
                handle(output, due)
                deadline = output.nextDeadline
            }
            let output = scene.handle(frame)
            handle(output, frame.time)
            deadline = output.nextDeadline
        }
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
                // The event is printed as `state` (DESIGN.md's gesture line): began, changed,
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
