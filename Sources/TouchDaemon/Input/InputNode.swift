/// One event node on the seat as udev and sysfs describe it, whether libinput uses it or not: what `touchd identify`
/// lists and what filter mode's sibling grab looks among. Made by ``InputNodeSurvey`` from udev; tests make them by
/// hand. Pure: nothing here reads the system.
struct InputNode: Hashable, Sendable {
    /// What udev says a node reports (its `ID_INPUT_*` properties, set by udev's input_id builtin from the node's
    /// capabilities).
    enum Kind: String, Hashable, Sendable, CaseIterable {
        case touchscreen, tablet, touchpad, mouse, pointingstick, joystick, keyboard, key, `switch`, accelerometer

        /// The udev property that says it: `ID_INPUT_TOUCHSCREEN` for ``touchscreen``.
        var property: String { "ID_INPUT_" + rawValue.uppercased() }
    }

    /// The device a node's input device hangs from in sysfs, found by ``physicalDevice(ancestors:)``.
    struct PhysicalDevice: Hashable, Sendable {
        enum Bus: String, Hashable, Sendable {
            /// A USB device (`usb_device`): every interface and HID device on it.
            case usb
            /// A HID device (I²C, Bluetooth, uhid): every application collection of it.
            case hid
            /// The input device's parent, whatever it is (a serio port, a platform device).
            case parent
        }

        var bus: Bus
        var syspath: String
    }

    /// One of a node's sysfs ancestors, from the input device's parent upwards: the seam through which tests give
    /// ``physicalDevice(ancestors:)`` a device tree.
    struct Ancestor: Hashable, Sendable {
        var syspath: String
        var subsystem: String?
        var devtype: String?
    }

    /// `event5`.
    var sysname: String
    /// `/dev/input/event5`.
    var devnode: String?
    /// The input device's `name`.
    var name: String
    var vendor: Int
    var product: Int
    /// The input device's `phys` (`usb-0000:00:14.0-1/input0`); empty when the driver gives none.
    var phys: String
    /// The input device's `uniq` (a serial number); empty when the driver gives none.
    var uniq: String
    /// The event node's udev syspath.
    var syspath: String
    /// What udev says it reports; empty before udev has seen it.
    var kinds: Set<Kind>
    /// The node's input device has `ABS_MT_SLOT`: a multitouch device with slots (protocol B).
    var hasSlots: Bool
    /// The USB or HID device (or other parent) the node belongs to; nil for a device with no parent in sysfs (uinput).
    var physicalDevice: PhysicalDevice?
    /// udev's `LIBINPUT_CALIBRATION_MATRIX` property as written, when the node has one.
    var calibrationProperty: String?
    /// udev's symlinks to the node and its `ID_PATH`, for `[[device]] match_path`.
    var links: [String]

    /// Whether the kernel placed the node under `/sys/devices/virtual/` (uinput, uhid).
    var isVirtual: Bool { DeviceInfo.isVirtual(syspath: syspath) }

    /// A pointer the compositor moves a cursor with: a mouse, touchpad, pointing stick or a tablet that is not a
    /// touchscreen.
    var isPointer: Bool {
        guard !kinds.contains(.touchscreen) else { return false }
        return !kinds.isDisjoint(with: [.mouse, .touchpad, .pointingstick, .tablet])
    }

    /// The kinds in a fixed order, for output.
    var sortedKinds: [Kind] { Kind.allCases.filter { kinds.contains($0) } }

    /// `phys` without its last `/inputN` part: what every interface of one USB device shares
    /// (`usb-0000:00:14.0-1/input0` and `…/input1` give `usb-0000:00:14.0-1`). Empty when `phys` is.
    var physPrefix: String {
        guard let slash = phys.lastIndex(of: "/") else { return phys }
        let last = phys[phys.index(after: slash)...]
        guard last.hasPrefix("input"), last.count > 5, last.dropFirst(5).allSatisfy(\.isASCII),
            last.dropFirst(5).allSatisfy(\.isNumber)
        else { return phys }
        return String(phys[..<slash])
    }

    /// The device a node belongs to, from its input device's ancestors (parent first): the nearest USB device (all
    /// its interfaces: hid-multitouch on one, hid-generic on another), else the nearest HID device (all its
    /// application collections), else the parent itself. Nil without ancestors (a uinput device hangs from
    /// `/sys/devices/virtual/input`, which is no device).
    static func physicalDevice(ancestors: [Ancestor]) -> PhysicalDevice? {
        if let usb = ancestors.first(where: { $0.subsystem == "usb" && $0.devtype == "usb_device" }) {
            return PhysicalDevice(bus: .usb, syspath: usb.syspath)
        }
        if let hid = ancestors.first(where: { $0.subsystem == "hid" }) {
            return PhysicalDevice(bus: .hid, syspath: hid.syspath)
        }
        return ancestors.first.map { PhysicalDevice(bus: .parent, syspath: $0.syspath) }
    }

