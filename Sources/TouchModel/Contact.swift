/// Identifies one contact (one finger) for as long as it touches: libinput's seat slot in the
/// daemon, the script's contact number in `touchd simulate`.
public typealias ContactID = Int

/// One observation of one contact.
public struct ContactSample: Hashable, Sendable {
    /// What happened to the contact.
    public enum Phase: String, Hashable, Sendable, CaseIterable {
        case began, moved, ended, cancelled
    }

    public var contact: ContactID
    public var phase: Phase
    /// Where the contact is. Required for `began` and `moved`; `ended` may carry the lift position
    /// (libinput's touch-up does not, so the last known position is used); ignored for `cancelled`.
    public var location: Point?

    public init(contact: ContactID, phase: Phase, location: Point?) {
        self.contact = contact
        self.phase = phase
        self.location = location
    }

    public static func began(_ contact: ContactID, at location: Point) -> ContactSample {
        ContactSample(contact: contact, phase: .began, location: location)
    }

    public static func moved(_ contact: ContactID, to location: Point) -> ContactSample {
        ContactSample(contact: contact, phase: .moved, location: location)
    }

    public static func ended(_ contact: ContactID, at location: Point? = nil) -> ContactSample {
        ContactSample(contact: contact, phase: .ended, location: location)
    }

    public static func cancelled(_ contact: ContactID) -> ContactSample {
        ContactSample(contact: contact, phase: .cancelled, location: nil)
    }
}

/// The samples of one input frame (libinput's TOUCH_FRAME), all at one instant.
public struct Frame: Hashable, Sendable {
    public var time: Instant
    public var samples: [ContactSample]

    public init(time: Instant, samples: [ContactSample]) {
        self.time = time
        self.samples = samples
    }
}
