/// What a contact that is down touches, for an observer that shows live contacts (`touchd ctl monitor`). Read-only:
/// nothing here changes the scene, and nothing here is called while nobody watches.
public struct ContactInspection: Hashable, Sendable {
    /// Where the contact was last seen, in output pixels.
    public var location: Point
    /// The control tracking the contact (the one it hit at touch-down), if any.
    public var control: String?
    /// The gesture recognizers that hold the contact's touch, in declaration order.
    public var gestures: [String]

    public init(location: Point, control: String?, gestures: [String]) {
        self.location = location
        self.control = control
        self.gestures = gestures
    }
}

extension Scene {
    /// The contact `id` as the scene sees it now, or nil when it is not down (never was, lifted, or ignored).
    public func inspect(contact id: ContactID) -> ContactInspection? {
        guard let state = contacts[id] else { return nil }
        let control = state.control.flatMap { slots[$0].contact == id ? slots[$0].control.id : nil }
        let gestures = recognizers.compactMap { $0.progress.holds(state.serial) ? $0.recognizer.id : nil }
        return ContactInspection(location: state.location, control: control, gestures: gestures)
    }
}

extension Scene {
    /// The contacts that are down, in the scene's order: what a caller that takes the touches away from the scene
    /// (explore by touch) cancels in it first.
    public var contactIDs: [ContactID] { contacts.keys.sorted() }

    /// The controls that can be touched on the active screen (not removed, listed by the screen or on every screen),
    /// in declaration order, enabled or not: what explore by touch reads out.
    public var shownControlIDs: [String] {
        slots.indices.compactMap { index in
            guard !slots[index].isRemoved else { return nil }
            guard !slots[index].screens.isEmpty else { return slots[index].control.id }
            guard let activeScreenIndex, slots[index].screens.contains(activeScreenIndex) else { return nil }
            return slots[index].control.id
        }
    }
}
