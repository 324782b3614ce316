import TestKit
import Testing

@testable import TouchDaemon

@Suite("JSONLine numbers")
struct JSONLineTests {
    /// Around every power of ten, the ends of the range and a seeded spread: the digits written in place are exactly
    /// what `String(_:)` makes.
    @Test func integersAreWrittenAsStringWritesThem() {
        var values: [Int] = [0, 1, -1, 9, -9, .max, .min, .max - 1, .min + 1]
        var power = 1
        while true {
            values += [power - 1, power, power + 1, -power + 1, -power, -power - 1]
            let (next, overflow) = power.multipliedReportingOverflow(by: 10)
            if overflow { break }
            power = next
        }
        var random = SeededGenerator(seed: 40)
        for _ in 0..<2_000 {
            values.append(Int.random(in: .min ... .max, using: &random) >> Int.random(in: 0...63, using: &random))
        }
        for value in values {
            var bytes: [UInt8] = Array("x".utf8)
            JSONLine.appendInteger(value, to: &bytes)
            #expect(String(decoding: bytes, as: UTF8.self) == "x" + String(value), "\(value)")
        }
    }

    @Test func numbersKeepTheirForm() {
        let cases: [(Double, String)] = [
            (0, "0"), (-0.0, "0"), (700, "700"), (-3, "-3"), (1.5, "1.5"), (-0.25, "-0.25"),
            (999_999_999_999_999, "999999999999999"), (1e15, "1000000000000000.0"), (-1e15, "-1000000000000000.0"),
            (.infinity, "null"), (-.infinity, "null"), (.nan, "null"),
        ]
        for (value, text) in cases {
            #expect(JSONLine.number(value) == text, "\(value)")
            var line = JSONLine()
            line.add("n", value)
            #expect(line.line == #"{"n":\#(text)}"#, "\(value)")
        }
    }

    @Test func aMessageWithEveryFieldParsesBack() throws {
        let delivery = ActionDelivery(
            action: "pay", target: "till", control: "b\"1\\", event: "touchUpInside", timeMicroseconds: .max,
            contact: -1, x: 12.5, y: -0.0, value: 1e300, responder: "r\n", gesture: "g", device: "event5",
            generation: .min)
        let text = delivery.json
        #expect(
            text == #"{"action":"pay","target":"till","control":"b\"1\\","event":"touchUpInside","#
                + #""time_us":9223372036854775807,"contact":-1,"x":12.5,"y":0,"value":1e+300,"responder":"r\n","#
                + #""gesture":"g","device":"event5","generation":-9223372036854775808}"#)
        let parsed = try JSONValue.parse(Array(text.utf8))
        #expect(parsed["contact"] == .integer(-1))
        #expect(parsed["generation"] == .integer(.min))
        #expect(parsed["control"] == .string("b\"1\\"))
    }
}
