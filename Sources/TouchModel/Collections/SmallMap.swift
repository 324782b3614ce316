/// A map for the handful of entries that the input path keeps per contact, per touch or per device: two arrays,
/// searched from the front, in insertion order.
///
/// Why not `Dictionary`: a touch's frame looks up, inserts and removes a few such entries, and a `Dictionary` or `Set`
/// does each through the standard library's hashing (`Hasher`), probing, insertion, deletion and resizing, each
/// specialized per key and value type. A tap ran several dozen distinct such functions. In the emulated test guest
/// every distinct function a wake-up runs costs about a microsecond the first time, so they made up much of touchd's
/// latency against `libinput debug-events`. A linear search over at most a few dozen keys is one small loop, inlined
/// where it is used: with it (and the other copies it spared) the scene benchmark went from 1,006 to 425 ns per
/// sample. swift-collections' `OrderedDictionary` searches small
/// tables linearly too, but `TouchModel` imports the standard library only.
///
/// Public rather than `package`, as are ``SortedMap`` and the `Array` helpers beside them: Swift 6.3 inlines and
/// specializes an `@inlinable package` declaration only within its own module, so TouchDaemon called these maps through
/// their unspecialized generic entry points (the release binary had 48 calls to the subscript's setter alone), each
/// call looking up the runtime's metadata for its types. Public, they are specialized where they are used: the engine's
/// handling of a tap frame went from 785 to 455 ns natively (docs/performance.md).
///
/// Meant for small maps: every operation is linear in `count`. Iteration is in insertion order (a removal keeps the
/// others' order), which `Dictionary` does not promise: code that needs a particular order still sorts.
public struct SmallMap<Key: Equatable, Value> {
    @usableFromInline var storedKeys: [Key] = []
    @usableFromInline var storedValues: [Value] = []

    @inlinable public init() {}

    /// The keys, in insertion order.
    @inlinable public var keys: [Key] { storedKeys }
    /// The values, in the order of ``keys``.
    @inlinable public var values: [Value] { storedValues }
    @inlinable public var count: Int { storedKeys.count }
    @inlinable public var isEmpty: Bool { storedKeys.isEmpty }

    /// The position of `key` in ``keys`` and ``values``, nil when absent.
    @inlinable @inline(__always)
    public func index(forKey key: Key) -> Int? {
        smallPosition(of: key, in: storedKeys)
    }

    /// The value at a position that ``index(forKey:)`` returned.
    @inlinable
    public subscript(valueAt index: Int) -> Value {
        get { storedValues[index] }
        _modify { yield &storedValues[index] }
    }

    @inlinable
    public subscript(key: Key) -> Value? {
        get {
            guard let index = index(forKey: key) else { return nil }
            return storedValues[index]
        }
        set {
            if let index = index(forKey: key) {
                if let newValue {
                    storedValues[index] = newValue
                } else {
                    remove(at: index)
                }
            } else if let newValue {
                storedKeys.append(key)
                storedValues.append(newValue)
            }
        }
    }

    @inlinable
    public subscript(key: Key, default defaultValue: @autoclosure () -> Value) -> Value {
        get {
            guard let index = index(forKey: key) else { return defaultValue() }
            return storedValues[index]
        }
        _modify {
            let index: Int
            if let found = self.index(forKey: key) {
                index = found
            } else {
                storedKeys.append(key)
                storedValues.append(defaultValue())
                index = storedValues.count - 1
            }
            yield &storedValues[index]
        }
    }

    /// Removes `key` and returns its value, nil when it was absent.
    @inlinable @discardableResult
    public mutating func removeValue(forKey key: Key) -> Value? {
        guard let index = index(forKey: key) else { return nil }
        let value = storedValues[index]
        remove(at: index)
        return value
    }

    @inlinable
    public mutating func removeAll() {
        storedKeys.removeAllKeepingCapacity()
        storedValues.removeAllKeepingCapacity()
    }

    /// Removes the entries for which `shouldRemove` is true; the others keep their order.
    @inlinable
    public mutating func removeAll(where shouldRemove: (Key, Value) throws -> Bool) rethrows {
        var index = 0
        while index < storedKeys.count {
            if try shouldRemove(storedKeys[index], storedValues[index]) {
                remove(at: index)
            } else {
                index &+= 1
            }
        }
    }

    @inlinable
    mutating func remove(at index: Int) {
        storedKeys.remove(at: index)
        storedValues.remove(at: index)
    }
}

extension SmallMap: Sequence {
    public typealias Element = (key: Key, value: Value)

    @inlinable public func makeIterator() -> PairedIterator<Key, Value> {
        PairedIterator(keys: storedKeys, values: storedValues)
    }
    @inlinable public var underestimatedCount: Int { count }
}

