import TouchModel
import Yams

/// Reads the YAML that `libinput record` writes and turns every touch device's evdev stream into what the input layer
/// hands the daemon: the devices, then touch events (down, motion, up, cancel, each SYN_REPORT's frame) with
/// positions normalised on the device's axes, as libinput gives them. Multitouch protocol B (slots, tracking ids) and
/// single-touch devices (BTN_TOUCH with ABS_X/ABS_Y). They go through the same ``TouchRouter`` as live input (the
/// allow-list, regions, the mapping onto the output), so `touchd simulate` and `touchd run` cannot disagree.
/// Contacts (seat slots) are numbered `device index × 1000 + slot`.
enum LibinputRecording {
    struct Problem: Error, Hashable, Sendable {
        var message: String
    }

    /// The largest recording read (16 MiB, about ten minutes of busy touching): Yams builds a tree of the whole file
    /// at about 50 times its size, so this keeps simulate under about 800 MB.
    static let maximumSize = 16 << 20
    /// The most devices a recording may list (`libinput record --all` on a laptop lists a few dozen).
    static let maximumDevices = 64
    /// The most evdev events a recording may hold, all devices together (a 16 MiB file holds about 375,000).
    static let maximumEvents = 4_000_000
    /// The most slots used per device, as libinput tracks them; slots beyond this or the device's ABS_MT_SLOT range
    /// are ignored, as libevdev ignores them. Also keeps contact numbers (`index × 1000 + slot`) apart.
    static let maximumSlots = EvdevTouchDecoder.maximumSlots
    /// The largest event time, in seconds: 2^40 s is 1.1 × 10^18 µs, well inside an Instant.
    static let maximumSeconds = 1 << 40

    /// The most characters of the file a message quotes (an event, a name, a key, Yams' problem); more are cut, so
    /// that a hostile file cannot make a huge message: an event may hold a string of megabytes.
    static let maximumQuoted = 80

    /// Whether `text` looks like a recording rather than a touch script.
    static func looksLikeRecording(_ text: String) -> Bool {
        let head = text.prefix(4096)
        return head.contains("devices:") && (head.contains("libinput:") || head.contains("version:"))
    }

    /// A recording decoded for the router: its devices (`id` is the index in the file), then the touch events of
    /// each SYN_REPORT, each group ending in its frame event, in time order across devices.
    struct Input: Sendable {
        var devices: [DeviceInfo] = []
        var groups: [Group] = []
    }

    struct Group: Sendable {
        var time: Instant
        var events: [InputEvent]
    }

    /// Decodes the recording. `noted` receives what was left out of a device (events for slots it does not have).
    static func input(from text: String, noted: ((String) -> Void)? = nil) -> Result<Input, Problem> {
        guard text.utf8.count <= maximumSize else {
            return .failure(
                Problem(
                    message: "the recording is \(text.utf8.count) bytes; a libinput recording may be at most "
                        + "16 MiB (\(maximumSize) bytes)"))
        }
        // Before Yams: it expands aliases while it builds its tree, so they must be refused unexpanded.
        if let problem = yamlProblem(in: text) { return .failure(problem) }
        let document: Any?
        do {
            // Yams.load in two steps, to look at the tree before Yams converts it: the conversion traps on a mapping
            // key that is a list or a mapping (a force unwrap in Yams' Constructor), which YAML allows (`? [a, b]`,
            // `{[1]: 2}`) and libinput never writes.
            let tree = try Yams.compose(yaml: text)
            if let key = nonScalarKey(in: tree) {
                let at = key.mark.map { "\(position($0)): " } ?? ""
                return .failure(
                    Problem(message: "not a valid libinput recording: \(at)a mapping key is a list or a mapping"))
            }
            document = tree?.any
        } catch {
            return .failure(Problem(message: "not a valid libinput recording: \(describe(error))"))
        }
        guard let root = document as? [String: Any], let devices = root["devices"] as? [Any] else {
            return .failure(Problem(message: "not a libinput recording: no 'devices' list"))
        }
        guard devices.count <= maximumDevices else {
            return .failure(
                Problem(message: "the recording lists \(devices.count) devices; at most \(maximumDevices) are allowed"))
        }
        var input = Input()
        var events = 0
        for (index, device) in devices.enumerated() {
            guard let device = device as? [String: Any] else { continue }
            var info = describe(device, index: index)
            switch deviceEvents(device, index: index, events: &events) {
            case .success(let decoded):
                info.isTouchscreen = decoded.isTouch
                info.touchCount = decoded.isTouch ? decoded.slotCount : 0
                input.devices.append(info)
                input.groups += decoded.groups
                if decoded.unplacedTouches > 0 {
                    let milliseconds = decoded.firstUnplacedTime.microseconds / 1000
                    noted?(
                        "device \(index): \(decoded.unplacedTouches) touches began without a position and were left "
                            + "out (the first at \(milliseconds) ms): the kernel had reported where they are before the "
                            + "recording started; start `libinput record` before touching the same spot twice")
                }
                if decoded.ignoredEvents > 0 {
                    noted?(
                        "device \(index): \(decoded.ignoredEvents) events for slots outside \(decoded.slots) were "
                            + "ignored (the first for slot \(decoded.firstIgnoredSlot))")
                }
            case .failure(let problem): return .failure(problem)
            }
        }
        // Several devices: interleave by time; each device's own order is kept (the sort is stable).
        input.groups = input.groups.enumerated()
            .sorted { ($0.element.time, $0.offset) < ($1.element.time, $1.offset) }.map(\.element)
        return .success(input)
    }

