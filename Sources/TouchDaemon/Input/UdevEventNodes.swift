import CLibinput

/// The event nodes of a seat in udev's database, for the two readers of it that are not libinput: the touchscreens
/// libinput refused (``LibinputContext/unusableTouchscreens()``) and `touchd identify`'s survey (``InputNodeSurvey``).
enum UdevEventNodes {
    /// Calls `body` with each `event*` node of the input subsystem on `seat` (`ID_SEAT`, `seat0` when unset), only
    /// those whose udev property `property` is "1" when one is given. False when udev's database cannot be
    /// enumerated. Opens no device node.
    @discardableResult
    static func forEach(
        udev: OpaquePointer, seat: String, withProperty property: String? = nil, _ body: (OpaquePointer) -> Void
    ) -> Bool {
        guard let enumerate = udev_enumerate_new(udev) else { return false }
        defer { udev_enumerate_unref(enumerate) }
        udev_enumerate_add_match_subsystem(enumerate, "input")
        if let property { udev_enumerate_add_match_property(enumerate, property, "1") }
        udev_enumerate_add_match_sysname(enumerate, "event*")
        guard udev_enumerate_scan_devices(enumerate) == 0 else { return false }
        var entry = udev_enumerate_get_list_entry(enumerate)
        while let current = entry {
            entry = udev_list_entry_get_next(current)
            guard let syspath = udev_list_entry_get_name(current),
                let device = udev_device_new_from_syspath(udev, syspath)
            else { continue }
            defer { udev_device_unref(device) }
            let deviceSeat = udev_device_get_property_value(device, "ID_SEAT").map { String(cString: $0) } ?? "seat0"
            guard deviceSeat == seat else { continue }
            body(device)
        }
        return true
    }
}
