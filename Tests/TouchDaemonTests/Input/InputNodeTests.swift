import Testing
import TouchModel

@testable import TouchDaemon

/// Sibling nodes from sysfs-like facts: which nodes belong to one physical device, and which filter mode grabs.
@Suite("input nodes and their siblings")
struct InputNodeTests {
    static let usbDevice = "/sys/devices/pci0000:00/0000:00:14.0/usb1/1-4"

    static func ancestors(interface: Int, hid: Int) -> [InputNode.Ancestor] {
        [
            .init(syspath: "\(usbDevice)/1-4:1.\(interface)/0003:222A:0001.000\(hid)", subsystem: "hid", devtype: nil),
            .init(syspath: "\(usbDevice)/1-4:1.\(interface)", subsystem: "usb", devtype: "usb_interface"),
            .init(syspath: usbDevice, subsystem: "usb", devtype: "usb_device"),
            .init(syspath: "/sys/devices/pci0000:00/0000:00:14.0/usb1", subsystem: "usb", devtype: "usb_device"),
        ]
    }

    static func node(
        _ number: Int, name: String = "ILITEK Multi-Touch", kinds: Set<InputNode.Kind>, phys: String = "",
        uniq: String = "", ancestors: [InputNode.Ancestor] = [], virtual: Bool = false, vendor: Int = 0x222a
    ) -> InputNode {
        let base = virtual ? "/sys/devices/virtual/input/input\(number)" : "\(usbDevice)/input/input\(number)"
        return InputNode(
            sysname: "event\(number)", devnode: "/dev/input/event\(number)", name: name, vendor: vendor,
            product: 0x0001, phys: phys, uniq: uniq, syspath: "\(base)/event\(number)", kinds: kinds,
            hasSlots: kinds.contains(.touchscreen), physicalDevice: InputNode.physicalDevice(ancestors: ancestors),
            calibrationProperty: nil, links: [])
    }

    /// hid-multitouch on interface 0, hid-generic's mouse on interface 1 of one USB panel.
    static let panel = node(
        3, kinds: [.touchscreen], phys: "usb-0000:00:14.0-4/input0", ancestors: ancestors(interface: 0, hid: 1))
    static let mouse = node(
        4, name: "ILITEK Multi-Touch Mouse", kinds: [.mouse], phys: "usb-0000:00:14.0-4/input1",
        ancestors: ancestors(interface: 1, hid: 2))
    static let keyboard = node(
        1, name: "AT Translated Set 2 keyboard", kinds: [.keyboard, .key], phys: "isa0060/serio0/input0",
        ancestors: [.init(syspath: "/sys/devices/platform/i8042/serio0", subsystem: "serio", devtype: nil)],
        vendor: 1)
    static let otherMouse = node(
        7, name: "Logitech USB Optical Mouse", kinds: [.mouse], phys: "usb-0000:00:14.0-2/input0",
        ancestors: [
            .init(syspath: "/sys/devices/pci0000:00/0000:00:14.0/usb1/1-2", subsystem: "usb", devtype: "usb_device")
        ],
        vendor: 0x046d)

