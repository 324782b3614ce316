import Foundation
import Glibc
import Logging
import Synchronization
import Testing

@testable import TouchDaemon

/// The control-socket server against real clients on a real socket, with a fake input thread that answers the
/// requests the server forwards (fault cases K1–K9 and K12 of fault-cases.md §2.5).
///
/// Nothing here asserts on a duration: every wait polls for a condition with a generous deadline, clients read with
/// a 10-second timeout, and the checks that the server does not spin count its loop passes, which a loaded machine
/// can only make fewer.
@Suite(.serialized)
struct ControlServerTests {
    // MARK: - Requests and responses

    @Test func answersHelloAndForwardsRequestsAnsweringInOrder() throws {
        let harness = try Harness()
        defer { harness.tearDown() }
        let client = try harness.connect()
        let hello = try #require(client.request(#"{"type":"hello","v":1,"id":"h"}"#))
        #expect(
            hello.json
                == #"{"type":"hello","v":1,"id":"h","server":"touchd/test","generation":1,"role":"controller","client":1}"#
        )
        harness.server.setGeneration(4)

        // Pipelined: the server's own answer (bad_request) waits behind the forwarded request before it.
        client.send(
            #"{"type":"state","id":1}"# + "\n" + "not json\n" + #"{"type":"stats","id":2}"# + "\r\n"
                + #"{"type":"screen","id":3,"screen":"admin"}"# + "\n")
        let lines = (0..<4).compactMap { _ in client.readJSON() }
        #expect(lines.map { $0["id"] } == [.integer(1), .null, .integer(2), .integer(3)])
        #expect(lines[0]["result"]?["verb"]?.stringValue == "state")
        #expect(lines[1]["error"]?["code"]?.stringValue == "bad_request")
        #expect(lines[2]["result"]?["verb"]?.stringValue == "stats")
        #expect(lines[3]["result"]?["verb"]?.stringValue == "screen")
        #expect(
            harness.fake.requests.map(\.command) == [.state, .stats, .screen("admin")])
        #expect(harness.fake.requests.allSatisfy { $0.client == 1 && $0.role == .controller })

