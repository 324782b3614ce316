import TouchModel

/// The engine's recent delivery heads: each binding an action fires through (control or gesture, event, action, target
/// and responder) gets its ``ActionDelivery/Head`` and its executor once, and every later action of the binding shares
/// them. A touch then neither looks its target up by name, nor names its event again, nor makes and escapes seven
/// strings for its message (issue 17).
///
/// A binding is recognised by its identity first: the scene resolves each target-action entry into one
/// ``ActionBinding`` and keeps it until a change could alter it, so a touch finds its head by comparing one reference
/// and its events. An action made elsewhere (a test, a binding the scene made again) is matched by its names. The heads are
/// kept in the order they were made, at most ``capacity`` of them and none larger than ``maximumKeptBytes``; past that
/// the oldest is replaced. A new generation (a reload) forgets them all: event names and targets belong to a
/// configuration.
struct DeliveryHeads {
    /// How many bindings are kept: more than a kiosk's layout fires in a typical stretch of touches, few enough that a
    /// miss walks a short array.
    static let capacity = 32
    /// The most bytes of JSON a kept head may hold. A configuration may name things with up to a megabyte of text
    /// (escaped, up to six times that); a head larger than this is made for its delivery and not kept, so what the
    /// heads hold stays under `capacity` times this, whatever the file.
    static let maximumKeptBytes = 4096

    private struct Entry {
        /// Held, so that its identity is not another binding's while the entry is kept.
        let binding: ActionBinding
        let event: Control.Event
        let gestureEvent: GestureRecognizer.Event?
        let target: String
        let head: ActionDelivery.Head
        let executor: ExecutorKind

        /// The same binding object: a reference and the events compared, no names.
        func isIdentical(to action: ResolvedAction, target: String) -> Bool {
            binding === action.binding && event == action.event && gestureEvent == action.gestureEvent
                && self.target == target
        }

        /// Equal names.
        func matches(_ action: ResolvedAction, target: String) -> Bool {
            event == action.event && gestureEvent == action.gestureEvent && self.target == target
                && binding.action == action.action && binding.sender == action.control
                && binding.responder == action.responder
        }
    }

    private var entries: [Entry] = []
    /// Where the next head goes once ``capacity`` are kept.
    private var replace = 0
    /// The generation the kept heads belong to.
    private var generation = 0
    /// Heads made since the engine started: a miss's work, counted (a test checks that a binding is made once).
    private(set) var made = 0

    /// The head and executor of `action`, handled by `target`, under `configuration` of `generation`; nil when no
    /// target of that name is configured.
    mutating func head(
        for action: ResolvedAction, target: String, configuration: Configuration, generation: Int
    ) -> (head: ActionDelivery.Head, executor: ExecutorKind)? {
        if generation != self.generation {
            entries.removeAll(keepingCapacity: true)
            replace = 0
            self.generation = generation
        }
        // By index: an entry is read in place, not copied. By identity first, the names only when that finds none.
        for index in entries.indices where entries[index].isIdentical(to: action, target: target) {
            return (entries[index].head, entries[index].executor)
        }
        for index in entries.indices where entries[index].matches(action, target: target) {
            return (entries[index].head, entries[index].executor)
        }
        guard let definition = configuration.targets.first(where: { $0.name == target }) else { return nil }
        let head = ActionDelivery.Head(action, target: target, configuration: configuration)
        let entry = Entry(
            binding: action.binding, event: action.event, gestureEvent: action.gestureEvent, target: target, head: head,
            executor: definition.kind.executor)
        made &+= 1
        guard head.opening.count.addingSaturating(head.middle.count) <= Self.maximumKeptBytes else {
            return (head, entry.executor)
        }
        if entries.count < Self.capacity {
            entries.append(entry)
        } else {
            entries[replace] = entry
            replace = (replace + 1) % Self.capacity
        }
        return (head, entry.executor)
    }

    /// How many heads are kept.
    var count: Int { entries.count }
}
