import TestKit
import Testing

@testable import TouchModel

/// SortedMap and SortedSet replace Dictionary and Set for the scene's targets and a target's actions: they
/// must answer exactly as those would, whatever the sequence of operations, and keep their keys in ascending order.
@Suite("SortedMap and SortedSet against Dictionary and Set")
struct SortedMapTests {
    /// Keys that sort in every way that matters: empty, prefixes of each other, non-ASCII, and two spellings of "é"
    /// that String considers equal.
    static let names = ["", "a", "ab", "abc", "b", "kiosk", "Kiosk", "pay", "päy", "caf\u{E9}", "cafe\u{301}", "z"]

    @Test("random operations give the same answers as Dictionary, with the keys sorted")
    func mapMatchesDictionary() {
        var random = SeededGenerator(seed: 0x50_47ED)
        var failures: [String] = []
        for sequence in 0..<200 {
            var sorted = SortedMap<String, Int>()
            var reference: [String: Int] = [:]
            for step in 0..<100 {
                let key = Self.names[random.int(0..<Self.names.count)]
                let value = random.int(0..<1000)
                let context = "sequence \(sequence) step \(step) key \(key.debugDescription)"
                switch random.int(0..<5) {
                case 0:
                    sorted[key] = value
                    reference[key] = value
                case 1:
                    if sorted.updateValue(value, forKey: key) != reference.updateValue(value, forKey: key) {
                        failures.append("\(context): updateValue differs")
                    }
                case 2:
                    sorted[key] = nil
                    reference[key] = nil
                case 3:
                    if sorted.removeValue(forKey: key) != reference.removeValue(forKey: key) {
                        failures.append("\(context): removeValue differs")
                    }
                default:
                    if sorted[key] != reference[key] { failures.append("\(context): lookup differs") }
                }
                if sorted.count != reference.count || sorted.isEmpty != reference.isEmpty {
                    failures.append("\(context): count \(sorted.count) vs \(reference.count)")
                }
                let keys = reference.keys.sorted()
                if sorted.keys != keys { failures.append("\(context): keys \(sorted.keys) vs \(keys)") }
                if sorted.values != keys.map({ reference[$0]! }) { failures.append("\(context): values differ") }
                if !sorted.elementsEqual(keys.map { ($0, reference[$0]!) }, by: { $0.key == $1.0 && $0.value == $1.1 })
                {
                    failures.append("\(context): iteration differs")
                }
            }
        }
        expectNoFailures(failures, "SortedMap: ")
    }

    @Test("random operations give the same answers as Set, with the members sorted")
    func setMatchesSet() {
        var random = SeededGenerator(seed: 0x50_475E7)
        var failures: [String] = []
        for sequence in 0..<200 {
            let initial = (0..<random.int(0..<8)).map { _ in Self.names[random.int(0..<Self.names.count)] }
            var sorted = SortedSet(initial)
            var reference = Set(initial)
            for step in 0..<100 {
                let member = Self.names[random.int(0..<Self.names.count)]
                let context = "sequence \(sequence) step \(step) member \(member.debugDescription)"
                switch random.int(0..<3) {
                case 0:
                    if sorted.insert(member) != reference.insert(member).inserted {
                        failures.append("\(context): insert differs")
                    }
                case 1:
                    if sorted.remove(member) != reference.remove(member) {
                        failures.append("\(context): remove differs")
                    }
                default:
                    if sorted.contains(member) != reference.contains(member) {
                        failures.append("\(context): contains differs")
                    }
                }
                if sorted.count != reference.count { failures.append("\(context): count differs") }
                if Array(sorted) != reference.sorted() { failures.append("\(context): members differ") }
            }
        }
        expectNoFailures(failures, "SortedSet: ")
    }

    @Test("equal when they hold the same members, however they were built")
    func equality() {
        #expect(SortedSet(["b", "a", "b"]) == SortedSet(["a", "b"]))
        #expect(SortedSet(["b", "a"]).hashValue == SortedSet(["a", "b"]).hashValue)
        var map = SortedMap<String, Int>()
        map["b"] = 2
        map["a"] = 1
        var other = SortedMap<String, Int>()
        other["a"] = 1
        other["b"] = 2
        #expect(map == other)
    }
}