    /// Why two nodes count as one physical device's.
    enum SiblingReason: String, Hashable, Sendable {
        case sameUSBDevice = "same USB device"
        case sameHIDDevice = "same HID device"
        case sameParent = "same parent device"
        case samePhys = "same phys"
        case sameUniq = "same uniq"
    }

    /// Another node of the same physical device as a panel.
    struct Sibling: Hashable, Sendable {
        var node: InputNode
        var reason: SiblingReason

        /// Whether filter mode grabs it (`[filter] grab_siblings`): a pointer tied to the panel by sysfs or `phys`, not
        /// by `uniq` alone (a serial number some makers repeat on every unit).
        var isGrabbable: Bool { node.isPointer && reason != .sameUniq }

        /// What the sibling does to a kiosk, for `touchd identify`.
        var effect: String {
            if node.isPointer {
                return "a pointer: the compositor shows a cursor for it, and a panel that also reports touches"
                    + " through it clicks twice per tap"
            }
            if node.kinds.contains(.touchscreen) { return "another touchscreen interface of the same device" }
            if !node.kinds.isDisjoint(with: [.keyboard, .key]) {
                return "keys: the panel's buttons reach the focused application as key presses"
            }
            return "no pointer or keys"
        }
    }

    /// The other nodes of `panel`'s physical device among `nodes`, in `nodes`' order: the same USB device, HID device
    /// or parent in sysfs, or (for devices sysfs does not tie together) the same `phys` prefix or the same `uniq` with
    /// the same vendor and product. `phys` and `uniq` count only between nodes that are both virtual or both not: a
    /// program's uinput copy of the panel (touchd's own twin among them) is not a sibling.
    static func siblings(of panel: InputNode, among nodes: [InputNode]) -> [Sibling] {
        nodes.compactMap { other in
            guard other.sysname != panel.sysname, let reason = siblingReason(panel, other) else { return nil }
            return Sibling(node: other, reason: reason)
        }
    }

    private static func siblingReason(_ a: InputNode, _ b: InputNode) -> SiblingReason? {
        if let device = a.physicalDevice, device == b.physicalDevice {
            switch device.bus {
            case .usb: return .sameUSBDevice
            case .hid: return .sameHIDDevice
            case .parent: return .sameParent
            }
        }
        guard a.isVirtual == b.isVirtual else { return nil }
        if !a.physPrefix.isEmpty, a.physPrefix == b.physPrefix { return .samePhys }
        if !a.uniq.isEmpty, a.uniq == b.uniq, a.vendor == b.vendor, a.product == b.product { return .sameUniq }
        return nil
    }

    /// The sibling nodes filter mode grabs beside `panel` (`[filter] grab_siblings`, ``Sibling/isGrabbable``), never
    /// one of `excluded` (touchd's own twins).
    static func grabbableSiblings(of panel: InputNode, among nodes: [InputNode], excluded: Set<String>) -> [InputNode] {
        siblings(of: panel, among: nodes).compactMap { sibling in
            guard sibling.isGrabbable else { return nil }
            if let node = sibling.node.devnode, excluded.contains(node) { return nil }
            return sibling.node
        }
    }

    /// The bits of a sysfs capability bitmap (`capabilities/abs`: hexadecimal words, most significant first,
    /// separated by spaces) that are set; nil when the text is not such a bitmap. Each word is as wide as the kernel's
    /// `long` (64 bits here); at most 64 words are read.
    static func capabilityBits(_ text: String, wordBits: Int = 64) -> Set<Int>? {
        let words = text.split(whereSeparator: { $0 == " " || $0 == "\n" })
        guard !words.isEmpty, words.count <= 64, wordBits > 0, wordBits <= 64 else { return nil }
        var bits: Set<Int> = []
        for (index, word) in words.reversed().enumerated() {
            guard word.count <= wordBits / 4, let value = UInt64(word, radix: 16) else { return nil }
            for bit in 0..<wordBits where value & (1 << UInt64(bit)) != 0 {
                bits.insert(index * wordBits + bit)
            }
        }
        return bits
    }

    /// `ABS_MT_SLOT`.
    static let absMTSlot = 0x2f
}
