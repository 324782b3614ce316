/// A first-in, first-out queue that holds at most `capacity` elements and makes room for a new one by dropping the
/// oldest: a target that cannot keep up gets the most recent actions, and memory stays bounded.
///
/// Storage grows as elements arrive (up to `capacity`), so a large capacity costs nothing until it is used.
struct BoundedQueue<Element> {
    let capacity: Int
    private var storage: [Element?] = []
    private var head = 0
    private(set) var count = 0

    init(capacity: Int) {
        precondition(capacity > 0, "a queue needs room for at least one element")
        self.capacity = capacity
    }

    var isEmpty: Bool { count == 0 }

    /// Appends `element`; when the queue is full, drops the oldest element and returns it.
    @discardableResult
    mutating func append(_ element: Element) -> Element? {
        if count < storage.count {
            storage[(head + count) % storage.count] = element
            count += 1
            return nil
        }
        if storage.count < capacity {
            // Full but allowed to grow: lay the elements out from index 0 so the new one goes at the end.
            if head != 0 {
                storage = Array(storage[head...] + storage[..<head])
                head = 0
            }
            storage.append(element)
            count += 1
            return nil
        }
        let dropped = storage[head]
        storage[head] = element
        head = (head + 1) % storage.count
        return dropped
    }

    /// Removes and returns the oldest element.
    mutating func popFirst() -> Element? {
        guard count > 0 else { return nil }
        let element = storage[head]
        storage[head] = nil
        head = (head + 1) % storage.count
        count -= 1
        return element
    }

    /// Empties the queue and releases its storage; returns how many elements it held.
    @discardableResult
    mutating func removeAll() -> Int {
        let removed = count
        storage = []
        head = 0
        count = 0
        return removed
    }
}

extension BoundedQueue: Sendable where Element: Sendable {}
