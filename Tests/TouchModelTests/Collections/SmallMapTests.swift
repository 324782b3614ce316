import TestKit
import Testing

@testable import TouchModel

/// SmallMap and SmallSet replace Dictionary and Set on the input path: they must answer exactly as those
/// would, whatever the sequence of operations, and keep insertion order.
@Suite("SmallMap and SmallSet against Dictionary and Set")
struct SmallMapTests {
    @Test("random operations give the same answers as Dictionary, in insertion order")
    func mapMatchesDictionary() {
        var random = SeededGenerator(seed: 0x5A11_3A9)
        var failures: [String] = []
        for sequence in 0..<200 {
            var small = SmallMap<Int, String>()
            var reference: [Int: String] = [:]
            var order: [Int] = []  // the keys in the order they were first inserted and not removed since
            for step in 0..<100 {
                let key = random.int(0..<12)
                let context = "sequence \(sequence) step \(step) key \(key)"
                switch random.int(0..<6) {
                case 0, 1:
                    let value = "v\(random.int(0..<1000))"
                    if reference[key] == nil { order.append(key) }
                    small[key] = value
                    reference[key] = value
                case 2:
                    small[key] = nil
                    reference[key] = nil
                    order.removeAll { $0 == key }
                case 3:
                    if small.removeValue(forKey: key) != reference.removeValue(forKey: key) {
                        failures.append("\(context): removeValue differs")
                    }
                    order.removeAll { $0 == key }
                case 4:
                    if reference[key] == nil { order.append(key) }
                    small[key, default: "d"] += "+"
                    reference[key, default: "d"] += "+"
                default:
                    if small[key] != reference[key] { failures.append("\(context): lookup differs") }
                    if (small.index(forKey: key) != nil) != (reference[key] != nil) {
                        failures.append("\(context): index(forKey:) differs")
                    }
                }
                if small.count != reference.count || small.isEmpty != reference.isEmpty {
                    failures.append("\(context): count \(small.count) vs \(reference.count)")
                }
                if small.keys != order { failures.append("\(context): keys \(small.keys) vs order \(order)") }
                if small.values != order.map({ reference[$0]! }) { failures.append("\(context): values differ") }
                if !small.elementsEqual(order.map { ($0, reference[$0]!) }, by: { $0.key == $1.0 && $0.value == $1.1 })
                {
                    failures.append("\(context): iteration differs")
                }
            }
        }
        expectNoFailures(failures, "SmallMap: ")
    }

    @Test("random operations give the same answers as Set, in insertion order")
    func setMatchesSet() {
        var random = SeededGenerator(seed: 0x5E7)
        var failures: [String] = []
        for sequence in 0..<200 {
            var small = SmallSet<UInt64>()
            var reference: Set<UInt64> = []
            var order: [UInt64] = []
            for step in 0..<100 {
                let member = UInt64(random.int(0..<10))
                let context = "sequence \(sequence) step \(step) member \(member)"
                switch random.int(0..<5) {
                case 0, 1:
                    if small.insert(member) != reference.insert(member).inserted {
                        failures.append("\(context): insert differs")
                    }
                    if !order.contains(member) { order.append(member) }
                case 2:
                    if small.remove(member) != reference.remove(member) {
                        failures.append("\(context): remove differs")
                    }
                    order.removeAll { $0 == member }
                case 3:
                    let other = Set((0..<3).map { _ in UInt64(random.int(0..<10)) })
                    var otherSmall = SmallSet<UInt64>()
                    otherSmall.formUnion(other)
                    if small.isDisjoint(with: otherSmall) != reference.isDisjoint(with: other) {
                        failures.append("\(context): isDisjoint differs")
                    }
                default:
                    if small.contains(member) != reference.contains(member) {
                        failures.append("\(context): contains differs")
                    }
                }
                if small.count != reference.count { failures.append("\(context): count differs") }
                if Array(small) != order { failures.append("\(context): order \(Array(small)) vs \(order)") }
            }
        }
        expectNoFailures(failures, "SmallSet: ")
    }

    @Test("equality and hashing ignore the order, as Dictionary's and Set's do")
    func equalityIgnoresOrder() {
        let forward: SmallMap<Int, String> = [1: "a", 2: "b", 3: "c"]
        var backward = SmallMap<Int, String>()
        for key in [3, 2, 1] { backward[key] = forward[key] }
        #expect(forward == backward)
        #expect(forward.hashValue == backward.hashValue)
        backward[2] = "x"
        #expect(forward != backward)

        let set: SmallSet<Int> = [1, 2, 3]
        let reversed: SmallSet<Int> = [3, 2, 1]
        #expect(set == reversed)
        #expect(set.hashValue == reversed.hashValue)
        #expect(set != [1, 2])
    }

    @Test("removeAll(where:) keeps the others in their order")
    func removeWhere() {
        var map: SmallMap<Int, Int> = [:]
        for key in 0..<10 { map[key] = key * key }
        map.removeAll { key, _ in key % 3 == 0 }
        #expect(map.keys == [1, 2, 4, 5, 7, 8])
        #expect(map.values == [1, 4, 16, 25, 49, 64])

        var set: SmallSet<Int> = [5, 1, 4, 2, 3]
        set.removeAll { $0 % 2 == 0 }
        #expect(Array(set) == [5, 1, 3])
    }
}
