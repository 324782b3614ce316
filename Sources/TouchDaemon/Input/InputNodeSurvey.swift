import CLibinput
import Glibc

/// Reads udev's database for the event nodes of a seat (``InputNode`` values). Opens no device node: it reads sysfs
/// attributes and udev properties only, so it never disturbs a running touchd or compositor.
enum InputNodeSurvey {
    /// The seat's event nodes, sorted by number (`event2` before `event10`); nil when udev cannot be read.
    static func scan(seat: String) -> [InputNode]? {
        guard let udev = udev_new() else { return nil }
        defer { udev_unref(udev) }
        var nodes: [InputNode] = []
        let read = UdevEventNodes.forEach(udev: udev, seat: seat) { device in
            if let node = describe(device) { nodes.append(node) }
        }
        guard read else { return nil }
        return nodes.sorted { order($0.sysname) < order($1.sysname) }
    }

    /// `event12` sorts as (12, "event12"): numerically, then by name for anything else.
    private static func order(_ sysname: String) -> (Int, String) {
        (Int(sysname.drop(while: { !$0.isNumber })) ?? Int.max, sysname)
    }

    private static func describe(_ device: OpaquePointer) -> InputNode? {
        guard let sysnamePointer = udev_device_get_sysname(device), let syspathPointer = udev_device_get_syspath(device)
        else { return nil }
        // Name, ids, phys, uniq and capabilities are the input device's (inputN), the event node's parent.
        let input = udev_device_get_parent_with_subsystem_devtype(device, "input", nil)
        func attribute(_ name: String) -> String? {
            input.flatMap { udev_device_get_sysattr_value($0, name) }.map {
                String(cString: $0).trimmingTrailingNewlines()
            }
        }
        var kinds: Set<InputNode.Kind> = []
        for kind in InputNode.Kind.allCases where property(device, kind.property) == "1" { kinds.insert(kind) }
        var links: [String] = []
        var link = udev_device_get_devlinks_list_entry(device)
        while let current = link {
            if let name = udev_list_entry_get_name(current) { links.append(String(cString: name)) }
            link = udev_list_entry_get_next(current)
        }
        if let idPath = property(device, "ID_PATH") { links.append(idPath) }
        let absBits = attribute("capabilities/abs").flatMap { InputNode.capabilityBits($0) } ?? []
        var ancestors: [InputNode.Ancestor] = []
        var parent = input.flatMap { udev_device_get_parent($0) }
        // A device tree is a few levels deep; 32 bounds a loop over whatever sysfs says.
        while let current = parent, ancestors.count < 32 {
            ancestors.append(
                InputNode.Ancestor(
                    syspath: String(cString: udev_device_get_syspath(current)),
                    subsystem: udev_device_get_subsystem(current).map { String(cString: $0) },
                    devtype: udev_device_get_devtype(current).map { String(cString: $0) }))
            parent = udev_device_get_parent(current)
        }
        return InputNode(
            sysname: String(cString: sysnamePointer),
            devnode: udev_device_get_devnode(device).map { String(cString: $0) },
            name: attribute("name") ?? String(cString: sysnamePointer),
            vendor: attribute("id/vendor").flatMap { Int($0, radix: 16) } ?? 0,
            product: attribute("id/product").flatMap { Int($0, radix: 16) } ?? 0,
            phys: attribute("phys") ?? "",
            uniq: attribute("uniq") ?? "",
            syspath: String(cString: syspathPointer),
            kinds: kinds,
            hasSlots: absBits.contains(InputNode.absMTSlot),
            physicalDevice: InputNode.physicalDevice(ancestors: ancestors),
            calibrationProperty: property(device, "LIBINPUT_CALIBRATION_MATRIX"),
            links: links)
    }

    private static func property(_ device: OpaquePointer, _ name: String) -> String? {
        udev_device_get_property_value(device, name).map { String(cString: $0) }
    }
}

extension String {
    fileprivate func trimmingTrailingNewlines() -> String {
        var text = self
        while text.last == "\n" { text.removeLast() }
        return text
    }
}
