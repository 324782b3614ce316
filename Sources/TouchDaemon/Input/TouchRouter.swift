import Glibc
import TouchModel

/// Turns decoded libinput events into the model's frames: decides which devices are used (touchscreens that pass the
/// `[[device]]` allow-list), maps their positions onto the output, keys contacts by seat slot, batches samples until
/// the device's TOUCH_FRAME, and cancels a removed device's contacts. Pure: time is passed in, nothing is read.
struct TouchRouter {
    /// What happened, for the daemon to log, count and feed to the scene.
    enum Note: Hashable, Sendable {
        /// A frame for the scene; `device` is the sysname of the touchscreen it came from. The name alone, not the
        /// device's whole description: a frame is on every touch's path, and copying a ``DeviceInfo`` (strings and
        /// arrays) out of the note was a witness of its own there.
        case frame(Frame, device: String)
        /// A touchscreen that will be used. (The device notes are boxed: inline, a device's description made every
        /// note as large, frames included.)
        indirect case accepted(DeviceInfo)
        /// A device that will not be used, and why.
        indirect case ignored(DeviceInfo, reason: String)
        /// A device went away. Its contacts, if any were down, arrive as a frame of cancellations just before.
        indirect case removed(DeviceInfo, wasUsed: Bool)
        /// A contact the scene no longer tracks (orphaned by a reload, lost events or a suspend) moved (`at` its new
        /// output position) or lifted (`at` nil) on `device`: the scene never sees it, but filter mode may still carry
        /// the application's copy of it to its real end.
        case orphan(ContactID, at: Point?, device: Int)
    }

    private var output: Configuration.Output
    private var allowList: [Configuration.DeviceMatch]
    /// `[input] ignore_virtual`: virtual devices are never used, whatever the allow-list says.
    private var ignoresVirtual: Bool
    /// Every device libinput announced and has not removed, used or not.
    private var known: SmallMap<Int, DeviceInfo> = [:]
    /// The used touchscreens and where each lands on the output.
    private var mappers: SmallMap<Int, CoordinateMapper> = [:]
    /// Samples of each device waiting for its TOUCH_FRAME.
    private var pending: SmallMap<Int, PendingSamples> = [:]
    /// Contacts that are down: seat slot → device.
    private var active: SmallMap<ContactID, Int> = [:]
    /// Contacts still down that the scene no longer knows (their device stopped being used or the configuration was
    /// reloaded). Their events are dropped until they lift, so a reload never produces touches that began nowhere.
    private var orphaned: SmallSet<ContactID> = []
    /// Touch events dropped because their device is not used or their contact was orphaned.
    private(set) var droppedEvents = 0
    /// Where each contact last went down: its device and the device's own slot (−1 on single-touch devices). Kept
    /// after the lift, for the application's copy of a touch that outlives its contact (filter mode).
    private var origins: SmallMap<ContactID, (device: Int, slot: Int)> = [:]

    /// A device's samples since its last frame. The array is lent to the frame that carries them (`sent`) and emptied,
    /// keeping its room, when the device's next sample comes: by then the frame has been handled and the array is the
    /// router's alone again, so a touch's path makes and frees no array per frame. Had the frame been kept,
    /// emptying would copy the array first: a lent array never changes under its frame.
    private struct PendingSamples {
        var samples: [ContactSample]
        /// The samples went out in a frame: the next sample starts a new batch.
        var sent = false
    }

    init(output: Configuration.Output, allowList: [Configuration.DeviceMatch], ignoresVirtual: Bool = false) {
        self.output = output
        self.allowList = allowList
        self.ignoresVirtual = ignoresVirtual
    }

    /// The touchscreens in use, in the order they were added.
    var touchscreens: [DeviceInfo] {
        mappers.keys.sorted().compactMap { known[$0] }
    }

    /// The device and device slot where `contact` last went down.
    func origin(of contact: ContactID) -> (device: Int, slot: Int)? {
        origins[contact]
    }

    /// The mapping in use for `device`, nil when it is not used.
    func mapper(for device: Int) -> CoordinateMapper? {
        mappers[device]
    }

    /// The normalised device position of an output position on `device`, as libinput reported it (filter mode).
    func devicePosition(of point: Point, on device: Int) -> (x: Double, y: Double)? {
        mappers[device]?.unmap(point)
    }