    @Test("the physical device: the nearest USB device, else the HID device, else the parent, none for uinput")
    func physicalDevice() {
        #expect(
            InputNode.physicalDevice(ancestors: Self.ancestors(interface: 1, hid: 2))
                == .init(bus: .usb, syspath: Self.usbDevice))
        let uhid = "/sys/devices/virtual/misc/uhid/0003:222A:0001.0004"
        #expect(
            InputNode.physicalDevice(ancestors: [
                .init(syspath: uhid, subsystem: "hid", devtype: nil),
                .init(syspath: "/sys/devices/virtual/misc/uhid", subsystem: "misc", devtype: nil),
            ]) == .init(bus: .hid, syspath: uhid))
        #expect(
            InputNode.physicalDevice(ancestors: [
                .init(syspath: "/sys/devices/LNXSYSTM:00/LNXPWRBN:00", subsystem: "acpi")
            ])
                == .init(bus: .parent, syspath: "/sys/devices/LNXSYSTM:00/LNXPWRBN:00"))
        #expect(InputNode.physicalDevice(ancestors: []) == nil)
    }

    @Test("a mouse on another interface of the panel's USB device is its sibling; a mouse on another port is not")
    func usbSibling() {
        let nodes = [Self.keyboard, Self.panel, Self.mouse, Self.otherMouse]
        let siblings = InputNode.siblings(of: Self.panel, among: nodes)
        #expect(siblings.map(\.node.sysname) == ["event4"])
        #expect(siblings.first?.reason == .sameUSBDevice)
        #expect(siblings.first?.effect.contains("cursor") == true)
        #expect(InputNode.grabbableSiblings(of: Self.panel, among: nodes, excluded: []).map(\.sysname) == ["event4"])
    }

    @Test("phys prefix ties nodes sysfs does not (uhid); only between nodes equally virtual")
    func physSibling() {
        let panel = Self.node(10, kinds: [.touchscreen], phys: "usb-0000:00:14.0-4/input0", virtual: true)
        let mouse = Self.node(11, kinds: [.mouse], phys: "usb-0000:00:14.0-4/input1", virtual: true)
        let stranger = Self.node(12, kinds: [.mouse], phys: "usb-0000:00:14.0-5/input1", virtual: true)
        let realMouse = Self.node(13, kinds: [.mouse], phys: "usb-0000:00:14.0-4/input1")
        let siblings = InputNode.siblings(of: panel, among: [panel, mouse, stranger, realMouse])
        #expect(siblings.map(\.node.sysname) == ["event11"])
        #expect(siblings.first?.reason == .samePhys)
    }

    @Test("uniq ties nodes of the same make only, and is not enough for a grab")
    func uniqSibling() {
        let panel = Self.node(20, kinds: [.touchscreen], uniq: "SN123", virtual: true)
        let mouse = Self.node(21, kinds: [.mouse], uniq: "SN123", virtual: true)
        let otherMake = Self.node(22, kinds: [.mouse], uniq: "SN123", virtual: true, vendor: 0x1234)
        let siblings = InputNode.siblings(of: panel, among: [panel, mouse, otherMake])
        #expect(siblings.map(\.node.sysname) == ["event21"])
        #expect(siblings.first?.reason == .sameUniq)
        #expect(InputNode.grabbableSiblings(of: panel, among: [panel, mouse, otherMake], excluded: []).isEmpty)
    }

    @Test("filter mode grabs pointer siblings only, never a touchscreen, a keyboard or touchd's own twin")
    func grabbable() {
        let keys = Self.node(
            5, name: "ILITEK Keys", kinds: [.keyboard, .key], phys: "usb-0000:00:14.0-4/input2",
            ancestors: Self.ancestors(interface: 2, hid: 3))
        let pen = Self.node(
            6, name: "ILITEK Pen", kinds: [.touchscreen, .tablet], ancestors: Self.ancestors(interface: 0, hid: 1))
        let nodes = [Self.panel, Self.mouse, keys, pen]
        #expect(InputNode.siblings(of: Self.panel, among: nodes).map(\.node.sysname) == ["event4", "event5", "event6"])
        #expect(InputNode.grabbableSiblings(of: Self.panel, among: nodes, excluded: []).map(\.sysname) == ["event4"])
        #expect(InputNode.grabbableSiblings(of: Self.panel, among: nodes, excluded: ["/dev/input/event4"]).isEmpty)
    }

    @Test(
        "the phys prefix drops the last /inputN only",
        arguments: [
            ("usb-0000:00:14.0-4/input0", "usb-0000:00:14.0-4"), ("isa0060/serio0/input0", "isa0060/serio0"),
            ("usb-0000:00:14.0-4/input12", "usb-0000:00:14.0-4"), ("touchd-panel", "touchd-panel"),
            ("a/inputx", "a/inputx"), ("a/input", "a/input"), ("", ""),
        ])
    func physPrefix(phys: String, prefix: String) {
        var node = Self.panel
        node.phys = phys
        #expect(node.physPrefix == prefix)
    }

    @Test("capability bitmaps: words most significant first; anything else is refused")
    func capabilityBits() {
        // A multitouch panel's abs bits: X, Y, and ABS_MT_SLOT (0x2f) through ABS_MT_TRACKING_ID (0x39).
        let bits = InputNode.capabilityBits("3ff800000000003\n")
        #expect(bits?.contains(0) == true)
        #expect(bits?.contains(1) == true)
        #expect(bits?.contains(InputNode.absMTSlot) == true)
        #expect(InputNode.capabilityBits("1 0")?.sorted() == [64])
        #expect(InputNode.capabilityBits("") == nil)
        #expect(InputNode.capabilityBits("xyz") == nil)
        #expect(InputNode.capabilityBits("11112222333344445") == nil)
        #expect(InputNode.capabilityBits(Array(repeating: "0", count: 65).joined(separator: " ")) == nil)
    }
}
