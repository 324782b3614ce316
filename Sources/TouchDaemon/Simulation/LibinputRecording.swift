import TouchModel
import Yams

/// Reads the YAML that `libinput record` writes and turns every touch device's evdev stream into
/// frames: multitouch protocol B (slots, tracking ids) and single-touch devices (BTN_TOUCH with
/// ABS_X/ABS_Y). Each device's axis ranges are mapped onto the configured output, as the daemon
/// maps live devices. Contacts are numbered `device index × 1000 + slot`.
enum LibinputRecording {
    struct Problem: Error, Hashable, Sendable {
        var message: String
    }

    // evdev codes (linux/input-event-codes.h).
    private enum Code {
        static let synType = 0
        static let keyType = 1
        static let absType = 3
        static let synReport = 0
        static let synDropped = 3
        static let buttonTouch = 330
        static let absX = 0
        static let absY = 1
        static let slot = 47
        static let positionX = 53
        static let positionY = 54
        static let trackingID = 57
    }

    /// Whether `text` looks like a recording rather than a touch script.
    static func looksLikeRecording(_ text: String) -> Bool {
        let head = text.prefix(4096)
        return head.contains("devices:") && (head.contains("libinput:") || head.contains("version:"))
    }

    /// The frames of every touch device in the recording, mapped onto the output. With an allow-list (the
    /// configuration's `[[device]]` entries), a device is used only when an entry matches its name, ids and node, as
    /// `touchd run` would decide, and lands on that entry's `region`; `ignored` receives the devices left out.
    static func frames(
        from text: String, output: Configuration.Output, allowList: [Configuration.DeviceMatch] = [],
        ignored: ((String) -> Void)? = nil
    ) -> Result<[Frame], Problem> {
        let document: Any?
        do {
            document = try Yams.load(yaml: text)
        } catch {
            return .failure(Problem(message: "not a valid libinput recording: \(error)"))
        }
        guard let root = document as? [String: Any], let devices = root["devices"] as? [Any] else {
            return .failure(Problem(message: "not a libinput recording: no 'devices' list"))
        }
        var frames: [Frame] = []
        for (index, device) in devices.enumerated() {
            guard let device = device as? [String: Any] else { continue }
            var region: Rect? = nil
            if !allowList.isEmpty {
                let info = describe(device, index: index)
                guard let match = allowList.first(where: { $0.matches(info) }) else {
                    ignored?("device \(index) (\(info.name), \(info.devnode ?? "no node")) matches no [[device]] entry")
                    continue
                }
                region = match.region
            }
            switch deviceFrames(device, index: index, output: output, region: region) {
            case .success(let deviceFrames): frames += deviceFrames
            case .failure(let problem): return .failure(problem)
            }
        }
        // Several devices: interleave by time; each device's own order is kept (the sort is stable).
        return .success(
            frames.enumerated().sorted { ($0.element.time, $0.offset) < ($1.element.time, $1.offset) }.map(\.element))
    }

    private struct Axis {
        var minimum: Int
        var maximum: Int
    }

    /// One slot's state. The kernel sends only the axis values that changed, and keeps them per slot
    /// (for single-touch devices, per device) across touches: a new touch at the same x as the last
    /// one sends no ABS_X. So positions outlive the contact; only the flags are reset.
    private struct Slot {
        var active = false
        var began = false
        var x: Int?
        var y: Int?
        var moved = false
        var ended = false
    }

    /// The facts of a recorded device that the allow-list matches on: `evdev.name`, the vendor and product of
    /// `evdev.id` (bus, vendor, product, version) and `node`.
    private static func describe(_ device: [String: Any], index: Int) -> DeviceInfo {
        let evdev = device["evdev"] as? [String: Any] ?? [:]
        let ids = (evdev["id"] as? [Any])?.compactMap(integer) ?? []
        let node = device["node"] as? String
        return DeviceInfo(
            id: index, name: evdev["name"] as? String ?? "",
            sysname: node?.split(separator: "/").last.map(String.init) ?? "",
            vendor: ids.count > 1 ? ids[1] : -1, product: ids.count > 2 ? ids[2] : -1, widthMillimetres: nil,
            heightMillimetres: nil, devnode: node, links: [], isTouchscreen: true, touchCount: 0)
    }