    /// The frames of every touch device in the recording, mapped onto the output by a ``TouchRouter`` as the daemon
    /// maps live devices. With an allow-list (the configuration's `[[device]]` entries), a device is used only when
    /// an entry matches its name, ids and node, and lands on that entry's `region`; `ignored` receives the touch
    /// devices left out, and `noted` what else was left out of a device that is used.
    static func frames(
        from text: String, output: Configuration.Output, allowList: [Configuration.DeviceMatch] = [],
        ignored: ((String) -> Void)? = nil, noted: ((String) -> Void)? = nil
    ) -> Result<[Frame], Problem> {
        input(from: text, noted: noted).map { input in
            var router = TouchRouter(output: output, allowList: allowList)
            var frames: [Frame] = []
            for device in input.devices {
                for note in router.handle(.deviceAdded(device), now: 0) {
                    // A device without touch axes (a keyboard in the same recording) is left out without a word.
                    if case .ignored(let info, _) = note, info.isTouchscreen {
                        ignored?(
                            "device \(info.id) (\(quoted(info.name)), \(info.devnode.map(quoted) ?? "no node")) "
                                + "matches no [[device]] entry")
                    }
                }
            }
            for group in input.groups {
                for event in group.events {
                    for note in router.handle(event, now: group.time.microseconds) {
                        if case .frame(let frame, _) = note { frames.append(frame) }
                    }
                }
            }
            return frames
        }
    }

    private typealias Axis = EvdevTouchDecoder.Axis
    private typealias Code = EvdevTouchDecoder.Code

    /// One device's touch events, and what was left out of them.
    private struct DeviceEvents {
        var groups: [Group] = []
        /// Whether the device has the axes of a touch device (otherwise it has no events here).
        var isTouch = false
        /// How many slots it may use.
        var slotCount = 0
        /// The slots the device may use, as text for a note ("0…9").
        var slots = ""
        /// Events for a slot outside the device's range, ignored.
        var ignoredEvents = 0
        /// The first such slot.
        var firstIgnoredSlot = 0
        /// Touches that began without a position (see the SYN_REPORT case), and the first one's time.
        var unplacedTouches = 0
        var firstUnplacedTime = Instant.zero
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

    /// evdev's values are 32-bit (`struct input_event`, `struct input_absinfo`); anything wider in a file is not
    /// from the kernel, and keeping to 32 bits keeps every sum and conversion below exact.
    private static let evdevValues = Int(Int32.min)...Int(Int32.max)

