import Logging
import Testing
import TouchModel

@testable import TouchDaemon

/// The engine driven directly, as the input loop drives it, and its effects read back: shared by the engine,
/// router, mapping and rendering suites.
enum EngineHarness {
    /// The end-to-end test's configuration (Sources/TouchdEndToEnd/Config.swift): a 1000×1000 output, button `a` at
    /// x 100…299, y 100…299, button `b` at x 600…799, the same y; a three-finger long press of 300 ms in the
    /// bottom-left corner; a swipe to the right from the left edge.
    static func configuration(actionForA: String = "a") -> String {
        """
        [output]
        width = 1000
        height = 1000

        [tracking]
        drag_outset = 70
        repeat_interval_ms = 350
        repeat_slop = 45

        [targets.e2e]
        socket = "/run/e2e.sock"
        responds_to = ["a", "b", "a2", "admin", "back"]

        [[control]]
        id = "a"
        kind = "button"
        frame = { x = 100, y = 100, width = 200, height = 200 }
        actions = [{ events = ["allTouchEvents"], target = "e2e", action = "\(actionForA)" }]

        [[control]]
        id = "b"
        kind = "button"
        frame = { x = 600, y = 100, width = 200, height = 200 }
        actions = [{ events = ["allTouchEvents"], target = "e2e", action = "b" }]

        [[gesture]]
        id = "admin"
        kind = "long_press"
        fingers = 3
        minimum_duration_ms = 300
        frame = { x = 0, y = 800, width = 200, height = 200 }
        actions = [{ events = ["recognized"], target = "e2e", action = "admin" }]

        [[gesture]]
        id = "back"
        kind = "swipe"
        directions = ["right"]
        minimum_distance = 150
        edge = "left"
        edge_margin = 30
        actions = [{ events = ["recognized"], target = "e2e", action = "back" }]

        """
    }

    static func load(_ text: String) throws -> Configuration {
        switch ConfigurationLoader.load(text: text, path: "engine.toml") {
        case .success(let configuration): return configuration
        case .failure(let error): throw error
        }
    }

    /// Feeds the engine as the input loop does, with a clock of its own that only moves when told.
    struct Driver {
        var engine: Engine
        /// Monotonic microseconds.
        var now: UInt64 = 10_000_000

        init(_ text: String = EngineHarness.configuration()) throws {
            let configuration = try EngineHarness.load(text)
            engine = Engine(configuration: configuration, scene: try configuration.makeScene())
            _ = engine.started()
        }

        static func device(_ id: Int, name: String = "panel", contacts: Int = 10) -> DeviceInfo {
            DeviceInfo(
                id: id, name: name, sysname: "event\(id)", vendor: 0x1234, product: 0x5678, widthMillimetres: 250,
                heightMillimetres: 250, devnode: "/dev/input/event\(id)", links: [], isTouchscreen: true,
                touchCount: contacts)
        }

        mutating func plug(_ id: Int, name: String = "panel", contacts: Int = 10) -> [Effect] {
            engine.handle([.deviceAdded(Self.device(id, name: name, contacts: contacts))], now: now)
        }

        mutating func unplug(_ id: Int) -> [Effect] {
            engine.handle([.deviceRemoved(id: id)], now: now)
        }

        enum Change {
            case down(Int, Double, Double)
            case move(Int, Double, Double)
            case up(Int)
        }

        /// One frame of changes (seat slots, output pixels), `after` milliseconds after the previous one. A
        /// single-touch device reports slot −1 and seat slot 0, as libinput does.
        mutating func frame(
            _ changes: [Change], device: Int = 1, after milliseconds: UInt64 = 20, singleTouch: Bool = false
        ) -> [Effect] {
            let events = events(changes, device: device, after: milliseconds, singleTouch: singleTouch)
            // The loop reads the events a little after the kernel stamped them.
            return engine.handle(events, now: now + 300)
        }

        /// The input events of ``frame(_:device:after:singleTouch:)``, with the clock moved on, not handled.
        mutating func events(
            _ changes: [Change], device: Int = 1, after milliseconds: UInt64 = 20, singleTouch: Bool = false
        ) -> [InputEvent] {
            now += milliseconds * 1000
            var events: [InputEvent] = changes.map { change in
                let (kind, slot, x, y): (TouchEvent.Kind, Int, Double?, Double?) =
                    switch change {
                    case .down(let slot, let x, let y): (.down, slot, x / 1000, y / 1000)
                    case .move(let slot, let x, let y): (.motion, slot, x / 1000, y / 1000)
                    case .up(let slot): (.up, slot, nil, nil)
                    }
                return .touch(
                    TouchEvent(
                        device: device, kind: kind, seatSlot: slot, slot: singleTouch ? -1 : slot, time: now, x: x,
                        y: y))
            }
            events.append(.touch(TouchEvent(device: device, kind: .frame, seatSlot: -1, slot: -1, time: now)))
            return events
        }

        mutating func tap(at x: Double, _ y: Double, device: Int = 1, singleTouch: Bool = false) -> [Effect] {
            frame([.down(0, x, y)], device: device, singleTouch: singleTouch)
                + frame([.up(0)], device: device, after: 50, singleTouch: singleTouch)
        }

        /// Lets `milliseconds` pass and fires what fell due.
        mutating func wait(_ milliseconds: UInt64) -> [Effect] {
            now += milliseconds * 1000
            return engine.advance(to: now)
        }

        mutating func request(
            _ command: ControlRequest.Command, client: ControlClientID = 7, role: ControlRole = .controller
        ) -> [Effect] {
            let request = ControlRequest(client: client, id: .number(1), role: role, command: command)
            return engine.handle(.request(request), now: now, edge: { EdgeStatistics() })
        }
    }

    // MARK: - Reading effects

    /// `control:event` of each delivery, in order.
    static func deliveries(_ effects: [Effect]) -> [String] {
        effects.compactMap {
            if case .deliver(let delivery, _, _) = $0 { "\(delivery.control):\(delivery.event)" } else { nil }
        }
    }

    static func deliveryValues(_ effects: [Effect]) -> [ActionDelivery] {
        effects.compactMap { if case .deliver(let delivery, _, _) = $0 { delivery } else { nil } }
    }

    static func statuses(_ effects: [Effect]) -> [String] {
        effects.compactMap {
            switch $0 {
            case .notify(.status(let status)), .notify(.ready(let status)): status
            default: nil
            }
        }
    }

    static func logs(_ effects: [Effect], at level: Logger.Level? = nil) -> [String] {
        effects.compactMap {
            if case .log(let logLevel, let message, _) = $0, level == nil || level == logLevel { message } else { nil }
        }
    }

    static func responses(_ effects: [Effect]) -> [ControlMessage] {
        effects.compactMap { if case .control(let message) = $0 { message } else { nil } }
    }

    static func isDelivery(_ effect: Effect) -> Bool {
        if case .deliver = effect { true } else { false }
    }
}
