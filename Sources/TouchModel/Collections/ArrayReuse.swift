extension Array {
    /// Empties the array and keeps its room, for an array that is filled and emptied on every frame of a touch.
    ///
    /// `removeAll(keepingCapacity: true)` does the same through `replaceSubrange`, a general routine specialized per
    /// element type: about 250 instructions to empty an array of one element, and one more function per type on a
    /// touch's path. Taking the elements off the end is one move and one destruction each.
    ///
    /// An empty array, as most are by then (the scene's diagnostics, the entries the engine drained), costs a test and
    /// no call: the loop is a function of its own, one per element type, and only a non-empty array runs it.
    @inlinable @inline(__always)
    public mutating func removeAllKeepingCapacity() {
        if !isEmpty { removeAllFromTheEnd() }
    }

    @inlinable
    mutating func removeAllFromTheEnd() {
        while !isEmpty { _ = removeLast() }
    }
}

extension Array {
    /// Hands each element to `body` in order, moved out rather than copied, and leaves the array empty with its room
    /// kept: for an array of enums that one step of a touch's path fills and the next takes apart, where a copy of each
    /// element would be a call to its type's copy witness (a switch over every case) and a destruction after it.
    ///
    /// The elements are turned around in place and then taken off the end. Both steps move: the buffer's own `swapAt`
    /// moves the elements it swaps, where the array's `reverse()` (the general one) copies them through their witness,
    /// and `removeLast()` hands its element over without a copy.
    @inlinable
    public mutating func drainInOrder(_ body: (consuming Element) throws -> Void) rethrows {
        guard !isEmpty else { return }
        if count > 1 { withUnsafeMutableBufferPointer { $0.reverse() } }
        while !isEmpty { try body(removeLast()) }
    }
}
