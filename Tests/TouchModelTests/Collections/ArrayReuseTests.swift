import Testing

@testable import TouchModel

/// The two ways the input path empties its per-frame arrays: every element once, in order, the room kept.
@Suite("Arrays emptied for reuse")
struct ArrayReuseTests {
    /// A reference, so that a test can see whether anything but the element it was handed still holds it.
    final class Box {
        let value: Int
        init(_ value: Int) { self.value = value }
    }

    enum Element {
        case box(Box)
        case number(Int)
    }

    @Test("drainInOrder hands every element over once, in order, and keeps the room", arguments: 0...9)
    func drainKeepsOrderAndRoom(count: Int) {
        var array = (0..<count).map { $0 % 2 == 0 ? Element.box(Box($0)) : .number($0) }
        array.reserveCapacity(16)
        let capacity = array.capacity
        var seen: [Int] = []
        var boxes: [Box] = []
        array.drainInOrder { element in
            switch element {
            case .box(let box):
                seen.append(box.value)
                boxes.append(box)
            case .number(let number):
                seen.append(number)
            }
        }
        #expect(seen == Array(0..<count))
        // The emptied array holds none of them any more, though it kept its room.
        #expect(boxes.indices.allSatisfy { isKnownUniquelyReferenced(&boxes[$0]) })
        #expect(array.isEmpty)
        #expect(array.capacity == capacity)
    }

    @Test("drainInOrder on a shared array leaves the other owner's elements alone")
    func drainSharedArray() {
        let original = [Element.box(Box(1)), .number(2), .box(Box(3))]
        var array = original
        var seen: [Int] = []
        array.drainInOrder { element in
            switch element {
            case .box(let box): seen.append(box.value)
            case .number(let number): seen.append(number)
            }
        }
        #expect(seen == [1, 2, 3])
        #expect(array.isEmpty)
        #expect(original.count == 3)
        if case .box(let box) = original[2] {
            #expect(box.value == 3)
        } else {
            Issue.record("the shared array changed")
        }
    }

    @Test("removeAllKeepingCapacity empties the array and keeps the room", arguments: [0, 1, 5])
    func removeAllKeepsRoom(count: Int) {
        var array = (0..<count).map { Box($0) }
        array.reserveCapacity(8)
        let capacity = array.capacity
        array.removeAllKeepingCapacity()
        #expect(array.isEmpty)
        #expect(array.capacity == capacity)
        array.append(Box(9))
        #expect(array.map(\.value) == [9])
    }
}
