/// Who an action is sent to: a named target, or the responder chain (UIKit's nil target).
public enum TargetSlot: Hashable, Sendable, CustomStringConvertible {
    case target(String)
    /// The marker for a nil target: the action travels up the responder chain.
    case responderChain

    public init(_ name: String?) {
        self = name.map(TargetSlot.target) ?? .responderChain
    }

    /// The target's name, or nil for the responder chain.
    public var name: String? {
        switch self {
        case .target(let name): name
        case .responderChain: nil
        }
    }

    public var description: String { name ?? "(responder chain)" }
}

/// A control's ordered (target, action, events) entries, with UIKit's semantics (docs/uikit-semantics.md §6).
///
/// - `add` ignores an empty mask; an entry with the same target and action is removed, its mask
///   merged into the new one, and the merged entry appended at the end, so duplicates are kept once.
/// - `remove` clears events from matching entries and deletes entries whose mask becomes empty.
/// - Dispatch walks a copy in insertion order and fires each entry at most once.
/// - Targets are weak: ``removeAll(target:)`` forgets a target that went away.
public struct TargetActionTable: Hashable, Sendable {
    /// One registration.
    public struct Entry: Hashable, Sendable {
        public var target: TargetSlot
        public var action: String
        public var events: Control.Event

        public init(target: TargetSlot, action: String, events: Control.Event) {
            self.target = target
            self.action = action
            self.events = events
        }
    }

    /// The entries in dispatch order.
    public private(set) var entries: [Entry] = []

    public init() {}

    /// Registers `action` on `target` for `events` (UIKit's `addTarget(_:action:for:)`).
    public mutating func add(target: TargetSlot, action: String, for events: Control.Event) {
        guard !events.isEmpty else { return }
        var merged = events
        if let existing = entries.firstIndex(where: { $0.target == target && $0.action == action }) {
            merged.formUnion(entries[existing].events)
            entries.remove(at: existing)
        }
        entries.append(Entry(target: target, action: action, events: merged))
    }

    /// Clears `events` from matching entries (UIKit's `removeTarget(_:action:for:)`).
    ///
    /// With a `target`, only that target's entries match; with `target` nil, every target's do.
    /// With an `action`, only entries with that action match. Entries left with no event are deleted.
    public mutating func remove(target: TargetSlot?, action: String?, for events: Control.Event) {
        var kept: [Entry] = []
        kept.reserveCapacity(entries.count)
        for var entry in entries {
            let matches = (target == nil || entry.target == target) && (action == nil || entry.action == action)
            if matches {
                entry.events.subtract(events)
                if entry.events.isEmpty { continue }
            }
            kept.append(entry)
        }
        entries = kept
    }

    /// Forgets every entry of a target that went away (weak targets).
    public mutating func removeAll(target name: String) {
        entries.removeAll { $0.target == .target(name) }
    }

    /// The entries that fire for `events`, in insertion order, each at most once. The result is a
    /// copy: changing the table while walking it changes nothing in this dispatch.
    public func dispatchList(for events: Control.Event) -> [Entry] {
        entries.filter { !$0.events.isDisjoint(with: events) }
    }

    /// Every target once, in the order of the entries (a re-added entry moves its target later);
    /// a nil target shows as `.responderChain`.
    public var allTargets: [TargetSlot] {
        var seen: Set<TargetSlot> = []
        return entries.compactMap { seen.insert($0.target).inserted ? $0.target : nil }
    }

    /// The union of every entry's events.
    public var allControlEvents: Control.Event {
        entries.reduce(into: []) { $0.formUnion($1.events) }
    }

    /// The actions registered on `target` for any of `events`, in order, or nil when there are none
    /// (UIKit's `actions(forTarget:forControlEvent:)`).
    public func actions(for target: TargetSlot, event events: Control.Event) -> [String]? {
        let actions = entries.filter { $0.target == target && !$0.events.isDisjoint(with: events) }.map(\.action)
        return actions.isEmpty ? nil : actions
    }
}