    /// Decodes one device's events. Work per event is constant: a SYN_REPORT visits only the slots that changed
    /// since the last one (a bit mask), never every slot the device has used, so a recording's cost is linear in
    /// its events.
    private static func deviceEvents(
        _ device: [String: Any], index: Int, events total: inout Int
    ) -> Result<DeviceEvents, Problem> {
        var result = DeviceEvents()
        guard let evdev = device["evdev"] as? [String: Any], let absinfo = evdev["absinfo"] as? [AnyHashable: Any]
        else {
            return .success(result)
        }
        func range(_ code: Int) -> Result<(minimum: Int, maximum: Int)?, Problem> {
            guard let values = (absinfo[code] ?? absinfo[String(code)]) as? [Any], values.count >= 2,
                let minimum = integer(values[0]), let maximum = integer(values[1])
            else { return .success(nil) }
            guard evdevValues.contains(minimum), evdevValues.contains(maximum) else {
                return .failure(
                    Problem(
                        message: "device \(index): absinfo \(code) has minimum \(minimum) and maximum \(maximum); "
                            + "evdev's values are 32-bit"))
            }
            return .success((minimum, maximum))
        }
        func axis(_ code: Int) -> Result<Axis?, Problem> {
            // An axis of one value (minimum == maximum) cannot place a touch: the device is not used.
            range(code).map {
                $0.flatMap { $0.maximum > $0.minimum ? Axis(minimum: $0.minimum, maximum: $0.maximum) : nil }
            }
        }
        let positionX: Axis?
        let positionY: Axis?
        let absX: Axis?
        let absY: Axis?
        let slotRange: (minimum: Int, maximum: Int)?
        do {
            positionX = try axis(Code.positionX).get()
            positionY = try axis(Code.positionY).get()
            absX = try axis(Code.absX).get()
            absY = try axis(Code.absY).get()
            slotRange = try range(Code.slot).get()
        } catch {
            return .failure(error)
        }
        let multitouch = positionX != nil && positionY != nil
        guard let xAxis = multitouch ? positionX : absX, let yAxis = multitouch ? positionY : absY
        else { return .success(result) }  // not a touch device (a keyboard in the same recording)
        result.isTouch = true
        // index < maximumDevices and slot < maximumSlots, so seat slots (index × 1000 + slot) stay far from overflow.
        var decoder = EvdevTouchDecoder(
            device: index, multitouch: multitouch, x: xAxis, y: yAxis, slotRange: slotRange, seatSlotBase: index * 1000)
        result.slots = decoder.slotText
        result.slotCount = decoder.slotCount
        guard let events = device["events"] as? [Any] else { return .success(result) }
        var decoded: [InputEvent] = []
        for entry in events {
            guard let entry = entry as? [String: Any], let list = entry["evdev"] as? [Any] else { continue }
            total += list.count
            guard total <= maximumEvents else {
                return .failure(
                    Problem(message: "the recording holds more than \(maximumEvents) evdev events, the most allowed"))
            }
            for raw in list {
                /// The event refused, and why: quoted, and cut, since an event may hold a string of megabytes.
                func malformed(_ reason: String? = nil) -> Result<DeviceEvents, Problem> {
                    .failure(
                        Problem(
                            message: "device \(index): malformed event \(quoted(raw))"
                                + (reason.map { ": " + $0 } ?? "")
                        ))
                }
                guard let event = raw as? [Any], event.count == 5,
                    let seconds = integer(event[0]), let microseconds = integer(event[1]),
                    let type = integer(event[2]), let code = integer(event[3]), let value = integer(event[4])
                else {
                    return malformed()
                }
                guard (0..<maximumSeconds).contains(seconds), (0..<1_000_000).contains(microseconds) else {
                    return malformed(
                        "the time must be 0…\(maximumSeconds - 1) seconds and 0…999999 microseconds")
                }
                guard (0...0xFFFF).contains(type), (0...0xFFFF).contains(code) else {
                    return malformed("the type and code must be 0…65535")
                }
                // Not ignored like a slot out of range: no kernel sends such a value, so the file is not a recording.
                guard evdevValues.contains(value) else {
                    return malformed("the value \(value) is outside evdev's 32-bit range")
                }
                // Both ranges checked above: at most 2^40 × 10^6 + 10^6 µs, below 2^61.
                let (scaled, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000)
                let (stamp, carry) = scaled.addingReportingOverflow(UInt64(microseconds))
                guard !overflow, !carry else { return malformed("time out of range") }
                let time = Instant(microseconds: stamp)
                decoder.decode(time: time, type: type, code: code, value: value, into: &decoded)
                if !decoded.isEmpty {
                    result.groups.append(Group(time: time, events: decoded))
                    decoded.removeAll()
                }
            }
        }
        result.ignoredEvents = decoder.ignoredEvents
        result.firstIgnoredSlot = decoder.firstIgnoredSlot
        result.unplacedTouches = decoder.unplacedTouches
        result.firstUnplacedTime = decoder.firstUnplacedTime
        return .success(result)
    }

    /// The first mapping key in the tree that is not a scalar, nil when every key is one. Iterative, with a stack of its
    /// own: the tree nests as deep as libyaml allows.
    private static func nonScalarKey(in root: Node?) -> Node? {
        var pending = root.map { [$0] } ?? []
        while let node = pending.popLast() {
            switch node {
            case .mapping(let mapping):
                for (key, value) in mapping {
                    guard case .scalar = key else { return key }
                    pending.append(value)
                }
            case .sequence(let sequence):
                pending.append(contentsOf: sequence)
            case .scalar, .alias:
                break
            }
        }
        return nil
    }

    /// A value of the file as a message shows it: cut to `maximumQuoted` characters.
    static func quoted(_ value: Any) -> String {
        let text = value as? String ?? "\(value)"
        return text.count <= maximumQuoted ? text : text.prefix(maximumQuoted) + "…"
    }

    /// Yams' error as a message: where and what. Not Yams' own description, which quotes the text: the whole line of
    /// the problem (a recording of one 16 MiB line makes a 32 MiB message) or, for duplicate keys, the whole file.
    static func describe(_ error: any Error) -> String {
        guard let error = error as? YamlError else { return quoted(error) }
        switch error {
        case .reader(let problem, let offset, _, _):
            return quoted(problem) + (offset.map { " at offset \($0)" } ?? "")
        case .scanner(let context, let problem, let mark, _), .parser(let context, let problem, let mark, _),
            .composer(let context, let problem, let mark, _):
            let during = context.map { "\(quoted($0.text)) (\(position($0.mark))): " } ?? ""
            return "\(position(mark)): \(during)\(quoted(problem))"
        case .duplicatedKeysInMapping(let duplicates, let context):
            let shown = duplicates.prefix(3).map { "'\(quoted($0))'" }.joined(separator: ", ")
            let more = duplicates.count > 3 ? " and \(duplicates.count - 3) more" : ""
            return "\(position(context.mark)): duplicate keys \(shown)\(more)"
        default:
            return quoted(error)
        }
    }

    /// A position in the file as messages give it.
    private static func position(_ mark: Mark) -> String { "line \(mark.line), column \(mark.column)" }

    private static func integer(_ value: Any) -> Int? {
        if let number = value as? Int { return number }
        if let string = value as? String { return Int(string) }
        return nil
    }
}
