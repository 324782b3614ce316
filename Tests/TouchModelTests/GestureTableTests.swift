import Testing
import TouchModel

/// The recognizer table (GestureStateMachine.swift) against a specification written out here
/// independently from UIKit's documented state diagram (docs/uikit-semantics.md §8).
@Suite("Gesture recognizer table")
struct GestureTableTests {
    typealias State = GestureRecognizer.State
    typealias Input = GestureRecognizer.Input

    /// The rows that can happen: (state, input) → (next, events). Every other pair is unexpected.
    static let expected: [String: (State, [GestureRecognizer.Event])] = [
        "possible/begin": (.began, [.began, .recognized]),
        "possible/recognize": (.ended, [.recognized]),
        "possible/fail": (.failed, [.failed]),
        "possible/cancel": (.failed, [.failed]),
        "began/update": (.changed, [.changed]),
        "began/finish": (.ended, [.ended]),
        "began/cancel": (.cancelled, [.cancelled]),
        "changed/update": (.changed, [.changed]),
        "changed/finish": (.ended, [.ended]),
        "changed/cancel": (.cancelled, [.cancelled]),
        "ended/reset": (.possible, []),
        "cancelled/reset": (.possible, []),
        "failed/reset": (.possible, []),
    ]

    @Test("every row", arguments: State.allCases, Input.allCases)
    func row(_ state: State, _ input: Input) {
        let transition = GestureRecognizer.transition(from: state, on: input)
        if let (next, events) = Self.expected["\(state.rawValue)/\(input.rawValue)"] {
            #expect(transition.isExpected)
            #expect(transition.next == next)
            #expect(transition.events == events)
        } else {
            #expect(!transition.isExpected)
            #expect(transition.next == state, "an unexpected row must not change the state")
            #expect(transition.events.isEmpty)
        }
    }

    @Test("finished states are exactly those that reset")
    func finished() {
        for state in State.allCases {
            #expect(state.isFinished == GestureRecognizer.transition(from: state, on: .reset).isExpected)
        }
    }

    @Test("event names round-trip and cover the configuration's gesture events")
    func eventNames() {
        for (name, event) in GestureRecognizer.Event.named {
            #expect(GestureRecognizer.Event(name: name) == event)
            #expect(event.description == name)
        }
        #expect(GestureRecognizer.Event(name: "touchDown") == nil)
        #expect(
            GestureRecognizer.Event.named.map(\.name) == [
                "began", "changed", "recognized", "ended", "cancelled", "failed",
            ])
    }
}
