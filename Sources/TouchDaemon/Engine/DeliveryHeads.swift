import TouchModel

/// The engine's recent delivery heads: each binding an action fires through (control or gesture, event, action, target
/// and responder) gets its ``ActionDelivery/Head`` and its executor once, and every later action of the binding shares
/// them. A touch then neither looks its target up by name, nor names its event again, nor makes and escapes seven
/// strings for its message (issue 17).
///
/// A binding is recognised by comparing the resolved action's fields with the kept ones: the names come from the
/// configuration, so equal names are usually the same storage, which compares in a few instructions. The heads are
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
        let control: String
        let event: Control.Event
        let gestureEvent: GestureRecognizer.Event?
        let action: String
        let target: String
        let responder: Responder?
        let head: ActionDelivery.Head
        let executor: ExecutorKind

        func matches(_ action: ResolvedAction, target: String) -> Bool {
            event == action.event && gestureEvent == action.gestureEvent && self.action == action.action
                && self.target == target && control == action.control && responder == action.responder
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
        // By index: an entry is read in place, not copied with its strings.
        for index in entries.indices where entries[index].matches(action, target: target) {
            return (entries[index].head, entries[index].executor)
        }
        guard let definition = configuration.targets.first(where: { $0.name == target }) else { return nil }
        let head = ActionDelivery.Head(action, target: target, configuration: configuration)
        let entry = Entry(
            control: action.control, event: action.event, gestureEvent: action.gestureEvent, action: action.action,
            target: target, responder: action.responder, head: head, executor: definition.kind.executor)
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
