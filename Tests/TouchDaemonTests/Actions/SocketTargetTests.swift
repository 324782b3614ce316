import Foundation
import Glibc
import Logging
import Synchronization
import Testing
import TouchModel

@testable import TouchDaemon

/// The socket-target sender against real Unix sockets in a temporary directory. Nothing here asserts on a duration:
/// every wait polls for a condition with a generous deadline, and the checks that the thread sleeps count its loop
/// passes, which a loaded machine can only make fewer. A slow machine makes these tests slower, not flaky.
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

    /// Every message is one line of valid JSON that reads back to the delivery's values, with its terminator, over names
    /// that need escaping, multi-byte UTF-8, every optional field present or not, extreme integers, awkward doubles
    /// (not finite: null) and a name of 64 KiB of quotes.
    @Test func messagesReadBackToTheirDeliveries() throws {
        let names = [
            "", "pay", "say \"hi\"", #"back\slash"#, "tab\there", "bell\u{7}\u{1f}", "café ☕ 東京", "\u{10FFFF}",
            String(repeating: "long-name ", count: 60),
        ]
        let doubles: [Double?] = [
            nil, 0, -0.0, 12.5, 700, -3, 0.1, 1e15, 1e-7, 123_456_789.123, .infinity, -.infinity, .nan,
            Double.greatestFiniteMagnitude, Double.leastNonzeroMagnitude,
        ]
        let times: [UInt64] = [0, 5, 1_234_567, UInt64(Int.max), UInt64.max]
        let integers: [Int] = [0, 1, -1, 42, Int.max, Int.min]
        var generator = SystemRandomNumberGenerator()
        for index in 0..<3_000 {
            let delivery = ActionDelivery(
                action: names.randomElement(using: &generator)!, target: names[index % names.count],
                control: names.randomElement(using: &generator)!, event: names.randomElement(using: &generator)!,
                timeMicroseconds: times[index % times.count],
                contact: Bool.random(using: &generator) ? integers.randomElement(using: &generator)! : nil,
                x: doubles.randomElement(using: &generator)!, y: doubles.randomElement(using: &generator)!,
                value: doubles.randomElement(using: &generator)!,
                responder: Bool.random(using: &generator) ? names.randomElement(using: &generator)! : nil,
                gesture: Bool.random(using: &generator) ? names.randomElement(using: &generator)! : nil,
                device: Bool.random(using: &generator) ? names.randomElement(using: &generator)! : nil,
                generation: integers.randomElement(using: &generator)!)
            let terminator: UInt8? = index % 2 == 0 ? UInt8(ascii: "\n") : nil
            try Self.expectReadsBack(delivery, terminator: terminator)
        }
        let huge = ActionDelivery(
            action: String(repeating: "\"", count: 1 << 16), target: "kiosk", control: "pay", event: "touchUpInside",
            timeMicroseconds: 1, generation: 1)
        try Self.expectReadsBack(huge, terminator: nil)
    }

    /// `delivery`'s message, with `terminator`: the documented fields first, every value read back as it was.
    private static func expectReadsBack(_ delivery: ActionDelivery, terminator: UInt8?) throws {
        var bytes = delivery.jsonBytes(terminator: terminator)
        if let terminator { #expect(bytes.popLast() == terminator) }
        #expect(!bytes.contains(UInt8(ascii: "\n")))
        #expect(bytes.starts(with: Array(#"{"action":"#.utf8)))
        let object = try #require(JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
        #expect(object["action"] as? String == delivery.action)
        #expect(object["target"] as? String == delivery.target)
        #expect(object["control"] as? String == delivery.control)
        #expect(object["event"] as? String == delivery.event)
        #expect((object["time_us"] as? NSNumber)?.int64Value == Int64(clamping: delivery.timeMicroseconds))
        #expect((object["contact"] as? NSNumber)?.intValue == delivery.contact)
        #expect((object["generation"] as? NSNumber)?.intValue == delivery.generation)
        #expect(object["responder"] as? String == delivery.responder)
        #expect(object["gesture"] as? String == delivery.gesture)
        #expect(object["device"] as? String == delivery.device)
        for (key, value) in [("x", delivery.x), ("y", delivery.y), ("value", delivery.value)] {
            switch value {
            case nil: #expect(object[key] == nil)
            case let number? where !number.isFinite: #expect(object[key] is NSNull)
            case let number?: #expect((object[key] as? NSNumber)?.doubleValue == number)
            }
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

    // MARK: - Delivery

    @Test func streamTargetReceivesMessagesInOrderOnePerLine() async throws {
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let peer = try Peer(path: directory.appendingPathComponent("kiosk.sock").path, type: .stream)
        let logs = LineSink.memory()
        let sender = SocketTargetSender(logger: testLogger(logs))
        try sender.start()
        defer { sender.stop(flushTimeoutMicroseconds: 0) }

        sender.configure(["kiosk": .init(path: peer.path, type: .stream)])
        // Connected at configure time, before anything is sent.
        let connection = try #require(await peer.accept())
        defer { close(connection) }
        // Fewer than the queue holds, so none is dropped however far ahead of the sender thread the loop runs.
        let deliveries = (0..<200).map { delivery($0) }
        for delivery in deliveries { sender.submit(delivery) }

        let reader = LineReader(connection)
        #expect(await reader.lines(200) == deliveries.map(\.json))
        #expect(await eventually { sender.statistics["kiosk"]?.sent == 200 })
        let statistics = try #require(sender.statistics["kiosk"])
        #expect(statistics.connected && statistics.dropped == 0 && statistics.failed == 0 && statistics.queued == 0)
        #expect(logs.captured.contains { $0.hasPrefix("info: socket target connected") && $0.contains("target=kiosk") })
    }

    // MARK: - Direct sends from the caller's thread

    /// A sender with one stream target, `kiosk`, connected to a peer, and its thread asleep with the direct path open
    /// (the thread connected at configure time; once it sleeps, it stays asleep): what the direct-send tests start
    /// from. `body` gets the sender and the peer's end of the connection.
    private func withSettledStreamTarget(
        queueCapacity: Int = 256, _ body: (SocketTargetSender, Int32) async throws -> Void
    ) async throws {
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let peer = try Peer(path: directory.appendingPathComponent("kiosk.sock").path, type: .stream)
        let sender = SocketTargetSender(logger: testLogger(LineSink.memory()), queueCapacity: queueCapacity)
        try sender.start()
        defer { sender.stop(flushTimeoutMicroseconds: 0) }

        sender.configure(["kiosk": .init(path: peer.path, type: .stream)])
        let connection = try #require(await peer.accept())
        defer { close(connection) }
        #expect(await settles(sender))
        try await body(sender, connection)
    }

    @Test func connectedIdleTargetIsWrittenByTheCallerWithoutWakingTheSenderThread() async throws {
        try await withSettledStreamTarget { sender, connection in
            let reader = LineReader(connection)
            let passes = sender.loopPasses
            for index in 0..<50 {
                sender.submit(delivery(index))
                // Sent before submit returned: the line is in the socket already.
                #expect(await reader.lines(1) == [delivery(index).json])
            }
            #expect(sender.loopPasses == passes)
            let statistics = try #require(sender.statistics["kiosk"])
            #expect(statistics.sent == 50 && statistics.dropped == 0 && statistics.queued == 0)
        }
    }

    @Test func directSendsNeverOvertakeQueuedMessages() async throws {
        let total = 6_000
        try await withSettledStreamTarget(queueCapacity: total) { sender, connection in
            // The peer does not read yet: direct sends fill the socket, then the rest queues for the sender thread.
            for index in 0..<(total / 2) { sender.submit(delivery(index)) }
            #expect((sender.statistics["kiosk"]?.queued ?? 0) > 0)
            // While the peer reads, more arrive: the direct path opens again only once the backlog is written, so
            // every line comes in submit order.
            let reader = LineReader(connection)
            var received = await reader.lines(100)
            for index in (total / 2)..<total {
                sender.submit(delivery(index))
                if index % 500 == 0 { received += await reader.lines(100) }
            }
            received += await reader.lines(total - received.count)
            #expect(received == (0..<total).map { delivery($0).json })
            let statistics = try #require(sender.statistics["kiosk"])
            #expect(statistics.sent == total && statistics.dropped == 0)
        }
    }

    @Test func partlyWrittenDirectSendIsFinishedByTheSenderThreadBeforeTheNextMessage() async throws {
        try await withSettledStreamTarget { sender, connection in
            // Larger than a Unix stream socket's buffer: the direct send writes part of it.
            let big = delivery(0, action: String(repeating: "x", count: 4 << 20))
            sender.submit(big)
            sender.submit(delivery(1))
            let reader = LineReader(connection)
            #expect(await reader.lines(2) == [big.json, delivery(1).json])
            #expect(await eventually { sender.statistics["kiosk"]?.sent == 2 })
            #expect(sender.statistics["kiosk"]?.dropped == 0)
        }
    }

    /// Deliveries handed over in batches are sent at once while the direct path is open, queued for the sender thread
    /// when it is not, and in either case in order with everything else submitted.
    @Test func batchesAreSentInOrderDirectlyOrQueued() async throws {
        let total = 6_000
        // Room for every message: a third of the submits carry two.
        try await withSettledStreamTarget(queueCapacity: 2 * total) { sender, connection in
            func batch(_ index: Int) -> [ActionDelivery] {
                index % 3 == 0
                    ? [delivery(index, action: "down"), delivery(index, action: "second")] : [delivery(index)]
            }
            let reader = LineReader(connection)
            // Sent at once: the lines are in the socket when submit returns, and the sender thread slept through it.
            let passes = sender.loopPasses
            sender.submit(batch(0))
            #expect(await reader.lines(2) == batch(0).map(\.json))
            #expect(sender.loopPasses == passes)
            // The peer does not read: direct sends fill the socket, then the rest queues for the sender thread.
            for index in 1..<(total / 2) { sender.submit(batch(index)) }
            #expect((sender.statistics["kiosk"]?.queued ?? 0) > 0)
            for index in (total / 2)..<total { sender.submit(batch(index)) }
            let wanted = (1..<total).flatMap { batch($0).map(\.json) }
            #expect(await reader.lines(wanted.count) == wanted)
            #expect(await eventually { sender.statistics["kiosk"]?.sent == wanted.count + 2 })
            #expect(sender.statistics["kiosk"]?.dropped == 0)
        }
    }

    @Test func datagramTargetReceivesOneMessagePerDatagram() async throws {
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let peer = try Peer(path: directory.appendingPathComponent("kiosk.sock").path, type: .datagram)
        let sender = SocketTargetSender(logger: testLogger(LineSink.memory()))
        try sender.start()
        defer { sender.stop(flushTimeoutMicroseconds: 0) }

        sender.configure(["kiosk": .init(path: peer.path, type: .datagram)])
        // More than the peer's receive queue holds (net.unix.max_dgram_qlen), so the sender has to wait for room
        // (EAGAIN, then POLLOUT); fewer than the sender's queue holds, so none is dropped.
        let deliveries = (0..<200).map { delivery($0) }
        for delivery in deliveries { sender.submit(delivery) }

        var received: [String] = []
        while received.count < deliveries.count, let datagram = await peer.receiveDatagram() {
            received.append(datagram)
        }
        #expect(received == deliveries.map(\.json))
        #expect(await eventually { sender.statistics["kiosk"]?.sent == 200 })
    }

    @Test func oversizedDatagramIsDroppedCountedAndLoggedOnce() async throws {
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let peer = try Peer(path: directory.appendingPathComponent("kiosk.sock").path, type: .datagram)
        let logs = LineSink.memory()
        let sender = SocketTargetSender(logger: testLogger(logs))
        try sender.start()
        defer { sender.stop(flushTimeoutMicroseconds: 0) }

        sender.configure(["kiosk": .init(path: peer.path, type: .datagram)])
        let huge = delivery(0, action: String(repeating: "a", count: 4 << 20))
        sender.submit(huge)
        sender.submit(delivery(1))
        sender.submit(huge)
        sender.submit(delivery(2))

        #expect(await peer.receiveDatagram() == delivery(1).json)
        #expect(await peer.receiveDatagram() == delivery(2).json)
        #expect(await eventually { sender.statistics["kiosk"]?.dropped == 2 })
        #expect(sender.statistics["kiosk"]?.sent == 2)
        #expect(logs.captured.filter { $0.contains("too big") }.count == 1)
    }

    // MARK: - Failures

    @Test func absentTargetIsConnectedOnceItsListenerAppears() async throws {
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("late.sock").path
        let logs = LineSink.memory()
        let sender = SocketTargetSender(
            logger: testLogger(logs), backoff: .init(initial: 5_000, maximum: 50_000))
        try sender.start()
        defer { sender.stop(flushTimeoutMicroseconds: 0) }

        sender.configure(["kiosk": .init(path: path, type: .stream)])
        let early = (0..<3).map { delivery($0) }
        for delivery in early { sender.submit(delivery) }
        // Queued messages keep the sender retrying, with backoff.
        #expect(await eventually { (sender.statistics["kiosk"]?.failed ?? 0) >= 3 })
        #expect(sender.statistics["kiosk"]?.connected == false)
        #expect(sender.statistics["kiosk"]?.queued == 3)

        let peer = try Peer(path: path, type: .stream)
        let late = (3..<6).map { delivery($0) }
        for delivery in late { sender.submit(delivery) }
        let connection = try #require(await peer.accept())
        defer { close(connection) }
        // Nothing was lost while the target was away: the queue had room.
        #expect(await LineReader(connection).lines(6) == (early + late).map(\.json))
        #expect(await eventually { sender.statistics["kiosk"]?.sent == 6 })
        #expect(sender.statistics["kiosk"]?.dropped == 0)

        let warnings = logs.captured.filter { $0.hasPrefix("warning:") }
        #expect(warnings.first?.contains("socket target connect failed: No such file or directory") == true)
        #expect(warnings.first?.contains("errno=\(ENOENT)") == true)
        #expect(
            logs.captured.contains {
                $0.hasPrefix("info: socket target connected") && $0.contains("failures=") && $0.contains("dropped=0")
            })
    }

    @Test func peerClosingMidStreamIsReconnectedAndLaterMessagesArrive() async throws {
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let peer = try Peer(path: directory.appendingPathComponent("kiosk.sock").path, type: .stream)
        let logs = LineSink.memory()
        let sender = SocketTargetSender(logger: testLogger(logs))
        try sender.start()
        defer { sender.stop(flushTimeoutMicroseconds: 0) }

        sender.configure(["kiosk": .init(path: peer.path, type: .stream)])
        let first = try #require(await peer.accept())
        for index in 0..<5 { sender.submit(delivery(index)) }
        #expect(await LineReader(first).lines(5) == (0..<5).map { delivery($0).json })
        close(first)

        // The sender notices the close while idle and connects again by itself.
        let second = try #require(await peer.accept())
        defer { close(second) }
        for index in 5..<10 { sender.submit(delivery(index)) }
        #expect(await LineReader(second).lines(5) == (5..<10).map { delivery($0).json })
        #expect((sender.statistics["kiosk"]?.failed ?? 0) >= 1)
        #expect(await eventually { sender.statistics["kiosk"]?.sent == 10 })
        #expect(logs.captured.contains { $0.contains("socket target closed the connection") })
    }

    @Test func datagramPeerThatRestartsIsReconnected() async throws {
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("audit.sock").path
        var peer: Peer? = try Peer(path: path, type: .datagram)
        let sender = SocketTargetSender(logger: testLogger(LineSink.memory()))
        try sender.start()
        defer { sender.stop(flushTimeoutMicroseconds: 0) }

        sender.configure(["audit": .init(path: path, type: .datagram)])
        sender.submit(delivery(0, target: "audit"))
        #expect(await peer?.receiveDatagram() == delivery(0, target: "audit").json)

        // The receiver goes away and a new one binds the same path: the old connection is refused, the message
        // waits (nothing of it went out) and goes to the new receiver.
        peer = nil
        let restarted = try Peer(path: path, type: .datagram)
        sender.submit(delivery(1, target: "audit"))
        #expect(await restarted.receiveDatagram() == delivery(1, target: "audit").json)
        #expect((sender.statistics["audit"]?.failed ?? 0) >= 1)
        #expect(sender.statistics["audit"]?.dropped == 0)
    }

    @Test func fullBacklogIsRetriedUntilThereIsRoom() async throws {
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        // A backlog of 0 holds one connection that is not yet accepted; the test's own client takes it.
        let peer = try Peer(path: directory.appendingPathComponent("busy.sock").path, type: .stream, backlog: 0)
        let squatter = try connectClient(to: peer.path)
        defer { close(squatter) }
        let logs = LineSink.memory()
        let sender = SocketTargetSender(
            logger: testLogger(logs), backoff: .init(initial: 5_000, maximum: 50_000))
        try sender.start()
        defer { sender.stop(flushTimeoutMicroseconds: 0) }

        sender.configure(["kiosk": .init(path: peer.path, type: .stream)])
        sender.submit(delivery(0))
        #expect(await eventually { (sender.statistics["kiosk"]?.failed ?? 0) >= 2 })
        #expect(logs.captured.contains { $0.contains("connect failed: Resource temporarily unavailable") })

        let first = try #require(await peer.accept())
        close(first)
        let connection = try #require(await peer.accept())
        defer { close(connection) }
        #expect(await LineReader(connection).lines(1) == [delivery(0).json])
    }

    @Test func sendingToAClosedPeerReturnsEPIPEInsteadOfRaisingSIGPIPE() throws {
        // Run on the test's own thread, where SIGPIPE is not blocked (the sender thread blocks every signal, which
        // would hide a missing MSG_NOSIGNAL). swift-testing leaves SIGPIPE at its default action, so without
        // MSG_NOSIGNAL the whole test process would die here.
        var pair: [Int32] = [-1, -1]
        try #require(
            socketpair(AF_UNIX, Int32(bitPattern: SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0, &pair) == 0)
        // The peer stops reading before its descriptor is closed: a child another test forks at this moment holds a
        // copy of the descriptor until it execs, which would keep the peer open, but not able to read.
        try #require(shutdown(pair[1], Int32(SHUT_RD)) == 0)
        close(pair[1])
        defer { close(pair[0]) }
        #expect(UnixSocket.send(pair[0], Array("{}\n".utf8), from: 0) == .failed(EPIPE))
    }

    @Test func peerThatNeverReadsFillsOnlyTheBoundedQueue() async throws {
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let peer = try Peer(path: directory.appendingPathComponent("kiosk.sock").path, type: .stream)
        let logs = LineSink.memory()
        let capacity = 256
        let sender = SocketTargetSender(logger: testLogger(logs), queueCapacity: capacity)
        try sender.start()

        sender.configure(["kiosk": .init(path: peer.path, type: .stream)])
        let connection = try #require(await peer.accept())
        defer { close(connection) }
        let total = 100_000
        for index in 0..<total {
            sender.submit(delivery(index))
            if index % 1000 == 0 { #expect((sender.statistics["kiosk"]?.queued ?? 0) <= capacity) }
        }
        #expect(await eventually { (sender.statistics["kiosk"]?.dropped ?? 0) > 0 })
        let running = try #require(sender.statistics["kiosk"])
        #expect(running.queued <= capacity)
        #expect(running.connected)
        // Waiting for the peer to read (POLLOUT) costs nothing: once it has written what fits, the thread sleeps.
        #expect(await settles(sender))

        sender.stop(flushTimeoutMicroseconds: 0)
        // Every delivery is accounted for: written to the socket, or dropped and counted.
        let stopped = try #require(sender.statistics["kiosk"])
        #expect(stopped.sent + stopped.dropped == total)
        #expect(stopped.queued == 0)
        #expect(stopped.sent > 0 && stopped.sent < total)
        #expect(logs.captured.contains { $0.contains("queue is full") })
    }

    @Test func failureLogIsRateLimitedWithASuppressedCount() async throws {
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let logs = LineSink.memory()
        // Every reading of this clock is a second later, and retries are due at once: a few hundred failures span
        // many 30-second rate-limit windows without the test waiting for them.
        let time = Atomic<UInt64>(0)
        let sender = SocketTargetSender(
            logger: testLogger(logs), clock: { time.add(1_000_000, ordering: .relaxed).newValue },
            backoff: .init(initial: 1, maximum: 1))
        try sender.start()

        sender.configure(["kiosk": .init(path: directory.appendingPathComponent("missing.sock").path, type: .stream)])
        var secret = delivery(0)
        secret.x = 1234.5
        secret.y = 678.25
        sender.submit(secret)
        #expect(await eventually { (sender.statistics["kiosk"]?.failed ?? 0) >= 300 })
        sender.stop(flushTimeoutMicroseconds: 0)

        let failed = try #require(sender.statistics["kiosk"]).failed
        let warnings = logs.captured.filter { $0.hasPrefix("warning: socket target connect failed") }
        #expect(!warnings.isEmpty)
        #expect(warnings.count * 3 <= failed)
        #expect(warnings.contains { $0.contains("suppressed=") })
        // Coordinates never reach the log above debug.
        #expect(!logs.captured.contains { $0.contains("1234.5") || $0.contains("678.25") })
    }

    @Test func idleSenderDoesNotWake() async throws {
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let stream = try Peer(path: directory.appendingPathComponent("stream.sock").path, type: .stream)
        let datagram = try Peer(path: directory.appendingPathComponent("datagram.sock").path, type: .datagram)
        let sender = SocketTargetSender(logger: testLogger(LineSink.memory()))
        try sender.start()
        defer { sender.stop(flushTimeoutMicroseconds: 0) }

        sender.configure([
            "stream": .init(path: stream.path, type: .stream),
            "datagram": .init(path: datagram.path, type: .datagram),
            "absent": .init(path: directory.appendingPathComponent("absent.sock").path, type: .stream),
        ])
        let connection = try #require(await stream.accept())
        defer { close(connection) }
        sender.submit(delivery(0, target: "stream"))
        sender.submit(delivery(1, target: "datagram"))
        #expect(await LineReader(connection).lines(1) == [delivery(0, target: "stream").json])
        #expect(await datagram.receiveDatagram() == delivery(1, target: "datagram").json)
        #expect(
            await eventually {
                sender.statistics["datagram"]?.sent == 1 && sender.statistics["stream"]?.sent == 1
                    && sender.statistics["absent"]?.failed == 1
            })

        // Connected targets with nothing to send, and an absent one with nothing queued (one eager attempt, then
        // it waits for a message): the thread sleeps in poll without a timeout.
        let passes = sender.loopPasses
        try await Task.sleep(for: .milliseconds(300))
        #expect(sender.loopPasses - passes <= 1)
        #expect(sender.statistics["absent"]?.failed == 1)
    }

    // MARK: - Configuration and stop

    @Test func reconfigureKeepsUnchangedTargetsAndClosesRemovedOnes() async throws {
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let kept = try Peer(path: directory.appendingPathComponent("kept.sock").path, type: .stream)
        let removed = try Peer(path: directory.appendingPathComponent("removed.sock").path, type: .stream)
        let moved = try Peer(path: directory.appendingPathComponent("moved.sock").path, type: .stream)
        let movedAgain = try Peer(path: directory.appendingPathComponent("moved-again.sock").path, type: .stream)
        let absentPath = directory.appendingPathComponent("absent.sock").path
        let sender = SocketTargetSender(logger: testLogger(LineSink.memory()))
        try sender.start()
        defer { sender.stop(flushTimeoutMicroseconds: 0) }

        sender.configure([
            "kept": .init(path: kept.path, type: .stream),
            "removed": .init(path: removed.path, type: .stream),
            "moved": .init(path: moved.path, type: .stream),
            "absent": .init(path: absentPath, type: .stream),
        ])
        let keptConnection = try #require(await kept.accept())
        defer { close(keptConnection) }
        let removedConnection = try #require(await removed.accept())
        defer { close(removedConnection) }
        let movedConnection = try #require(await moved.accept())
        defer { close(movedConnection) }
        for index in 0..<3 { sender.submit(delivery(index, target: "absent")) }
        #expect(await eventually { sender.statistics["absent"]?.queued == 3 })

        sender.configure([
            "kept": .init(path: kept.path, type: .stream),
            "moved": .init(path: movedAgain.path, type: .stream),
        ])
        #expect(await LineReader(removedConnection).waitForEnd())
        // A changed target is a new one: the old connection closes, the new path gets the messages.
        #expect(await LineReader(movedConnection).waitForEnd())
        let movedAgainConnection = try #require(await movedAgain.accept())
        defer { close(movedAgainConnection) }
        sender.submit(delivery(9, target: "moved"))
        #expect(await LineReader(movedAgainConnection).lines(1) == [delivery(9, target: "moved").json])
        #expect(sender.statistics["absent"]?.dropped == 3)
        #expect(await eventually { sender.statistics["removed"]?.connected == false })

        // The kept target still uses its first connection: the message arrives there, and no second one was made.
        sender.submit(delivery(7, target: "kept"))
        #expect(await LineReader(keptConnection).lines(1) == [delivery(7, target: "kept").json])
        #expect(!kept.hasPendingConnection)
        #expect(sender.statistics["kept"]?.connected == true)

        sender.submit(delivery(8, target: "removed"))
        #expect(sender.unknownTargetDeliveries == 1)
    }

    @Test func reloadsThatRenameTargetsKeepOnlyTheLastRemovedTargetsCounters() throws {
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let sender = SocketTargetSender(logger: testLogger(LineSink.memory()))
        try sender.start()
        defer { sender.stop(flushTimeoutMicroseconds: 0) }
        // Nobody listens: every target just waits to connect. A new name on every reload, as a generated file might.
        let path = directory.appendingPathComponent("absent.sock").path
        let kept = SocketTargetSender.removedTargetsKept
        for index in 0..<(kept + 40) {
            sender.configure([
                "audit": .init(path: path, type: .datagram), "t\(index)": .init(path: path, type: .stream),
            ])
        }
        let statistics = sender.statistics
        // The current targets and the `kept` most recently removed ones; the oldest removed are gone.
        #expect(statistics.count == 2 + kept)
        #expect(statistics["audit"] != nil)
        #expect(statistics["t\(kept + 39)"] != nil)
        #expect(statistics["t\(39)"] != nil)
        #expect(statistics["t\(38)"] == nil)
        #expect(statistics["t0"] == nil)
    }

    @Test func socketTargetsOfTheExampleConfiguration() throws {
        let configuration = try ConfigurationLoader.load(path: TestSupport.kioskConfig).get()
        #expect(
            configuration.socketTargets == [
                "kiosk": .init(path: "/run/kiosk/touch.sock", type: .stream),
                "audit": .init(path: "/run/kiosk/audit.sock", type: .datagram),
            ])
    }

    @Test func stopFlushesWhatItCanAndIsIdempotent() async throws {
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let peer = try Peer(path: directory.appendingPathComponent("kiosk.sock").path, type: .stream)
        let sender = SocketTargetSender(logger: testLogger(LineSink.memory()))
        try sender.start()

        sender.configure(["kiosk": .init(path: peer.path, type: .stream)])
        let connection = try #require(await peer.accept())
        defer { close(connection) }
        let deliveries = (0..<100).map { delivery($0) }
        for delivery in deliveries { sender.submit(delivery) }
        sender.stop(flushTimeoutMicroseconds: 10_000_000)

        let stopped = try #require(sender.statistics["kiosk"])
        #expect(stopped.sent == 100 && stopped.dropped == 0 && !stopped.connected)
        let reader = LineReader(connection)
        #expect(await reader.lines(100) == deliveries.map(\.json))
        #expect(await reader.waitForEnd())

        sender.stop(flushTimeoutMicroseconds: 10_000_000)
        sender.submit(delivery(100))
        sender.configure(["other": .init(path: peer.path, type: .stream)])
        #expect(sender.statistics["kiosk"]?.sent == 100)
        #expect(sender.statistics["kiosk"]?.dropped == 1)
        #expect(sender.statistics["other"] == nil)
    }
}

