/// One target-action entry of a control or gesture recognizer as the scene resolved it: the sender, the action, and
/// the target and responder that handle it (both nil when no responder does).
///
/// The scene resolves every entry when it is built and again after each change that could change an answer (a target
/// added or removed, an entry added or removed, another screen shown), not on every event: an event then neither looks
/// a target up by name nor walks the responder chain, and its ``ResolvedAction`` carries this one reference instead of
/// four strings. An entry whose answer did not change keeps its binding, so a caller may recognise a
/// binding it has seen by identity (`===`); equality compares the names.
public final class ActionBinding: Hashable, Sendable, CustomStringConvertible {
    /// The id of the sender: a control, or a gesture recognizer.
    public let sender: String
    public let action: String
    /// The target that handles the action, or nil when no responder does ("unhandled").
    public let target: String?
    /// The responder whose target handles it: the sender itself for an explicit target, the first responder up the
    /// chain for a nil target, nil when unhandled.
    public let responder: Responder?

    public init(sender: String, action: String, target: String?, responder: Responder?) {
        self.sender = sender
        self.action = action
        self.target = target
        self.responder = responder
    }

    public static func == (lhs: ActionBinding, rhs: ActionBinding) -> Bool {
        lhs === rhs
            || (lhs.sender == rhs.sender && lhs.action == rhs.action && lhs.target == rhs.target
                && lhs.responder == rhs.responder)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(sender)
        hasher.combine(action)
        hasher.combine(target)
        hasher.combine(responder)
    }

    public var description: String {
        "\(sender) → \(action) → \(target ?? "(unhandled)")"
    }
}

/// What firing one target-action entry does, decided when the scene changes rather than on every event.
enum EntryResolution: Hashable, Sendable {
    /// The action goes to the binding's target (or, with none, is reported unhandled).
    case deliver(ActionBinding)
    /// The entry's explicit target is unknown or does not respond: the action is dropped and this is reported.
    case drop(Diagnostic)
}
