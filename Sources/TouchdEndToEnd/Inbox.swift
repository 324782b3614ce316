import Synchronization

/// Everything one listener has received, in arrival order. Reader threads append; the scenario reads snapshots from
/// a cursor (an index it took before acting), so each check looks only at what its own action caused.
final class Inbox<Element: Sendable>: Sendable {
    private let items = Mutex<[Element]>([])

    func append(_ element: Element) {
        items.withLock { $0.append(element) }
    }

    /// How many elements have arrived: a cursor for the next action.
    var count: Int { items.withLock { $0.count } }

    /// The elements at and after `cursor`.
    func since(_ cursor: Int) -> [Element] {
        snapshot(from: cursor).elements
    }

    var all: [Element] { since(0) }

    /// The first element at or after `cursor` that satisfies `condition`, with its index. `condition` runs on a
    /// snapshot, outside the lock: it may parse (a target message's JSON is parsed when first read), and a reader
    /// thread must never wait for that to append what it has just read.
    func first(from cursor: Int, where condition: (Element) -> Bool) -> (index: Int, element: Element)? {
        let (start, elements) = snapshot(from: cursor)
        guard let offset = elements.firstIndex(where: condition) else { return nil }
        return (start + offset, elements[offset])
    }

    /// The elements at and after `cursor` (clamped to the count), copied in one hold of the lock, with the index of
    /// the first.
    private func snapshot(from cursor: Int) -> (start: Int, elements: [Element]) {
        items.withLock { items in
            let start = min(cursor, items.count)
            return (start, Array(items[start...]))
        }
    }
}