/// The entries of a map kept as two parallel arrays (``SmallMap``, ``SortedMap``), in their order.
public struct PairedIterator<Key, Value>: IteratorProtocol {
    @usableFromInline let keys: [Key]
    @usableFromInline let values: [Value]
    @usableFromInline var index = 0

    @inlinable init(keys: [Key], values: [Value]) {
        self.keys = keys
        self.values = values
    }

    @inlinable
    public mutating func next() -> (key: Key, value: Value)? {
        guard index < keys.count else { return nil }
        defer { index &+= 1 }
        return (keys[index], values[index])
    }
}

extension SmallMap: ExpressibleByDictionaryLiteral {
    /// Later duplicates replace earlier ones, as assignment through the subscript does.
    @inlinable
    public init(dictionaryLiteral elements: (Key, Value)...) {
        for (key, value) in elements { self[key] = value }
    }
}

extension SmallMap: Equatable where Value: Equatable {
    /// Equal when both hold the same keys with equal values, whatever their order.
    @inlinable
    public static func == (lhs: SmallMap, rhs: SmallMap) -> Bool {
        guard lhs.count == rhs.count else { return false }
        for (key, value) in lhs {
            guard let other = rhs[key], other == value else { return false }
        }
        return true
    }
}

extension SmallMap: Hashable where Key: Hashable, Value: Hashable {
    /// Independent of the order, as equality is.
    @inlinable
    public func hash(into hasher: inout Hasher) {
        var combined = 0
        for (key, value) in self {
            var entry = Hasher()
            entry.combine(key)
            entry.combine(value)
            combined ^= entry.finalize()
        }
        hasher.combine(count)
        hasher.combine(combined)
    }
}

extension SmallMap: Sendable where Key: Sendable, Value: Sendable {}

/// The first position of `value` in `array`, nil when absent: the one search of SmallMap and SmallSet, a plain loop
/// that inlines where it is used (the standard library's `firstIndex(of:)` is one more function on the path).
@inlinable @inline(__always)
func smallPosition<Element: Equatable>(of value: Element, in array: [Element]) -> Int? {
    var index = 0
    let end = array.count
    while index < end {
        if array[index] == value { return index }
        index &+= 1
    }
    return nil
}

/// A set for the handful of elements that the input path keeps per frame, contact or gesture: an array searched from
/// the front, in insertion order. Why not `Set`: see ``SmallMap``.
public struct SmallSet<Element: Equatable> {
    @usableFromInline var elements: [Element] = []

    @inlinable public init() {}

    @inlinable public var count: Int { elements.count }
    @inlinable public var isEmpty: Bool { elements.isEmpty }

    @inlinable @inline(__always)
    public func contains(_ member: Element) -> Bool {
        smallPosition(of: member, in: elements) != nil
    }

    /// Adds `member` unless it is there; true when it was added.
    @inlinable @discardableResult
    public mutating func insert(_ member: Element) -> Bool {
        guard !contains(member) else { return false }
        elements.append(member)
        return true
    }

    /// Removes `member` and returns it, nil when it was absent.
    @inlinable @discardableResult
    public mutating func remove(_ member: Element) -> Element? {
        guard let index = smallPosition(of: member, in: elements) else { return nil }
        return elements.remove(at: index)
    }

    /// Whether no member of `other` is a member of this set.
    @inlinable
    public func isDisjoint(with other: SmallSet) -> Bool {
        !elements.contains { other.contains($0) }
    }

    @inlinable
    public mutating func formUnion<S: Sequence>(_ other: S) where S.Element == Element {
        for member in other { insert(member) }
    }

    @inlinable
    public mutating func removeAll() {
        elements.removeAllKeepingCapacity()
    }

    /// Removes the members for which `shouldRemove` is true; the others keep their order.
    @inlinable
    public mutating func removeAll(where shouldRemove: (Element) throws -> Bool) rethrows {
        try elements.removeAll(where: shouldRemove)
    }
}

extension SmallSet: Sequence {
    @inlinable public func makeIterator() -> IndexingIterator<[Element]> { elements.makeIterator() }
    @inlinable public var underestimatedCount: Int { count }
}

extension SmallSet: ExpressibleByArrayLiteral {
    @inlinable
    public init(arrayLiteral members: Element...) {
        for member in members { insert(member) }
    }
}

extension SmallSet: Equatable {
    /// Equal when both hold the same members, whatever their order.
    @inlinable
    public static func == (lhs: SmallSet, rhs: SmallSet) -> Bool {
        lhs.count == rhs.count && lhs.elements.allSatisfy { rhs.contains($0) }
    }
}

extension SmallSet: Hashable where Element: Hashable {
    /// Independent of the order, as equality is.
    @inlinable
    public func hash(into hasher: inout Hasher) {
        var combined = 0
        for member in elements { combined ^= member.hashValue }
        hasher.combine(count)
        hasher.combine(combined)
    }
}

extension SmallSet: Sendable where Element: Sendable {}
