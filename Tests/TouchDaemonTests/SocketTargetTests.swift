import Foundation
import Testing

@testable import TouchDaemon

/// The socket-target sender against real Unix sockets in a temporary directory. Nothing here measures time: every
/// wait polls for a condition with a generous deadline, so a loaded machine makes the tests slower, not flaky.
@Suite(.serialized)
struct SocketTargetTests {
    // MARK: - Messages

    @Test func deliveryJSONHasTheRequiredFieldsFirstThenThePresentOptionalOnes() throws {
        let full = ActionDelivery(
            action: "pay", target: "kiosk", control: "pay", event: "touchUpInside", timeMicroseconds: 1_234_567,
            contact: 0, x: 12.5, y: 700, value: 0.25, responder: "checkout", device: "event5", generation: 3)
        #expect(
            full.json
                == #"{"action":"pay","target":"kiosk","control":"pay","event":"touchUpInside","time_us":1234567,"#
                + #""contact":0,"x":12.5,"y":700,"value":0.25,"responder":"checkout","device":"event5","generation":3}"#
        )

        let minimal = ActionDelivery(
            action: "say \"hi\"\n", target: #"back\slash"#, control: "tab\there", event: "bell\u{7}",
            timeMicroseconds: 5, generation: 1)
        #expect(
            minimal.json
                == #"{"action":"say \"hi\"\n","target":"back\\slash","control":"tab\there","event":"bell\u0007","#
                + #""time_us":5,"generation":1}"#)

        // Whatever the names hold, the message is one line of valid JSON that reads back to the same values.
        for delivery in [full, minimal] {
            #expect(!delivery.json.contains("\n"))
            let object = try #require(
                JSONSerialization.jsonObject(with: Data(delivery.json.utf8)) as? [String: Any])
            #expect(object["action"] as? String == delivery.action)
            #expect(object["target"] as? String == delivery.target)
            #expect(object["control"] as? String == delivery.control)
            #expect(object["event"] as? String == delivery.event)
            #expect((object["time_us"] as? NSNumber)?.uint64Value == delivery.timeMicroseconds)
        }
    }

    @Test func boundedQueueDropsItsOldestElementWhenFull() {
        var queue = BoundedQueue<Int>(capacity: 3)
        #expect(queue.append(1) == nil)
        #expect(queue.popFirst() == 1)
        // Grows while its head is not at the start of the storage.
        for value in 2...4 { #expect(queue.append(value) == nil) }
        #expect(queue.append(5) == 2)
        #expect(queue.append(6) == 3)
        #expect(queue.count == 3)
        #expect([queue.popFirst(), queue.popFirst(), queue.popFirst(), queue.popFirst()] == [4, 5, 6, nil])
        #expect(queue.isEmpty)
        #expect(queue.append(7) == nil)
        #expect(queue.removeAll() == 1)
        #expect(queue.popFirst() == nil)
    }
}
