/// A map kept sorted by key and searched by bisection: for the tables that a frame looks a name up in (the scene's
/// targets, a target's actions), which can hold hundreds of entries.
///
/// Why not `Dictionary` or `Set`: every lookup of a `String` key hashes it (`Hasher`, the string's hashing, the
/// table's probing), which is a dozen distinct functions on the path from a touch to its message, and in the emulated
/// test guest each distinct function a wake-up runs costs about a microsecond the first time.
/// A bisection is one small loop of comparisons, which the path already runs. Why not ``SmallMap``: its
/// linear search would make checking a large configuration quadratic. Lookups take O(log n) comparisons; an insertion
/// or a removal moves O(n) entries, which only configuration changes do.
public struct SortedMap<Key: Comparable, Value> {
    @usableFromInline var storedKeys: [Key] = []
    @usableFromInline var storedValues: [Value] = []

    @inlinable public init() {}

    /// The keys, in ascending order.
    @inlinable public var keys: [Key] { storedKeys }
    /// The values, in the order of ``keys``.
    @inlinable public var values: [Value] { storedValues }
    @inlinable public var count: Int { storedKeys.count }
    @inlinable public var isEmpty: Bool { storedKeys.isEmpty }

    @inlinable
    public subscript(key: Key) -> Value? {
        get {
            let (index, found) = sortedPosition(of: key, in: storedKeys)
            return found ? storedValues[index] : nil
        }
        set {
            if let newValue {
                updateValue(newValue, forKey: key)
            } else {
                removeValue(forKey: key)
            }
        }
    }

    /// Sets the value of `key` and returns the one it replaced, nil when `key` was absent.
    @inlinable @discardableResult
    public mutating func updateValue(_ value: Value, forKey key: Key) -> Value? {
        let (index, found) = sortedPosition(of: key, in: storedKeys)
        if found {
            let old = storedValues[index]
            storedValues[index] = value
            return old
        }
        storedKeys.insert(key, at: index)
        storedValues.insert(value, at: index)
        return nil
    }

    /// Removes `key` and returns its value, nil when it was absent.
    @inlinable @discardableResult
    public mutating func removeValue(forKey key: Key) -> Value? {
        let (index, found) = sortedPosition(of: key, in: storedKeys)
        guard found else { return nil }
        storedKeys.remove(at: index)
        return storedValues.remove(at: index)
    }
}

extension SortedMap: Sequence {
    public typealias Element = (key: Key, value: Value)

    @inlinable public func makeIterator() -> PairedIterator<Key, Value> {
        PairedIterator(keys: storedKeys, values: storedValues)
    }
    @inlinable public var underestimatedCount: Int { count }
}

extension SortedMap: Equatable where Value: Equatable {}
extension SortedMap: Hashable where Key: Hashable, Value: Hashable {}
extension SortedMap: Sendable where Key: Sendable, Value: Sendable {}

/// A set kept sorted and searched by bisection; see ``SortedMap`` for why.
public struct SortedSet<Element: Comparable> {
    @usableFromInline var elements: [Element] = []

    @inlinable public init() {}

    /// `members` without duplicates, sorted.
    @inlinable
    public init<S: Sequence>(_ members: S) where S.Element == Element {
        for member in members.sorted() where elements.last.map({ $0 != member }) ?? true {
            elements.append(member)
        }
    }

    @inlinable public var count: Int { elements.count }
    @inlinable public var isEmpty: Bool { elements.isEmpty }

    @inlinable
    public func contains(_ member: Element) -> Bool {
        sortedPosition(of: member, in: elements).found
    }

    /// Adds `member` unless it is there; true when it was added.
    @inlinable @discardableResult
    public mutating func insert(_ member: Element) -> Bool {
        let (index, found) = sortedPosition(of: member, in: elements)
        guard !found else { return false }
        elements.insert(member, at: index)
        return true
    }

    /// Removes `member` and returns it, nil when it was absent.
    @inlinable @discardableResult
    public mutating func remove(_ member: Element) -> Element? {
        let (index, found) = sortedPosition(of: member, in: elements)
        return found ? elements.remove(at: index) : nil
    }
}

extension SortedSet: Sequence {
    @inlinable public func makeIterator() -> IndexingIterator<[Element]> { elements.makeIterator() }
    @inlinable public var underestimatedCount: Int { count }
}

extension SortedSet: ExpressibleByArrayLiteral {
    @inlinable
    public init(arrayLiteral members: Element...) {
        self.init(members)
    }
}

extension SortedSet: Equatable {}
extension SortedSet: Hashable where Element: Hashable {}
extension SortedSet: Sendable where Element: Sendable {}

/// Where `value` is in the ascending `array`, or where it would go: the first position whose element is not less
/// than `value`, and whether that element equals it.
@inlinable
func sortedPosition<Element: Comparable>(of value: Element, in array: [Element]) -> (index: Int, found: Bool) {
    var low = 0
    var high = array.count
    while low < high {
        let middle = low &+ (high &- low) / 2
        if array[middle] < value {
            low = middle &+ 1
        } else {
            high = middle
        }
    }
    return (low, low < array.count && array[low] == value)
}