    private static func deviceFrames(
        _ device: [String: Any], index: Int, output: Configuration.Output, region: Rect?
    ) -> Result<[Frame], Problem> {
        guard let evdev = device["evdev"] as? [String: Any], let absinfo = evdev["absinfo"] as? [AnyHashable: Any]
        else {
            return .success([])
        }
        func axis(_ code: Int) -> Axis? {
            guard let values = (absinfo[code] ?? absinfo[String(code)]) as? [Any], values.count >= 2,
                let minimum = integer(values[0]), let maximum = integer(values[1]), maximum > minimum
            else { return nil }
            return Axis(minimum: minimum, maximum: maximum)
        }
        let multitouch = axis(Code.positionX) != nil && axis(Code.positionY) != nil
        guard let xAxis = multitouch ? axis(Code.positionX) : axis(Code.absX),
            let yAxis = multitouch ? axis(Code.positionY) : axis(Code.absY)
        else { return .success([]) }  // not a touch device (a keyboard in the same recording)
        let mapper = CoordinateMapper(output: output, region: region)
        let contactBase = index * 1000

        var frames: [Frame] = []
        var slots: [Int: Slot] = [:]
        var currentSlot = 0
        var singleTouchDown = false
        // After SYN_DROPPED, evdev clients drop every event up to and including the next SYN_REPORT.
        var droppingUntilReport = false
        guard let events = device["events"] as? [Any] else { return .success([]) }
        for entry in events {
            guard let entry = entry as? [String: Any], let list = entry["evdev"] as? [Any] else { continue }
            for raw in list {
                guard let event = raw as? [Any], event.count == 5,
                    let seconds = integer(event[0]), let microseconds = integer(event[1]),
                    let type = integer(event[2]), let code = integer(event[3]), let value = integer(event[4]),
                    seconds >= 0, seconds < 1 << 40, microseconds >= 0, microseconds < 1_000_000
                else {
                    return .failure(Problem(message: "device \(index): malformed event \(raw)"))
                }
                let time = Instant(microseconds: UInt64(seconds) * 1_000_000 + UInt64(microseconds))
                if droppingUntilReport {
                    if type == Code.synType && code == Code.synReport { droppingUntilReport = false }
                    continue
                }
                switch (type, code) {
                case (Code.absType, Code.slot):
                    currentSlot = value
                case (Code.absType, Code.trackingID) where multitouch:
                    if value >= 0 {
                        slots[currentSlot, default: Slot()].active = true
                        slots[currentSlot, default: Slot()].began = true
                    } else {
                        slots[currentSlot, default: Slot()].ended = true
                    }
                case (Code.absType, Code.positionX) where multitouch:
                    slots[currentSlot, default: Slot()].x = value
                    slots[currentSlot, default: Slot()].moved = true
                case (Code.absType, Code.positionY) where multitouch:
                    slots[currentSlot, default: Slot()].y = value
                    slots[currentSlot, default: Slot()].moved = true
                case (Code.absType, Code.absX) where !multitouch:
                    slots[0, default: Slot()].x = value
                    slots[0, default: Slot()].moved = true
                case (Code.absType, Code.absY) where !multitouch:
                    slots[0, default: Slot()].y = value
                    slots[0, default: Slot()].moved = true
                case (Code.keyType, Code.buttonTouch) where !multitouch:
                    if value != 0 && !singleTouchDown {
                        slots[0, default: Slot()].active = true
                        slots[0, default: Slot()].began = true
                    } else if value == 0 && singleTouchDown {
                        slots[0, default: Slot()].ended = true
                    }
                    singleTouchDown = value != 0
                case (Code.synType, Code.synDropped):
                    // The kernel dropped events: every contact's state is unknown, so cancel them all.
                    let samples = slots.keys.sorted().filter { slots[$0]?.active == true }.map {
                        ContactSample.cancelled(contactBase + $0)
                    }
                    if !samples.isEmpty { frames.append(Frame(time: time, samples: samples)) }
                    for slot in slots.keys { slots[slot] = Slot(x: slots[slot]?.x, y: slots[slot]?.y) }
                    singleTouchDown = false
                    droppingUntilReport = true
                case (Code.synType, Code.synReport):
                    var samples: [ContactSample] = []
                    for slot in slots.keys.sorted() {
                        guard var state = slots[slot] else { continue }
                        let contact = contactBase + slot
                        let location = state.x.flatMap { x in
                            state.y.flatMap { y -> Point? in
                                guard
                                    let nx = CoordinateMapper.normalise(
                                        x, minimum: xAxis.minimum, maximum: xAxis.maximum),
                                    let ny = CoordinateMapper.normalise(
                                        y, minimum: yAxis.minimum, maximum: yAxis.maximum)
                                else { return nil }
                                return mapper.map(x: nx, y: ny)
                            }
                        }
                        if state.began, let location {
                            samples.append(.began(contact, at: location))
                        } else if state.active, state.moved, !state.began, let location {
                            samples.append(.moved(contact, to: location))
                        }
                        if state.ended {
                            if state.active { samples.append(.ended(contact)) }
                            slots[slot] = Slot(x: state.x, y: state.y)
                            continue
                        }
                        state.began = false
                        state.moved = false
                        slots[slot] = state
                    }
                    if !samples.isEmpty { frames.append(Frame(time: time, samples: samples)) }
                default:
                    break
                }
            }
        }
        return .success(frames)
    }

    private static func integer(_ value: Any) -> Int? {
        if let number = value as? Int { return number }
        if let string = value as? String { return Int(string) }
        return nil
    }
}
