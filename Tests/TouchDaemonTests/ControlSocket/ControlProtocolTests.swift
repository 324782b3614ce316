import Foundation
import Glibc
import Testing

@testable import TouchDaemon

/// Decoding request lines (K3, K9), encoding the server's lines, the per-connection queue and the role decision (K4).
struct ControlProtocolTests {
    private func decode(_ text: String) -> Result<ControlInbound, ControlRefusal> {
        ControlProtocol.decode(Array(text.utf8))
    }

    private func refusal(_ text: String) -> ControlRefusal? {
        if case .failure(let refusal) = decode(text) { return refusal }
        return nil
    }

    @Test func decodesEveryVerb() {
        let cases: [(String, ControlInbound)] = [
            (#"{"type":"hello","v":1,"id":1}"#, .hello(id: .number(1), version: 1)),
            (#"{"id":"a","type":"hello","v":2}"#, .hello(id: .string("a"), version: 2)),
            (#"{"type":"state","id":-9223372036854775808}"#, .request(id: .number(.min), command: .state)),
            (#"{"type":"stats","id":""}"#, .request(id: .string(""), command: .stats)),
            (
                #"{"type":"set","id":4,"control":"pay","enabled":false}"#,
                .request(id: .number(4), command: .set(control: "pay", enabled: false, selected: nil, value: nil))
            ),
            (
                #"{"type":"set","id":5,"control":"volume","value":1,"selected":true}"#,
                .request(id: .number(5), command: .set(control: "volume", enabled: nil, selected: true, value: 1))
            ),
            (
                #"{"type":"set","id":5,"control":"volume","value":0.8}"#,
                .request(id: .number(5), command: .set(control: "volume", enabled: nil, selected: nil, value: 0.8))
            ),
            (
                #"{"type":"send","id":6,"control":"pay","events":["touchUpInside","x"]}"#,
                .request(id: .number(6), command: .send(control: "pay", events: ["touchUpInside", "x"]))
            ),
            (#"{"type":"screen","id":7,"screen":"admin"}"#, .request(id: .number(7), command: .screen("admin"))),
            (#"{"type":"screen","id":7}"#, .request(id: .number(7), command: .screen(nil))),
            (
                #"{"type":"subscribe","id":8}"#,
                .request(id: .number(8), command: .subscribe(ControlSubscriptionFilter()))
            ),
            (
                #"{"type":"subscribe","id":8,"kinds":["control"],"controls":[],"events":["a"],"gestures":["g"]}"#,
                .request(
                    id: .number(8),
                    command: .subscribe(
                        ControlSubscriptionFilter(kinds: ["control"], controls: [], events: ["a"], gestures: ["g"])))
            ),
            (#"{"type":"unsubscribe","id":9}"#, .request(id: .number(9), command: .unsubscribe)),
            (#"{"type":"speech","id":10}"#, .request(id: .number(10), command: .speech(nil))),
            (#"{"type":"speech","id":10,"mode":"on"}"#, .request(id: .number(10), command: .speech(true))),
            (#"{"type":"speech","id":10,"mode":"off"}"#, .request(id: .number(10), command: .speech(false))),
        ]
        for (text, expected) in cases {
            #expect(decode(text) == .success(expected), "\(text)")
        }
    }

    @Test func refusesMalformedRequestsWithAStructuredError() throws {
        let badUTF8 = ControlProtocol.decode([UInt8](#"{"type":"state","id":""#.utf8) + [0xFF, 0x22, 0x7D])
        #expect(
            badUTF8
                == .failure(ControlRefusal(id: nil, error: .badRequest("not valid JSON: invalid UTF-8 at byte 22"))))
        let cases: [(String, ControlRequestID?, String, String)] = [
            ("{", nil, "bad_request", "not valid JSON: expected a member name (a string) at byte 1"),
            ("[1]", nil, "bad_request", "a request must be a JSON object"),
            (#"{"id":1}"#, nil, "bad_request", "the request has no \"type\""),
            (#"{"type":1,"id":1}"#, nil, "bad_request", "\"type\" must be a string"),
            (#"{"type":"state"}"#, nil, "bad_request", "the request has no \"id\""),
            (
                #"{"type":"state","id":1.5}"#, nil, "bad_request",
                "\"id\" must be an integer (64-bit) or a string of at most 64 bytes"
            ),
            (
                #"{"type":"state","id":9223372036854775808}"#, nil, "bad_request",
                "\"id\" must be an integer (64-bit) or a string of at most 64 bytes"
            ),
            (
                #"{"type":"state","id":"\#(String(repeating: "x", count: 65))"}"#, nil, "bad_request",
                "\"id\" must be an integer (64-bit) or a string of at most 64 bytes"
            ),
            (
                #"{"type":"state","id":1,"id":2}"#, nil, "bad_request",
                "not valid JSON: duplicate member name \"id\" at byte 23"
            ),
            (
                #"{"type":"set","id":1,"control":"a","value":1e999}"#, nil, "bad_request",
                "not valid JSON: number out of range at byte 43"
            ),
            (
                #"{"type":"define_action","id":3,"argv":["/bin/sh"]}"#, .number(3), "unknown_verb",
                "no verb \"define_action\""
            ),
            (
                #"{"type":"state","id":3,"path":"/tmp/x"}"#, .number(3), "bad_request",
                "\"state\" has no member \"path\""
            ),
            (#"{"type":"hello","id":3}"#, .number(3), "bad_request", "hello needs \"v\", the protocol version"),
            (#"{"type":"hello","id":3,"v":"1"}"#, .number(3), "bad_request", "\"v\" must be an integer"),
            (#"{"type":"set","id":3,"enabled":true}"#, .number(3), "bad_request", "the request needs \"control\""),
            (
                #"{"type":"set","id":3,"control":1,"enabled":true}"#, .number(3), "bad_request",
                "\"control\" must be a string"
            ),
            (
                #"{"type":"set","id":3,"control":"a"}"#, .number(3), "bad_request",
                "set needs at least one of \"enabled\", \"selected\" and \"value\""
            ),
            (
                #"{"type":"set","id":3,"control":"a","enabled":1}"#, .number(3), "bad_request",
                "\"enabled\" must be true or false"
            ),
            (
                #"{"type":"set","id":3,"control":"a","value":"1"}"#, .number(3), "bad_request",
                "\"value\" must be a number"
            ),
            (#"{"type":"send","id":3,"control":"a"}"#, .number(3), "bad_request", "send needs \"events\""),
            (
                #"{"type":"send","id":3,"control":"a","events":[]}"#, .number(3), "bad_request",
                "\"events\" must name at least one event"
            ),
            (
                #"{"type":"send","id":3,"control":"a","events":"x"}"#, .number(3), "bad_request",
                "\"events\" must be a list of strings"
            ),
            (
                #"{"type":"subscribe","id":3,"kinds":[1]}"#, .number(3), "bad_request",
                "\"kinds\" must be a list of strings"
            ),
            (#"{"type":"screen","id":3,"screen":null}"#, .number(3), "bad_request", "\"screen\" must be a string"),
        ]
        for (text, id, wireCode, message) in cases {
            let code = try #require(ControlError.Code(rawValue: wireCode))
            #expect(
                refusal(text) == ControlRefusal(id: id, error: ControlError(code: code, message: message)), "\(text)")
        }
        let deep = String(repeating: "[", count: 100_000)
        #expect(refusal(deep)?.error.message == "not valid JSON: nesting deeper than 32 levels at byte 32")
    }

    /// The verbs and error codes are enums so that a new one cannot be half-handled; the protocol document must
    /// name every one of them.
    @Test func everyVerbAndErrorCodeIsDocumented() throws {
        let document = try String(
            contentsOf: TestSupport.packageRoot.appendingPathComponent("docs/control-socket.md"), encoding: .utf8)
        for verb in ControlProtocol.Verb.allCases {
            #expect(document.contains("\"\(verb.rawValue)\""), "verb \(verb.rawValue)")
        }
        for code in ControlError.Code.allCases {
            #expect(document.contains("`\(code.rawValue)`"), "error code \(code.rawValue)")
        }
    }

    @Test func knowsWhichVerbsNeedTheControllerRole() {
        #expect(ControlProtocol.needsController(.set(control: "a", enabled: true, selected: nil, value: nil)))
        #expect(ControlProtocol.needsController(.send(control: "a", events: ["x"])))
        #expect(ControlProtocol.needsController(.screen("admin")))
        #expect(!ControlProtocol.needsController(.screen(nil)))
        #expect(!ControlProtocol.needsController(.state))
        #expect(!ControlProtocol.needsController(.stats))
        #expect(!ControlProtocol.needsController(.subscribe(ControlSubscriptionFilter())))
        #expect(!ControlProtocol.needsController(.unsubscribe))
    }

    @Test func encodesTheServersLines() {
        #expect(
            ControlProtocol.response(id: .number(7), result: #"{"a":1}"#)
                == #"{"type":"response","id":7,"ok":true,"result":{"a":1}}"#)
        #expect(
            ControlProtocol.failure(
                id: .string("x\"y"), error: ControlError(code: .unknownControl, message: "no 'pya'"))
                == #"{"type":"response","id":"x\"y","ok":false,"error":{"code":"unknown_control","message":"no 'pya'"}}"#
        )
        #expect(
            ControlProtocol.failure(id: nil, error: .badRequest("x"))
                == #"{"type":"response","id":null,"ok":false,"error":{"code":"bad_request","message":"x"}}"#)
        #expect(
            ControlProtocol.hello(
                id: .number(1), server: "touchd/\(Touchd.version)", generation: 1, role: .controller, client: 3)
                == #"{"type":"hello","v":1,"id":1,"server":"touchd/"# + Touchd.version
                + #"","generation":1,"role":"controller","client":3}"#
        )
        func text(_ line: ControlProtocol.SequencedLine, seq: Int) -> String {
            line.lead + String(seq) + line.trail + String(decoding: line.body, as: UTF8.self)
        }
        #expect(
            text(ControlProtocol.subscribed(id: .number(8), snapshot: "{}"), seq: 1)
                == "{\"type\":\"response\",\"id\":8,\"ok\":true,\"seq\":1,\"result\":{}}\n")
        #expect(
            text(ControlProtocol.event(members: #""kind":"screen","screen":"a""#), seq: 2)
                == "{\"type\":\"event\",\"seq\":2,\"kind\":\"screen\",\"screen\":\"a\"}\n")
        #expect(
            text(ControlProtocol.overflow(dropped: 4), seq: 3) == "{\"type\":\"overflow\",\"seq\":3,\"dropped\":4}\n")
        #expect(text(ControlProtocol.shutdown(), seq: 4) == "{\"type\":\"shutdown\",\"seq\":4}\n")
    }

    // MARK: - Roles (K4)

    @Test func decidesRolesFromCredentials() {
        func role(uid: uid_t, gid: gid_t, groups: [gid_t] = [], client: gid_t? = 100, admin: gid_t? = 200)
            -> ControlRole?
        {
            ControlServer.role(
                uid: uid, gid: gid, groups: groups, serverUID: 999, clientGroup: client, adminGroup: admin)
        }
        #expect(role(uid: 0, gid: 0) == .controller)
        #expect(role(uid: 999, gid: 5) == .controller)
        #expect(role(uid: 1000, gid: 200) == .controller)
        #expect(role(uid: 1000, gid: 1000, groups: [7, 200]) == .controller)
        #expect(role(uid: 1000, gid: 100) == .observer)
        #expect(role(uid: 1000, gid: 1000, groups: [100]) == .observer)
        #expect(role(uid: 1000, gid: 100, groups: [200]) == .controller)
        #expect(role(uid: 1000, gid: 1000, groups: [300]) == nil)
        #expect(role(uid: 1000, gid: 100, client: nil, admin: nil) == nil)
        #expect(role(uid: 0, gid: 0, client: nil, admin: nil) == .controller)
        #expect(role(uid: 65534, gid: 65534, groups: [65534]) == nil)
    }

    // MARK: - The per-connection queue

    private func event(_ text: String) -> ControlProtocol.SequencedLine {
        ControlProtocol.event(members: #""kind":"control","n":"# + text)
    }

    private func drain(_ outbox: inout ControlOutbox) -> [String] {
        var lines: [String] = []
        while let (line, _) = outbox.first {
            lines.append(String(decoding: line.head + line.body, as: UTF8.self))
            outbox.didWrite(line.size)
        }
        return lines
    }

    @Test func queueCoalescesMotionInPlaceKeepingItsSequenceNumber() {
        var outbox = ControlOutbox(maxLines: 10, maxBytes: 10_000)
        #expect(outbox.append(event("1"), coalescingKey: "drag") == .queued)
        #expect(outbox.append(event("2"), coalescingKey: "other") == .queued)
        #expect(outbox.append(event("3"), coalescingKey: "drag") == .coalesced, "other motion is no barrier")
        // A discrete line is: motion after it never jumps ahead of it (a drag ahead of its touchDragExit).
        #expect(outbox.append(event("4")) == .queued)
        #expect(outbox.append(event("5"), coalescingKey: "drag") == .queued)
        #expect(outbox.append(event("6"), coalescingKey: "drag") == .coalesced)
        #expect(outbox.count == 4)
        #expect(
            drain(&outbox) == [
                "{\"type\":\"event\",\"seq\":1,\"kind\":\"control\",\"n\":3}\n",
                "{\"type\":\"event\",\"seq\":2,\"kind\":\"control\",\"n\":2}\n",
                "{\"type\":\"event\",\"seq\":3,\"kind\":\"control\",\"n\":4}\n",
                "{\"type\":\"event\",\"seq\":4,\"kind\":\"control\",\"n\":6}\n",
            ])
        #expect(outbox.bytes == 0)

        // A line that has begun to go out is never changed: the newer one queues behind it.
        #expect(outbox.append(event("5"), coalescingKey: "drag") == .queued)
        outbox.didWrite(3)
        #expect(outbox.append(event("6"), coalescingKey: "drag") == .queued)
        #expect(outbox.append(event("7"), coalescingKey: "drag") == .coalesced)
        let rest = drain(&outbox)
        #expect(rest.count == 2)
        #expect(rest.last == "{\"type\":\"event\",\"seq\":6,\"kind\":\"control\",\"n\":7}\n")
    }

    @Test func queueIsBoundedInLinesAndBytes() {
        var lines = ControlOutbox(maxLines: 2, maxBytes: 10_000)
        #expect(lines.append(plain: Array("a\n".utf8)) == .queued)
        #expect(lines.append(event("1")) == .queued)
        #expect(lines.append(event("2")) == .full)
        #expect(lines.append(event("2"), coalescingKey: "k") == .full)
        #expect(lines.append(ControlProtocol.overflow(dropped: 1), force: true) == .queued)
        let rewritten = lines.rewriteLast(ControlProtocol.overflow(dropped: 5))
        #expect(rewritten)
        #expect(
            drain(&lines) == [
                "a\n", "{\"type\":\"event\",\"seq\":1,\"kind\":\"control\",\"n\":1}\n",
                "{\"type\":\"overflow\",\"seq\":2,\"dropped\":5}\n",
            ])

        var bytes = ControlOutbox(maxLines: 100, maxBytes: 10)
        #expect(bytes.append(plain: Array("123456789\n".utf8)) == .queued)
        #expect(bytes.append(plain: Array("\n".utf8)) == .full)
        bytes.didWrite(10)
        #expect(bytes.isEmpty)
        #expect(bytes.append(plain: Array("12345678901\n".utf8)) == .full)
    }

    @Test func queueKeepsOrderAcrossManyLines() {
        var outbox = ControlOutbox(maxLines: 50, maxBytes: 1 << 20)
        var expected = 1
        for round in 0..<100 {
            for index in 0..<40 {
                #expect(
                    outbox.append(
                        event("\(round * 40 + index)"), coalescingKey: index % 3 == 0 ? "k\(round)-\(index)" : nil)
                        == .queued)
            }
            // Write some (partly), leaving the rest for the next round.
            for _ in 0..<(round % 2 == 0 ? 35 : 45) {
                guard let (line, _) = outbox.first else { break }
                let text = String(decoding: line.head, as: UTF8.self)
                #expect(text == "{\"type\":\"event\",\"seq\":\(expected),")
                expected += 1
                outbox.didWrite(1)
                outbox.didWrite(line.size - 1)
            }
        }
    }
}
