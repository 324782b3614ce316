import CLibinput
import TouchModel

/// Runs a tap through a scratch engine before `READY=1`, so the first real tap does not pay for faulting in the code
/// of its path: the router, the scene's hit-testing and tracking, target-action, the engine's deliveries and the socket
/// message's encoding, and in filter mode the application's copy up to its twin's frame. Without it, the first tap after start was the slowest of all in the test VM (16–77 ms against
/// 3–5 ms for the rest, with about 110 minor faults on the input thread), which made it the p99 of every latency run;
/// docs/architecture.md, "The speed measures that stay", has the figure with it.
///
/// The scratch engine is made from the same configuration and dropped at once: it sends nothing, logs nothing and
/// counts nothing in the real engine's statistics. It covers the same code, not the same data: the kernel's and
/// libinput's side of the first event still cost what they cost.
enum TapPathWarmUp {
    /// How many controls are tapped: enough for the kinds a kiosk's first screen uses, bounded for a file of
    /// thousands.
    static let controlsTapped = 8

    /// What the scratch taps reached, for the tests: socket messages encoded, frames for the application's twin.
    struct Reached: Equatable {
        var messages = 0
        var forwarded = 0
        /// Frames forwarded first (filter mode's edge: EdgeForecast).
        var forwardedFirst = 0
    }

    @discardableResult
    static func run(_ configuration: Configuration) -> Reached {
        var scratch = configuration
        // The made-up panel must be taken whatever the allow-list says.
        scratch.devices = []
        scratch.ignoreVirtual = false
        guard let scene = try? scratch.makeScene() else { return Reached() }
        var engine = Engine(configuration: scratch, scene: scene)
        _ = engine.started()
        let device = DeviceInfo(
            id: Int.max, name: "touchd warm-up", sysname: "event-warm-up", vendor: 0, product: 0,
            widthMillimetres: nil, heightMillimetres: nil, devnode: nil, links: [], isTouchscreen: true,
            touchCount: 10)
        var now: UInt64 = 1_000_000
        var effects = engine.handle([.deviceAdded(device)], now: now)
        // In filter mode, as if the panel had been grabbed: the app's copies then go through the forwarding code too.
        if configuration.filter.enabled { effects += engine.filterApplied([(device, .grabbed)]) }
        guard let mapper = engine.router.mapper(for: device.id) else { return Reached() }
        let enabled = configuration.controls.lazy.filter(\.isEnabled).prefix(Self.controlsTapped)
        // A tap on each control's centre, then one on the output's centre (empty space, or the app in filter mode).
        let points =
            enabled.map(\.shape.boundingBox.center)
            + [Point(x: Double(configuration.output.width) / 2, y: Double(configuration.output.height) / 2)]
        // In filter mode the taps' events come out of the decoder a grabbed panel's go through (EdgePanel), and each
        // frame asks the forecast first, as the loop does; otherwise they are libinput's, made here.
        let filter = configuration.filter.enabled
        let axis = EvdevTouchDecoder.Axis(minimum: 0, maximum: 4095)
        var decoder = EvdevTouchDecoder(
            device: device.id, multitouch: true, x: axis, y: axis, slotRange: (0, 9),
            seatSlotBase: EdgePanel.seatSlotBase(device: 0))
        var reached = Reached()
        typealias Code = EvdevTouchDecoder.Code
        for point in points {
            guard let (x, y) = mapper.unmap(point), let rawX = raw(x), let rawY = raw(y) else { continue }
            for down in [true, false] {
                now += 60_000
                var events: [InputEvent] = []
                guard filter else {
                    let (kind, px, py): (TouchEvent.Kind, Double?, Double?) = down ? (.down, x, y) : (.up, nil, nil)
                    effects += engine.handle(
                        [
                            .touch(
                                TouchEvent(
                                    device: device.id, kind: kind, seatSlot: 0, slot: 0, time: now, x: px, y: py)),
                            .touch(TouchEvent(device: device.id, kind: .frame, seatSlot: -1, slot: -1, time: now)),
                        ], now: now)
                    continue
                }
                let time = Instant(microseconds: now)
                let codes =
                    down
                    ? [(Code.trackingID, 1), (Code.positionX, rawX), (Code.positionY, rawY)] : [(Code.trackingID, -1)]
                // As EdgePanel.read: the raw frame asked first (one contact's change), then decoded.
                let raw = codes.map { code, value in
                    input_event(
                        time: timeval(), type: UInt16(Code.absType), code: UInt16(code),
                        value: Int32(clamping: value))
                }
                var forecast = engine.edgeForecast(for: device.id)
                var first = decoder.loneChange(raw, at: time).flatMap { forecast?.twinChange(for: $0) }.map {
                    TwinFrame(device: device.id, changes: [$0])
                }
                for (code, value) in codes {
                    decoder.decode(time: time, type: Code.absType, code: code, value: value, into: &events)
                }
                decoder.decode(time: time, type: Code.synType, code: Code.synReport, value: 0, into: &events)
                if first == nil { first = forecast?.twinFrame(for: events) }
                if first != nil { reached.forwardedFirst &+= 1 }
                effects += engine.handle(events, now: now, forwardedFirst: first)
            }
            // Out of the touchDownRepeat window: each tap a first tap.
            now += 1_000_000
            effects += engine.advance(to: now)
        }
        // Built once: the property makes a new table on every read.
        let targets = configuration.socketTargets
        for effect in effects {
            switch effect {
            case .deliver(let delivery, .socket, _):
                if let target = targets[delivery.target],
                    !SocketSenderCore.message(delivery, for: target).isEmpty
                {
                    reached.messages &+= 1
                }
            case .forward: reached.forwarded &+= 1
            default: break
            }
        }
        return reached
    }

    /// A normalised position on the scratch panel's 0…4095 axes; nil when not finite.
    private static func raw(_ normalised: Double) -> Int? {
        let value = (normalised * 4096).rounded()
        return value.isFinite ? Int(exactly: min(4095, max(0, value))) : nil
    }
}