    /// The contacts that are down and known to the scene.
    var activeContacts: [ContactID] {
        active.keys.filter { !orphaned.contains($0) }.sorted()
    }

    /// Whether a contact is down and known to the scene (``activeContacts`` without the array).
    var hasActiveContacts: Bool { active.keys.contains { !orphaned.contains($0) } }

    /// Marks every contact that is down as orphaned and returns them, for the caller to cancel in the scene: their
    /// further motion and their lift are dropped, so a contact that was down across a suspend never ends as a tap.
    /// A new touch-down in the same seat slot starts a fresh contact.
    mutating func orphanActiveContacts() -> [ContactID] {
        let contacts = activeContacts
        orphaned.formUnion(contacts)
        return contacts
    }

    mutating func handle(_ event: InputEvent, now: UInt64) -> [Note] {
        var notes: [Note] = []
        handle(event, now: now, into: &notes)
        return notes
    }

    /// Appends what `event` caused to `notes`: the input loop's way, with one array kept for every event, so that a
    /// touch event (which most often causes nothing until its frame) makes and frees no array.
    mutating func handle(_ event: InputEvent, now: UInt64, into notes: inout [Note]) {
        switch event {
        case .deviceAdded(let info):
            known[info.id] = info
            notes.append(evaluate(info))
        case .deviceRemoved(let id):
            guard let info = known.removeValue(forKey: id) else { return }
            let wasUsed = mappers.removeValue(forKey: id) != nil
            pending[id] = nil
            origins.removeAll { $1.device == id }
            let left = active.filter { $0.value == id }.map(\.key).sorted()
            var cancellations: [ContactSample] = []
            for contact in left {
                active[contact] = nil
                if orphaned.remove(contact) == nil { cancellations.append(.cancelled(contact)) }
            }
            if !cancellations.isEmpty {
                notes.append(
                    .frame(Frame(time: Instant(microseconds: now), samples: cancellations), device: info.sysname))
            }
            notes.append(.removed(info, wasUsed: wasUsed))
        case .touch(let touch):
            handle(touch, into: &notes)
        case .eventsLost(let device):
            notes.append(contentsOf: eventsLost(device: device, now: now))
        }
    }

    /// After SYN_DROPPED (fault-cases.md D5): the contacts that were down on `device` (every device when nil) end
    /// with a frame of cancellations, one per device, and are orphaned: their further motion and their lift are
    /// dropped. The resync reports a lift without the lost motion, so a drag that ended far outside a control would
    /// otherwise end as a tap inside it. The same for live input and for recordings, so they cannot disagree.
    private mutating func eventsLost(device: Int?, now: UInt64) -> [Note] {
        var byDevice: [Int: [ContactSample]] = [:]
        for contact in activeContacts {
            guard let owner = active[contact], device == nil || owner == device else { continue }
            orphaned.insert(contact)
            byDevice[owner, default: []].append(.cancelled(contact))
        }
        return byDevice.keys.sorted().compactMap { id in
            known[id].map {
                .frame(Frame(time: Instant(microseconds: now), samples: byDevice[id]!), device: $0.sysname)
            }
        }
    }

    /// Applies a new configuration: the allow-list and mapping are re-evaluated for every known device, and every
    /// contact that is down becomes orphaned (the caller cancels them in the old scene first: see ``activeContacts``).
    mutating func reconfigure(
        output: Configuration.Output, allowList: [Configuration.DeviceMatch], ignoresVirtual: Bool = false
    ) -> [Note] {
        self.output = output
        self.allowList = allowList
        self.ignoresVirtual = ignoresVirtual
        orphaned.formUnion(active.keys)
        pending.removeAll()
        let before = Set(mappers.keys)
        mappers.removeAll()
        var notes: [Note] = []
        for id in known.keys.sorted() {
            let note = evaluate(known[id]!)
            // Only changes are worth reporting after a reload.
            if case .accepted = note, before.contains(id) { continue }
            if case .ignored = note, !before.contains(id) { continue }
            notes.append(note)
        }
        return notes
    }

    private mutating func evaluate(_ info: DeviceInfo) -> Note {
        switch Self.decide(info, allowList: allowList, ignoresVirtual: ignoresVirtual) {
        case .ignored(let reason):
            return .ignored(info, reason: reason)
        case .used(let entry):
            mappers[info.id] = CoordinateMapper(output: output, device: entry.map { allowList[$0] })
            return .accepted(info)
        }
    }