        let second = try harness.connect()
        #expect(second.request(#"{"type":"hello","v":1,"id":1}"#)?["generation"] == .integer(4))
        #expect(second.request(#"{"type":"hello","v":1,"id":1}"#)?["error"]?["code"]?.stringValue == "bad_request")
        #expect(harness.server.statistics.accepted == 2)
        #expect(harness.server.statistics.clients == 2)
    }

    @Test func malformedLinesGetStructuredErrorsAndTheConnectionStaysOpen() throws {
        let harness = try Harness()
        defer { harness.tearDown() }
        let client = try harness.connect()
        #expect(client.request(#"{"type":"hello","v":1,"id":1}"#)?["role"]?.stringValue == "controller")

        // 10⁵ levels do not fit a line (the parser's tests cover them); 60,000 are still far past the limit of 32.
        let deep = String(repeating: "[", count: 60_000)
        let cases: [([UInt8], JSONValue, String)] = [
            (Array(#"{"type":"state","id":""#.utf8) + [0xC0, 0xAF] + Array(#""}"#.utf8), .null, "bad_request"),
            (Array("{\"type\":".utf8), .null, "bad_request"),
            (Array(deep.utf8), .null, "bad_request"),
            (Array(#"{"type":"state","id":1,"type":"stats"}"#.utf8), .null, "bad_request"),
            (Array(#"{"type":"set","id":2,"control":"a","value":1e999}"#.utf8), .null, "bad_request"),
            (Array(#"{"type":"reload_config","id":3}"#.utf8), .integer(3), "unknown_verb"),
            (Array(#"{"type":"state"}"#.utf8), .null, "bad_request"),
            (Array(#"{"type":"state","id":4,"argv":["sh"]}"#.utf8), .integer(4), "bad_request"),
            (Array(#""just a string""#.utf8), .null, "bad_request"),
            ((0..<200).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }.filter { $0 != 10 }, .null, "bad_request"),
        ]
        for (line, id, code) in cases {
            // Blank lines around each one are ignored.
            client.sendBytes(Array("\n  \r\n".utf8) + line + [10] + Array("\r\n".utf8))
            let answer = try #require(
                client.readJSON(), "no answer to \(String(decoding: line.prefix(60), as: UTF8.self))")
            #expect(answer["type"]?.stringValue == "response")
            #expect(answer["ok"] == .bool(false))
            #expect(answer["id"] == id)
            #expect(answer["error"]?["code"]?.stringValue == code)
            #expect(answer["error"]?["message"]?.stringValue?.isEmpty == false)
        }
        // Still open, still in order.
        #expect(client.request(#"{"type":"state","id":99}"#)?["id"] == .integer(99))
        #expect(harness.server.statistics.badRequests == 9)
        #expect(harness.fake.requests.count == 1)
    }

    @Test func helloComesFirstAndAnotherVersionEndsTheConnection() throws {
        let harness = try Harness()
        defer { harness.tearDown() }
        let client = try harness.connect()
        #expect(client.request(#"{"type":"state","id":1}"#)?["error"]?["code"]?.stringValue == "hello_required")
        #expect(client.request(#"{"type":"hello","v":1,"id":2}"#)?["type"]?.stringValue == "hello")

        let other = try harness.connect()
        other.send(#"{"type":"hello","v":2,"id":7}"# + "\n")
        let (lines, closed) = other.readUntilClosed()
        #expect(closed)
        #expect(lines.count == 1)
        #expect(
            lines.first.flatMap { try? JSONValue.parse(Array($0.utf8)) }?["error"]?["code"]?.stringValue
                == "unsupported_version")
        #expect(harness.fake.requests.isEmpty)
    }

    // MARK: - K1: handshake and idle timeouts

    @Test func silentConnectionsTimeOut() throws {
        let harness = try Harness {
            $0.handshakeTimeout = 200_000
            $0.idleTimeout = 300_000
        }
        defer { harness.tearDown() }
        let silent = try harness.connect()
        let idle = try harness.connect()
        #expect(idle.request(#"{"type":"hello","v":1,"id":1}"#)?["type"]?.stringValue == "hello")
        for client in [silent, idle] {
            let (lines, closed) = client.readUntilClosed()
            #expect(closed)
            #expect(lines.count == 1)
            let answer = lines.first.flatMap { try? JSONValue.parse(Array($0.utf8)) }
            #expect(answer?["error"]?["code"]?.stringValue == "timeout")
        }
        #expect(eventually { harness.server.statistics.clients == 0 })
        // A subscriber is not idle.
        let subscriber = try harness.connect()
        #expect(subscriber.request(#"{"type":"hello","v":1,"id":1}"#) != nil)
        #expect(subscriber.request(#"{"type":"subscribe","id":2}"#)?["seq"] == .integer(1))
        usleep(600_000)
        #expect(harness.server.statistics.clients == 1)
    }

    // MARK: - K2: a line over the limit

    @Test func anOverlongLineIsRefusedAndTheConnectionClosed() throws {
        let harness = try Harness()
        defer { harness.tearDown() }
        let client = try harness.connect()
        #expect(client.request(#"{"type":"hello","v":1,"id":1}"#) != nil)
        // Up to 4 MB without a newline; the server stops reading after 64 KiB, so most of it never goes out.
        let chunk = [UInt8](repeating: UInt8(ascii: "x"), count: 65_536)
        var sent = 0
        while sent < 4 << 20 {
            let result = chunk.withUnsafeBytes {
                send(client.socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
            }
            if result > 0 {
                sent += result
                continue
            }
            if result < 0 && errno == EAGAIN {
                var descriptor = pollfd(fd: client.socket, events: Int16(POLLOUT | POLLIN), revents: 0)
                if poll(&descriptor, 1, 10_000) <= 0 || descriptor.revents & Int16(POLLOUT) == 0 { break }
                continue
            }
            break  // EPIPE or ECONNRESET: the server closed the connection
        }
        let (lines, closed) = client.readUntilClosed()
        #expect(closed)
        #expect(lines.count == 1)
        let answer = lines.first.flatMap { try? JSONValue.parse(Array($0.utf8)) }
        #expect(answer?["error"]?["code"]?.stringValue == "line_too_long")
        #expect(answer?["id"] == .null)
        // A line of exactly the limit (newline included) is still read.
        let other = try harness.connect()
        #expect(other.request(#"{"type":"hello","v":1,"id":1}"#) != nil)
        let padding = String(repeating: " ", count: 65_535 - #"{"type":"state","id":5}"#.utf8.count)
        #expect(other.request(#"{"type":"state","id":5}"# + padding)?["id"] == .integer(5))
    }

    // MARK: - K5: a subscriber that never reads

    @Test func aSubscriberThatNeverReadsIsDroppedWhileAnotherKeepsUp() throws {
        let harness = try Harness { $0.overflowGrace = 30_000_000 }
        defer { harness.tearDown() }
        let slow = try harness.connect()
        let fast = try harness.connect()
        for client in [slow, fast] {
            #expect(client.request(#"{"type":"hello","v":1,"id":1}"#) != nil)
            #expect(client.request(#"{"type":"subscribe","id":2}"#)?["seq"] == .integer(1))
        }
        let padding = String(repeating: "p", count: 1000)
        var fastSeq: Int64 = 1
        for batch in 0..<20 {
            // post() only appends and wakes: the fake input thread is never blocked, whoever reads or not.
            harness.server.post(
                (0..<50).map { index in
                    .event(
                        ControlEvent(
                            recipients: [1, 2, 3],
                            members: #""kind":"control","n":\#(batch * 50 + index),"pad":"\#(padding)""#,
                            coalescingKey: nil))
                })
            for _ in 0..<50 {
                let event = try #require(fast.readJSON())
                fastSeq += 1
                #expect(event["seq"] == .integer(fastSeq))
            }
        }
        #expect(eventually { harness.server.statistics.overflowed == 1 })

        // The slow one: contiguous events, then the marker with the next seq, then the end.
        let (lines, closed) = slow.readUntilClosed()
        #expect(closed)
        let values = lines.compactMap { try? JSONValue.parse(Array($0.utf8)) }
        #expect(values.count == lines.count)
        let marker = try #require(values.last)
        #expect(marker["type"]?.stringValue == "overflow")
        let events = values.dropLast()
        #expect(events.count > 100)
        // The subscribe response (seq 1) was read above.
        for (index, event) in events.enumerated() { #expect(event["seq"] == .integer(Int64(index + 2))) }
        #expect(marker["seq"] == .integer(Int64(events.count + 2)))
        let dropped = try #require(marker["dropped"]?.int64Value)
        #expect(dropped >= 1)
        #expect(Int64(events.count) + dropped <= 1000)
        #expect(eventually { harness.fake.disconnected == [1] })
        // The fast one is still there.
        #expect(fast.request(#"{"type":"state","id":3}"#)?["id"] == .integer(3))
    }

    // MARK: - K6: too many connections, and running out of descriptors

    @Test func connectionsOverTheCapAreRefused() throws {
        let harness = try Harness()
        defer { harness.tearDown() }
        var held: [TestClient] = []
        for index in 0..<32 {
            let client = try harness.connect()
            #expect(client.request(#"{"type":"hello","v":1,"id":\#(index)}"#)?["client"] == .integer(Int64(index + 1)))
            held.append(client)
        }
        for _ in 0..<968 {
            let client = try harness.connect()
            let (lines, closed) = client.readUntilClosed()
            #expect(closed)
            #expect(
                lines.first.flatMap { try? JSONValue.parse(Array($0.utf8)) }?["error"]?["code"]?.stringValue
                    == "too_many_clients")
        }
        #expect(eventually { harness.server.statistics.refused == 968 })
        #expect(harness.server.statistics.clients == 32)
        // Room again once one leaves.
        held.removeFirst().disconnect()
        #expect(eventually { harness.server.statistics.clients == 31 })
        let late = try harness.connect()
        #expect(late.request(#"{"type":"hello","v":1,"id":1}"#)?["type"]?.stringValue == "hello")
        #expect(held.count == 31)
    }

    /// Runs `ControlServerDescriptorExhaustion` in a child process (this test binary again): it lowers its own
    /// descriptor limit and fills its descriptor table, which would break tests running in parallel here.
    @Test func runningOutOfDescriptorsPausesAcceptingWithoutSpinning() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe")
        process.arguments = [
            "--testing-library", "swift-testing", "--filter", "ControlServerDescriptorExhaustion",
        ]
        var environment = ProcessInfo.processInfo.environment
        environment[ControlServerDescriptorExhaustion.variable] = "1"
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        #expect(process.terminationStatus == 0, "\(text)")
        #expect(text.contains("acceptsAgainOnceDescriptorsAreFree() passed"), "\(text)")
        #expect(text.contains("descriptor exhaustion exercised"), "\(text)")
    }

    @Test func anIdleServerDoesNotWake() throws {
        let harness = try Harness()
        defer { harness.tearDown() }
        let subscriber = try harness.connect()
        #expect(subscriber.request(#"{"type":"hello","v":1,"id":1}"#) != nil)
        #expect(subscriber.request(#"{"type":"subscribe","id":2}"#) != nil)
        // Within 10 s, 100 ms pass without a wake-up: a subscriber has no deadline, so the poll has no timeout.
        var wakeups = harness.server.statistics.wakeups
        #expect(
            eventually {
                let before = wakeups
                usleep(100_000)
                wakeups = harness.server.statistics.wakeups
                return wakeups == before
            })
    }

    // MARK: - K7: a peer that disconnects mid-write

    @Test func aSubscriberThatLeavesWithAFullBufferIsFreed() throws {
        let harness = try Harness()
        defer { harness.tearDown() }
        let leaving = try harness.connect()
        #expect(leaving.request(#"{"type":"hello","v":1,"id":1}"#) != nil)
        #expect(leaving.request(#"{"type":"subscribe","id":2}"#) != nil)
        let padding = String(repeating: "p", count: 2000)
        harness.server.post(
            (0..<120).map { _ in
                .event(ControlEvent(recipients: [1], members: #""kind":"x","pad":"\#(padding)""#, coalescingKey: nil))
            })
        // Wait until the server's socket buffer is full (the last events cannot have been written yet), then leave.
        usleep(100_000)
        leaving.disconnect()
        #expect(eventually { harness.fake.disconnected == [1] })
        #expect(eventually { harness.server.statistics.clients == 0 })
        harness.server.post([.event(ControlEvent(recipients: [1], members: #""kind":"x""#, coalescingKey: nil))])
        let next = try harness.connect()
        #expect(next.request(#"{"type":"hello","v":1,"id":1}"#)?["client"] == .integer(2))
        #expect(harness.fake.disconnected == [1])
    }

    // MARK: - K9: passed descriptors, unknown verbs

    @Test func passedDescriptorsAreClosedUnread() throws {
        let harness = try Harness()
        defer { harness.tearDown() }
        let marker = harness.directory.appendingPathComponent("passed-\(UUID().uuidString)").path
        #expect(FileManager.default.createFile(atPath: marker, contents: Data("secret".utf8)))
        let descriptors = (0..<3).map { _ in open(marker, O_RDONLY | O_CLOEXEC) }
        #expect(descriptors.allSatisfy { $0 >= 0 })
        let client = try harness.connect()
        #expect(client.sendWithDescriptors(#"{"type":"hello","v":1,"id":1}"# + "\n", descriptors))
        for descriptor in descriptors { close(descriptor) }
        #expect(client.readJSON()?["type"]?.stringValue == "hello")
        #expect(eventually { harness.server.statistics.receivedDescriptors == 3 })
        // No descriptor of this process refers to the file any more: the server closed what it received.
        #expect(eventually { openDescriptors(to: marker) == 0 })
        #expect(
            client.request(#"{"type":"add_action","id":2,"argv":["/bin/sh","-c","id"]}"#)?["error"]?["code"]?
                .stringValue
                == "unknown_verb")
        #expect(harness.logs.captured.contains { $0.contains("sent file descriptors; closed them unread") })
    }

    // MARK: - K12: snapshot, then stream; shutdown

    @Test func theSnapshotComesFirstAndSequenceNumbersOnlyGrow() throws {
        let harness = try Harness()
        defer { harness.tearDown() }
        harness.fake.eventsAfterSubscribe = 5
        let client = try harness.connect()
        #expect(client.request(#"{"type":"hello","v":1,"id":1}"#) != nil)
        let snapshot = try #require(client.request(#"{"type":"subscribe","id":2,"kinds":["control"]}"#))
        #expect(snapshot["type"]?.stringValue == "response")
        #expect(snapshot["seq"] == .integer(1))
        #expect(snapshot["result"]?["snapshot"] == .bool(true))
        for seq in 2...6 {
            let event = try #require(client.readJSON())
            #expect(event["type"]?.stringValue == "event")
            #expect(event["seq"] == .integer(Int64(seq)))
        }
        #expect(
            harness.fake.requests.last?.command
                == .subscribe(ControlSubscriptionFilter(kinds: ["control"], controls: nil, events: nil, gestures: nil)))
        // Unsubscribed: the event the fake posts right after the answer is not written.
        harness.fake.eventsAfterUnsubscribe = 3
        #expect(client.request(#"{"type":"unsubscribe","id":3}"#)?["result"] == .object([]))
        #expect(client.request(#"{"type":"state","id":4}"#)?["id"] == .integer(4))

        harness.server.stop(flushTimeoutMicroseconds: 5_000_000)
        let (lines, closed) = client.readUntilClosed()
        #expect(closed)
        #expect(lines == [#"{"type":"shutdown","seq":7}"#])
        #expect(!FileManager.default.fileExists(atPath: harness.path))
        harness.server.stop(flushTimeoutMicroseconds: 0)
        #expect(eventually { harness.fake.disconnected == [1] })
    }

    // MARK: - K8: rate limit, pending requests

    @Test func requestsOverTheRateAreRefusedInOrder() throws {
        let clock = ManualClock()
        let harness = try Harness(clock: clock) {
            $0.requestBurst = 3
            $0.requestsPerSecond = 1
        }
        defer { harness.tearDown() }
        let client = try harness.connect()
        #expect(client.request(#"{"type":"hello","v":1,"id":0}"#) != nil)
        harness.fake.paused = true
        client.send((1...4).map { #"{"type":"state","id":\#($0)}"# + "\n" }.joined())
        #expect(eventually { harness.server.statistics.rateLimited == 2 })
        harness.fake.paused = false
        let answers = (1...4).compactMap { _ in client.readJSON() }
        #expect(answers.map { $0["id"] } == [.integer(1), .integer(2), .integer(3), .integer(4)])
        #expect(answers.map { $0["error"]?["code"]?.stringValue } == [nil, nil, "rate_limited", "rate_limited"])

        // A second later there is one token again.
        clock.advance(by: 1_000_000)
        #expect(client.request(#"{"type":"stats","id":5}"#)?["ok"] == .bool(true))
        #expect(client.request(#"{"type":"stats","id":6}"#)?["error"]?["code"]?.stringValue == "rate_limited")

    }

    @Test func requestsOverThePendingLimitGetBusyInOrder() throws {
        let harness = try Harness()
        defer { harness.tearDown() }
        let client = try harness.connect()
        #expect(client.request(#"{"type":"hello","v":1,"id":0}"#) != nil)
        // Nine requests while the input thread is busy: the ninth gets busy, after the eight answers.
        harness.fake.paused = true
        client.send((10...18).map { #"{"type":"state","id":\#($0)}"# + "\n" }.joined())
        #expect(eventually { harness.fake.waitingNotes == 8 })
        harness.fake.paused = false
        let busy = (10...18).compactMap { _ in client.readJSON() }
        #expect(busy.map { $0["id"]?.int64Value } == (10...18).map { Int64($0) })
        #expect(busy.last?["error"]?["code"]?.stringValue == "busy")
        #expect(busy.dropLast().allSatisfy { $0["ok"] == .bool(true) })
    }

    // MARK: - K4: another uid

    @Test func anotherUserIsAnObserverOnlyInTheClientGroupAndRefusedOtherwise() throws {
        guard geteuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"),
            FileManager.default.isExecutableFile(atPath: "/usr/bin/python3")
        else { return }
        let observerHarness = try Harness(world: true) { $0.clientGroup = 65534 }
        defer { observerHarness.tearDown() }
        let observed = try runAsNobody(
            path: observerHarness.path,
            lines: [
                #"{"type":"hello","v":1,"id":1}"#, #"{"type":"set","id":2,"control":"pay","enabled":false}"#,
                #"{"type":"screen","id":3,"screen":"admin"}"#, #"{"type":"screen","id":4}"#,
            ])
        let values = observed.compactMap { try? JSONValue.parse(Array($0.utf8)) }
        #expect(values.count == 4)
        #expect(values.first?["role"]?.stringValue == "observer")
        #expect(values.dropFirst().map { $0["error"]?["code"]?.stringValue } == ["unauthorized", "unauthorized", nil])
        #expect(observerHarness.fake.requests.map(\.command) == [.screen(nil)])
        #expect(observerHarness.fake.requests.first?.role == .observer)
        #expect(
            observerHarness.logs.captured.contains { $0.contains("client.uid=65534") && $0.contains("role=observer") })

        let refusedHarness = try Harness(world: true)
        defer { refusedHarness.tearDown() }
        let refused = try runAsNobody(path: refusedHarness.path, lines: [#"{"type":"hello","v":1,"id":1}"#])
        #expect(refused.count == 1)
        #expect(
            refused.first.flatMap { try? JSONValue.parse(Array($0.utf8)) }?["error"]?["code"]?.stringValue
                == "unauthorized")
        #expect(refusedHarness.server.statistics.refused == 1)
        #expect(refusedHarness.logs.captured.contains { $0.contains("control client refused: unauthorized") })
    }

    // MARK: - Hostile input: long lines in floods, backlogs

    /// Four clients pipeline 64 KB lines of 32,000-element arrays while a fifth says hello and asks for the state:
    /// the fifth gets every answer (once, a single such line took seconds to parse and starved it into its hello
    /// timeout), and every flood line gets its own precise refusal.
    @Test func aPoliteClientIsServedWhileFourFloodLongArrays() throws {
        let harness = try Harness()
        defer { harness.tearDown() }
        let array = "[" + Array(repeating: "1", count: 32_000).joined(separator: ",") + "]\n"
        #expect(array.utf8.count <= 65_536)
        let batches = 2
        let batch = 8
        let results = FloodResults()
        let path = harness.path
        for flooder in 0..<4 {
            Thread.detachNewThread {
                guard let client = try? TestClient(path: path) else { return results.finish(flooder, answers: []) }
                var answers: [JSONValue] = []
                guard client.request(#"{"type":"hello","v":1,"id":0}"#)?["type"]?.stringValue == "hello" else {
                    return results.finish(flooder, answers: [])
                }
                for _ in 0..<batches {
                    // Eight lines at once (512 KB): the server takes them a bounded share per pass.
                    guard client.sendBytes(Array(String(repeating: array, count: batch).utf8)) else { break }
                    for _ in 0..<batch {
                        guard let answer = client.readJSON() else { break }
                        answers.append(answer)
                    }
                }
                results.finish(flooder, answers: answers)
            }
        }
        // The flood is on before the polite client starts.
        #expect(eventually { harness.server.statistics.badRequests + harness.server.statistics.rateLimited >= 4 })
        let polite = try harness.connect()
        #expect(polite.request(#"{"type":"hello","v":1,"id":"polite"}"#)?["type"]?.stringValue == "hello")
        for id in 1...10 {
            let answer = polite.request(#"{"type":"state","id":\#(id)}"#)
            #expect(answer?["id"] == .integer(Int64(id)))
            #expect(answer?["result"]?["verb"]?.stringValue == "state")
        }

        #expect(eventually { results.finished == 4 })
        for answers in results.answers {
            #expect(answers.count == batches * batch)
            for answer in answers {
                // Each line is read and refused: an array is no request (bad_request), or, past the rate limit's
                // burst, rate_limited. Never a timeout, never a dropped connection.
                #expect(answer["id"] == .null)
                let code = answer["error"]?["code"]?.stringValue
                #expect(code == "bad_request" || code == "rate_limited", "\(answer.json)")
                if code == "bad_request" {
                    #expect(answer["error"]?["message"]?.stringValue == "a request must be a JSON object")
                }
            }
        }
        let statistics = harness.server.statistics
        #expect(statistics.badRequests + statistics.rateLimited == 4 * batches * batch)
        #expect(statistics.accepted == 5)
        #expect(statistics.clients >= 1)
        #expect(statistics.overflowed == 0)
        #expect(!harness.logs.captured.contains { $0.contains("timed out") })
    }

    /// A backlog of lines sent at once is handled a bounded share per pass (`lineBudget` lines), in order, without
    /// waiting in poll between the shares: all of it is answered, and it took at least that many passes.
    @Test func aBacklogIsHandledInBoundedSharesPerPass() throws {
        let harness = try Harness {
            $0.requestBurst = 1_000
            $0.requestsPerSecond = 1_000
        }
        defer { harness.tearDown() }
        let client = try harness.connect()
        #expect(client.request(#"{"type":"hello","v":1,"id":0}"#) != nil)
        let count = 200
        let before = harness.server.statistics.wakeups
        // Server answers of its own (unknown_verb), so the input thread plays no part; 200 lines in one write.
        client.send((1...count).map { #"{"type":"nope","id":\#($0)}"# + "\n" }.joined())
        let answers = (1...count).compactMap { _ in client.readJSON() }
        #expect(answers.map { $0["id"] } == (1...count).map { .integer(Int64($0)) })
        #expect(answers.allSatisfy { $0["error"]?["code"]?.stringValue == "unknown_verb" })
        let passes = harness.server.statistics.wakeups - before
        #expect(passes >= count / ControlServerLoop.lineBudget, "\(passes)")
        // And a line sent after it is still answered: nothing was left behind.
        #expect(client.request(#"{"type":"state","id":"after"}"#)?["id"] == .string("after"))
    }

    /// Lines followed at once by the end of the connection are all handled, even those left for a later pass.
    @Test func linesBeforeTheEndOfInputAreAllHandled() throws {
        let harness = try Harness {
            $0.requestBurst = 1_000
            $0.requestsPerSecond = 1_000
        }
        defer { harness.tearDown() }
        let client = try harness.connect()
        #expect(client.request(#"{"type":"hello","v":1,"id":0}"#) != nil)
        // 100 requests, then a last one without its newline, which is no request.
        client.send((1...100).map { #"{"type":"nope","id":\#($0)}"# + "\n" }.joined() + #"{"type":"nope","id":101}"#)
        shutdown(client.socket, Int32(SHUT_WR))
        let (lines, closed) = client.readUntilClosed()
        #expect(closed)
        let ids = lines.compactMap { try? JSONValue.parse(Array($0.utf8)) }.map { $0["id"] }
        #expect(ids == (1...100).map { .integer(Int64($0)) })
    }
}

/// The child side of `runningOutOfDescriptorsPausesAcceptingWithoutSpinning`; does nothing in a normal run.
@Suite(.serialized)
struct ControlServerDescriptorExhaustion {
    static let variable = "TOUCHD_TEST_DESCRIPTOR_EXHAUSTION"

    @Test func acceptsAgainOnceDescriptorsAreFree() throws {
        guard ProcessInfo.processInfo.environment[Self.variable] == "1" else { return }
        let harness = try Harness {
            $0.acceptBackoffInitial = 10_000
            $0.acceptBackoffMaximum = 80_000
        }
        defer { harness.tearDown() }
        let served = try harness.connect()
        #expect(served.request(#"{"type":"hello","v":1,"id":1}"#) != nil)
        // Made before the table fills: connecting needs no new descriptor, accepting does.
        let waiting = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
        #expect(waiting >= 0)

        var limit = rlimit()
        getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
        let saved = limit
        var highest: Int32 = 0
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? [] {
            highest = max(highest, Int32(entry) ?? 0)
        }
        limit.rlim_cur = rlim_t(highest + 64)
        #expect(setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0)
        var filler: [Int32] = []
        while true {
            let descriptor = dup(0)
            if descriptor < 0 { break }
            filler.append(descriptor)
        }
        #expect(errno == EMFILE)

        var address = try #require(UnixSocket.address(Array(harness.path.utf8)))
        let connected = withUnsafePointer(to: &address.address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(waiting, $0, address.length) }
        }
        #expect(connected == 0)
        #expect(eventually { harness.server.statistics.acceptErrors >= 3 })
        // Several pauses later, the loop has woken a few times per pause, not thousands.
        let before = harness.server.statistics
        #expect(eventually { harness.server.statistics.acceptErrors >= before.acceptErrors + 3 })
        let after = harness.server.statistics
        #expect(after.wakeups - before.wakeups < 100)
        // The connected client is served meanwhile.
        #expect(served.request(#"{"type":"state","id":2}"#)?["id"] == .integer(2))

        for descriptor in filler { close(descriptor) }
        var restored = saved
        setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &restored)
        // The waiting connection is accepted once the pause ends.
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(waiting, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let hello = Array((#"{"type":"hello","v":1,"id":1}"# + "\n").utf8)
        #expect(hello.withUnsafeBytes { send(waiting, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == hello.count)
        var reply = [UInt8](repeating: 0, count: 4096)
        let received = reply.withUnsafeMutableBytes { recv(waiting, $0.baseAddress, $0.count, 0) }
        #expect(received > 0)
        #expect(String(decoding: reply.prefix(max(0, received)), as: UTF8.self).contains(#""type":"hello""#))
        close(waiting)
        let failures = harness.logs.captured.filter { $0.contains("accept failed") }
        #expect(failures.count == 1)
        #expect(harness.logs.captured.contains { $0.contains("accepting connections again") })
        print(
            "descriptor exhaustion exercised: accept errors \(after.acceptErrors), wake-ups \(after.wakeups - before.wakeups)"
        )
    }
}

// MARK: - Helpers

/// How many of this process's descriptors are open on `path`.
private func openDescriptors(to path: String) -> Int {
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
    return entries.filter {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\($0)")) == path
    }
    .count
}

/// Runs a small Python client as uid/gid 65534 with no supplementary groups; returns the lines it received.
private func runAsNobody(path: String, lines: [String]) throws -> [String] {
    let script = """
        import socket, sys
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(10)
        s.connect(sys.argv[1])
        data = b""
        def fill(count):
            global data
            while data.count(b"\\n") < count:
                try:
                    chunk = s.recv(65536)
                except OSError:
                    return False
                if not chunk:
                    return False
                data += chunk
            return True
        for index, line in enumerate(sys.argv[2:]):
            try:
                s.sendall(line.encode() + b"\\n")
            except OSError:
                pass
            if not fill(index + 1):
                break
        sys.stdout.write(data.decode())
        """
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
    process.arguments =
        ["--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", script, path] + lines
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
}

/// A server on a fresh socket, a fake input thread and a memory log.
private final class Harness {
    let directory: URL
    let path: String
    let logs = LineSink.memory()
    let server: ControlServer
    let fake: FakeInput

    init(
        clock: ManualClock? = nil, world: Bool = false,
        _ configure: (inout ControlServer.Settings) -> Void = { _ in }
    ) throws {
        directory = try TestSupport.makeTemporaryDirectory()
        path = directory.appendingPathComponent("control.sock").path
        let listener = try ControlListener.create(path: path, group: nil).get()
        if world {
            // Another uid must reach the socket: the credential check is what refuses it.
            chmod(directory.path, 0o755)
            chmod(path, 0o666)
        }
        var settings = ControlServer.Settings(serverName: "touchd/test")
        configure(&settings)
        let logs = self.logs
        let logger = Logger(label: "touchd.test") { _ in
            JournalLogHandler(logLevel: .debug, style: .terminal, sink: logs)
        }
        if let clock {
            server = try ControlServer(
                listener: listener, settings: settings, generation: 1, logger: logger, clock: { clock.read() })
        } else {
            server = try ControlServer(listener: listener, settings: settings, generation: 1, logger: logger)
        }
        try server.start()
        fake = FakeInput(server: server)
    }

    func connect() throws -> TestClient {
        try TestClient(path: path)
    }

    func tearDown() {
        server.stop(flushTimeoutMicroseconds: 0)
        fake.stop()
        try? FileManager.default.removeItem(at: directory)
    }
}

/// Stands in for the input thread: takes the server's notes and posts answers, on a thread of its own.
private final class FakeInput: Sendable {
    private struct State {
        var requests: [ControlRequest] = []
        var disconnected: [ControlClientID] = []
        var paused = false
        var stopped = false
        var finished = false
        var eventsAfterSubscribe = 0
        var eventsAfterUnsubscribe = 0
        var waitingNotes = 0
    }

    private let state = Mutex(State())
    private let server: ControlServer

    init(server: ControlServer) {
        self.server = server
        Thread.detachNewThread { [self] in run() }
    }

    var requests: [ControlRequest] { state.withLock { $0.requests } }
    var disconnected: [ControlClientID] { state.withLock { $0.disconnected } }
    /// Requests waiting while paused (counted from the notes the server published, without taking them).
    var waitingNotes: Int { state.withLock { $0.waitingNotes } }
    var paused: Bool {
        get { state.withLock { $0.paused } }
        set { state.withLock { $0.paused = newValue } }
    }
    var eventsAfterSubscribe: Int {
        get { state.withLock { $0.eventsAfterSubscribe } }
        set { state.withLock { $0.eventsAfterSubscribe = newValue } }
    }
    var eventsAfterUnsubscribe: Int {
        get { state.withLock { $0.eventsAfterUnsubscribe } }
        set { state.withLock { $0.eventsAfterUnsubscribe = newValue } }
    }

    func stop() {
        state.withLock { $0.stopped = true }
        _ = eventually { state.withLock { $0.finished } }
    }

    private func run() {
        var held: [ControlNote] = []
        while !state.withLock({ $0.stopped }) {
            var descriptor = pollfd(fd: server.noteFileDescriptor, events: Int16(POLLIN), revents: 0)
            _ = poll(&descriptor, 1, 20)
            if state.withLock({ $0.paused }) {
                // Take the notes (the descriptor would stay readable) but answer nothing yet.
                held += server.takeNotes()
                let waiting = held.filter { if case .request = $0 { true } else { false } }.count
                state.withLock { $0.waitingNotes = waiting }
                continue
            }
            let notes = held + server.takeNotes()
            held = []
            state.withLock { $0.waitingNotes = 0 }
            guard !notes.isEmpty else { continue }
            var messages: [ControlMessage] = []
            for note in notes {
                switch note {
                case .disconnected(let client):
                    state.withLock { $0.disconnected.append(client) }
                case .request(let request):
                    state.withLock { $0.requests.append(request) }
                    messages += answer(request)
                }
            }
            server.post(messages)
        }
        state.withLock { $0.finished = true }
    }

    private func answer(_ request: ControlRequest) -> [ControlMessage] {
        let client = request.client
        switch request.command {
        case .subscribe:
            // An event for this client before the answer must not reach it: it is not subscribed yet.
            var messages: [ControlMessage] = [
                .event(ControlEvent(recipients: [client], members: #""kind":"early""#, coalescingKey: nil)),
                .subscribed(client: client, id: request.id, snapshot: #"{"snapshot":true}"#),
            ]
            for index in 0..<eventsAfterSubscribe {
                messages.append(
                    .event(
                        ControlEvent(
                            recipients: [client + 100, client], members: #""kind":"control","n":\#(index)"#,
                            coalescingKey: nil)))
            }
            return messages
        case .unsubscribe:
            return [.unsubscribed(client: client, id: request.id)]
                + (0..<eventsAfterUnsubscribe).map { _ in
                    .event(ControlEvent(recipients: [client], members: #""kind":"late""#, coalescingKey: nil))
                }
        default:
            let verb: String
            switch request.command {
            case .state: verb = "state"
            case .stats: verb = "stats"
            case .set: verb = "set"
            case .send: verb = "send"
            case .screen: verb = "screen"
            case .reload: verb = "reload"
            case .speech: verb = "speech"
            case .subscribe, .unsubscribe: verb = "?"
            }
            return [.response(client: client, id: request.id, result: #"{"verb":"\#(verb)"}"#)]
        }
    }
}

/// What the flooding clients of `aPoliteClientIsServedWhileFourFloodLongArrays` received, from their threads.
private final class FloodResults: Sendable {
    private let state = Mutex<[Int: [JSONValue]]>([:])

    func finish(_ flooder: Int, answers: [JSONValue]) {
        state.withLock { $0[flooder] = answers }
    }

    var finished: Int { state.withLock { $0.count } }
    var answers: [[JSONValue]] { state.withLock { state in state.keys.sorted().map { state[$0]! } } }
}

/// A blocking client socket with a 10-second receive timeout.
private final class TestClient {
    let socket: Int32
    private var buffer: [UInt8] = []
    private var open = true

    init(path: String) throws {
        socket = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
        try #require(socket >= 0)
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(socket, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = try #require(UnixSocket.address(Array(path.utf8)))
        let result = withUnsafePointer(to: &address.address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(socket, $0, address.length) }
        }
        try #require(result == 0, "connect: \(UnixSocket.describe(errno))")
    }

    deinit { disconnect() }

    func disconnect() {
        if open { close(socket) }
        open = false
    }

    func send(_ text: String) {
        sendBytes(Array(text.utf8))
    }

    @discardableResult
    func sendBytes(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes {
                Glibc.send(socket, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL))
            }
            guard sent > 0 else { return false }
            offset += sent
        }
        return true
    }

    /// Sends `text` with `descriptors` attached (SCM_RIGHTS).
    func sendWithDescriptors(_ text: String, _ descriptors: [Int32]) -> Bool {
        var bytes = Array(text.utf8)
        let dataLength = descriptors.count * MemoryLayout<Int32>.size
        let headerLength = MemoryLayout<cmsghdr>.size
        var control = [UInt8](repeating: 0, count: headerLength + ((dataLength + 7) & ~7))
        var header = cmsghdr()
        header.cmsg_len = headerLength + dataLength
        header.cmsg_level = SOL_SOCKET
        header.cmsg_type = Int32(SCM_RIGHTS)
        control.withUnsafeMutableBytes { buffer in
            buffer.storeBytes(of: header, as: cmsghdr.self)
            for (index, descriptor) in descriptors.enumerated() {
                buffer.storeBytes(of: descriptor, toByteOffset: headerLength + index * 4, as: Int32.self)
            }
        }
        let count = bytes.count
        let sent = bytes.withUnsafeMutableBytes { data in
            control.withUnsafeMutableBytes { control in
                var vector = iovec(iov_base: data.baseAddress, iov_len: count)
                return withUnsafeMutablePointer(to: &vector) { vector in
                    var message = msghdr(
                        msg_name: nil, msg_namelen: 0, msg_iov: vector, msg_iovlen: 1, msg_control: control.baseAddress,
                        msg_controllen: control.count, msg_flags: 0)
                    return sendmsg(socket, &message, Int32(MSG_NOSIGNAL))
                }
            }
        }
        return sent == count
    }

    /// The next line; nil at the end of the connection, on an error, or after 10 seconds without one.
    func readLine() -> String? {
        while true {
            if let newline = buffer.firstIndex(of: 10) {
                let line = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeFirst(newline + 1)
                return line
            }
            var chunk = [UInt8](repeating: 0, count: 65_536)
            let received = chunk.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            guard received > 0 else { return nil }
            buffer += chunk[..<received]
        }
    }

    func readJSON() -> JSONValue? {
        guard let line = readLine() else { return nil }
        return try? JSONValue.parse(Array(line.utf8))
    }

    func request(_ text: String) -> JSONValue? {
        send(text + "\n")
        return readJSON()
    }

    /// Every line until the server closes the connection; `closed` is false when 10 seconds passed first.
    func readUntilClosed() -> (lines: [String], closed: Bool) {
        var lines: [String] = []
        while true {
            if let line = readLine() {
                lines.append(line)
                continue
            }
            let error = errno
            // The end of input, or a reset (the server closed with our unread bytes in its buffer).
            return (lines, error != EAGAIN)
        }
    }
}