// MARK: - Helpers

private func testLogger(_ sink: LineSink) -> Logger {
    Logger(label: "touchd.test") { _ in JournalLogHandler(logLevel: .debug, style: .terminal, sink: sink) }
}

private func delivery(_ index: Int, target: String = "kiosk", action: String? = nil) -> ActionDelivery {
    ActionDelivery(
        action: action ?? "action-\(index)", target: target, control: "pay", event: "touchUpInside",
        timeMicroseconds: UInt64(index), contact: 0, generation: 1)
}

/// Whether the sender thread goes quiet: within 10 seconds, 50 ms pass without it going round its loop. A thread
/// that spins never does; a loaded machine can only make a busy thread look quiet, never a quiet one look busy.
private func settles(_ sender: SocketTargetSender) async -> Bool {
    var passes = sender.loopPasses
    return await eventually {
        let before = passes
        usleep(50_000)
        passes = sender.loopPasses
        return passes == before
    }
}

/// A Unix socket the tests listen or receive on, standing in for the kiosk application.
private final class Peer {
    let path: String
    let socket: Int32

    init(path: String, type: Configuration.SocketTarget.SocketType, backlog: Int32 = 16) throws {
        self.path = path
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        try #require(bytes.count < MemoryLayout.size(ofValue: address.sun_path), "socket path too long: \(path)")
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let kind = type == .stream ? SOCK_STREAM : SOCK_DGRAM
        socket = Glibc.socket(
            AF_UNIX, Int32(bitPattern: kind.rawValue | SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0)
        try #require(socket >= 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(socket, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        try #require(bound == 0, "bind: \(String(cString: strerror(errno)))")
        if type == .stream { try #require(listen(socket, backlog) == 0) }
    }

    /// Ends the socket as the peer process's exit would. `close` alone is not enough in a test process: a child that
    /// another test is spawning at that moment holds a copy of every descriptor until it execs, which keeps the socket
    /// alive a little longer, and a datagram sent meanwhile is accepted and lost with it (seen as a flaky
    /// `datagramPeerThatRestartsIsReconnected`). `shutdown` ends the socket itself, whoever else holds it.
    deinit {
        shutdown(socket, Int32(SHUT_RDWR))
        close(socket)
        unlink(path)
    }

    /// The next connection the sender makes, or nil after 10 seconds.
    func accept() async -> Int32? {
        var connection: Int32 = -1
        _ = await eventually {
            connection = Glibc.accept(socket, nil, nil)
            return connection >= 0
        }
        return connection >= 0 ? connection : nil
    }

    /// Whether a connection waits to be accepted.
    var hasPendingConnection: Bool {
        var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        return poll(&descriptor, 1, 0) == 1
    }

    /// The next datagram, or nil after 10 seconds.
    func receiveDatagram() async -> String? {
        var buffer = [UInt8](repeating: 0, count: 65536)
        var received = -1
        _ = await eventually {
            received = recv(socket, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            return received >= 0
        }
        return received >= 0 ? String(decoding: buffer[..<received], as: UTF8.self) : nil
    }
}

/// A blocking stream connection to `path`, made by the test itself.
private func connectClient(to path: String) throws -> Int32 {
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
    let client = socket(AF_UNIX, Int32(bitPattern: SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
    try #require(client >= 0)
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(client, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
        }
    }
    try #require(connected == 0, "connect: \(String(cString: strerror(errno)))")
    return client
}

/// Reads newline-terminated messages from an accepted connection.
private final class LineReader {
    let socket: Int32
    private var pending: [UInt8] = []
    private var ended = false

    init(_ socket: Int32) {
        self.socket = socket
    }

    /// The next `count` lines, without their newlines; fewer if the connection ends or 60 seconds pass (a bound for a
    /// hang only: thousands of lines took more than 10 s in a CI whose release build shared the cores).
    func lines(_ count: Int) async -> [String] {
        var lines: [String] = []
        _ = await eventually(within: 60) {
            readAvailable()
            // The consumed lines leave `pending` in one removal, not one each (each moved the rest of the buffer).
            var start = pending.startIndex
            while lines.count < count, let end = pending[start...].firstIndex(of: UInt8(ascii: "\n")) {
                lines.append(String(decoding: pending[start..<end], as: UTF8.self))
                start = end + 1
            }
            pending.removeSubrange(..<start)
            return lines.count == count || ended
        }
        return lines
    }

    /// Whether the sender closed the connection (within 10 seconds), reading and discarding what came before.
    func waitForEnd() async -> Bool {
        await eventually {
            readAvailable()
            return ended
        }
    }

    private func readAvailable() {
        var buffer = [UInt8](repeating: 0, count: 65536)
        while !ended {
            let received = recv(socket, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            if received > 0 {
                pending += buffer[..<received]
            } else if received == 0 {
                ended = true
            } else {
                return
            }
        }
    }
}