    /// Whether a device is used, and through which `[[device]]` entry.
    enum Decision: Hashable, Sendable {
        /// Used; `entry` is the index of the first `[[device]]` entry that matches it, nil without entries.
        case used(entry: Int?)
        case ignored(reason: String)
    }

    /// Whether touchd uses `info` under an allow-list: the one rule for `run`, `simulate` and `identify`.
    static func decide(_ info: DeviceInfo, allowList: [Configuration.DeviceMatch], ignoresVirtual: Bool) -> Decision {
        guard info.isTouchscreen else { return .ignored(reason: "not a touchscreen") }
        // Before the allow-list: a clone copies the name and ids an entry matches.
        if ignoresVirtual, info.isVirtual {
            return .ignored(reason: "a virtual input device, not a panel on a port ([input] ignore_virtual)")
        }
        guard !allowList.isEmpty else { return .used(entry: nil) }
        guard let index = allowList.firstIndex(where: { $0.matches(info) }) else {
            return .ignored(reason: "no [[device]] entry matches it")
        }
        return .used(entry: index)
    }

    private mutating func handle(_ touch: TouchEvent, into notes: inout [Note]) {
        guard let mapper = mappers[touch.device] else {
            droppedEvents &+= 1
            return
        }
        let contact = touch.seatSlot
        switch touch.kind {
        case .frame:
            guard let batch = pending.index(forKey: touch.device), !pending[valueAt: batch].sent else { return }
            pending[valueAt: batch].sent = true
            guard !pending[valueAt: batch].samples.isEmpty, let known = known.index(forKey: touch.device) else {
                return
            }
            let samples = pending[valueAt: batch].samples
            let sysname = self.known[valueAt: known].sysname
            notes.append(.frame(Frame(time: Instant(microseconds: touch.time), samples: samples), device: sysname))
        case .down:
            orphaned.remove(contact)
            active[contact] = touch.device
            origins[contact] = (touch.device, touch.slot)
            append(.began(contact, at: position(touch, mapper)), for: touch.device)
        case .motion:
            guard !isOrphaned(contact) else {
                notes.append(.orphan(contact, at: position(touch, mapper), device: touch.device))
                return
            }
            append(.moved(contact, to: position(touch, mapper)), for: touch.device)
        case .up, .cancel:
            let wasOrphaned = isOrphaned(contact)
            active[contact] = nil
            orphaned.remove(contact)
            guard !wasOrphaned else {
                notes.append(.orphan(contact, at: nil, device: touch.device))
                return
            }
            append(touch.kind == .up ? .ended(contact) : .cancelled(contact), for: touch.device)
        }
    }

    private mutating func isOrphaned(_ contact: ContactID) -> Bool {
        guard orphaned.contains(contact) else { return false }
        droppedEvents &+= 1
        return true
    }

    private mutating func append(_ sample: ContactSample, for device: Int) {
        guard let batch = pending.index(forKey: device) else {
            pending[device] = PendingSamples(samples: [sample])
            return
        }
        if pending[valueAt: batch].sent {
            pending[valueAt: batch].samples.removeAllKeepingCapacity()
            pending[valueAt: batch].sent = false
        }
        pending[valueAt: batch].samples.append(sample)
    }

    /// The output position, or a point the scene rejects as invalid when libinput gave no finite position.
    private func position(_ touch: TouchEvent, _ mapper: CoordinateMapper) -> Point {
        guard let x = touch.x, let y = touch.y, let point = mapper.map(x: x, y: y) else {
            return Point(x: .nan, y: .nan)
        }
        return point
    }
}

extension Configuration.DeviceMatch {
    /// Whether every matcher this entry gives matches the device. Names and paths are shell globs (`fnmatch`);
    /// a path matches the device node, any of its udev symlinks (`/dev/input/by-path/…`) or its `ID_PATH`.
    func matches(_ device: DeviceInfo) -> Bool {
        if let name, !Self.glob(name, matches: device.name) { return false }
        if let vendor, vendor != device.vendor { return false }
        if let product, product != device.product { return false }
        if let path {
            let candidates = (device.devnode.map { [$0] } ?? []) + device.links
            guard candidates.contains(where: { Self.glob(path, matches: $0) }) else { return false }
        }
        return true
    }

    static func glob(_ pattern: String, matches text: String) -> Bool {
        fnmatch(pattern, text, 0) == 0
    }
}
