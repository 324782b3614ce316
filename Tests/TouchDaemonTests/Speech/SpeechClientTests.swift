import Foundation
import Glibc
import Logging
import Synchronization
import TestKit
import Testing

@testable import TouchDaemon

/// The SSIP client against a fake speech-dispatcher (Support/FakeSSIPServer.swift) on a real Unix socket. Waits poll
/// for a condition with a generous deadline and only bound failures; the timing checks compare the times the fake
/// server recorded with the times the client reported, on the same monotonic clock.
@Suite(.serialized)
struct SpeechClientTests {
    // MARK: - Handshake and speaking

    @Test func handshakeNamesTheClientTurnsNotificationsOnAndReportsAvailability() async throws {
        let fixture = try Fixture()
        defer { fixture.tearDown() }
        let client = try fixture.client()
        defer { client.stop(withinMicroseconds: 0) }

        #expect(await eventually { client.availability == .available })
        #expect(fixture.server.texts == ["SET SELF CLIENT_NAME user:touchd:explore", "SET SELF NOTIFICATION all on"])
        #expect(await eventually { fixture.reports.availabilities == [.available] })
        #expect(client.statistics.connections == 1)
        #expect(fixture.logs.captured.contains { $0.hasPrefix("info: speech server connected") })
    }

    @Test func speakSendsPriorityThenSpeakThenDotEscapedTextThenTheDotLine() async throws {
        let fixture = try Fixture()
        defer { fixture.tearDown() }
        let client = try await fixture.connectedClient()
        defer { client.stop(withinMicroseconds: 0) }

        let requested = monotonicMicroseconds()
        client.submit(.speak(Utterance(text: "Pay\n.50 now\r\n..x\rend.", priority: .text, language: nil)))
        #expect(await eventually { client.statistics.spoken == 1 })
        #expect(
            fixture.server.texts.dropFirst(2) == [
                "SET SELF PRIORITY text", "SPEAK", "Pay", "..50 now", "...x", "end.", ".",
            ])
        #expect(await eventually { fixture.reports.queuedIDs == [1] })
        // The request, the SPEAK line leaving touchd and its arrival at the server, in that order on one clock.
        let speakLine = try #require(fixture.server.lines.first { $0.text == "SPEAK" })
        let sent = try #require(fixture.reports.speakTimes.first)
        #expect(requested <= sent && sent <= speakLine.time)
    }

    @Test func controlCharactersBecomeSpacesAndLongTextIsCutAtACharacterBoundary() {
        let (bytes, cut) = SSIP.speakData("a\u{0}b\u{7}c\td\u{7f}")
        #expect(!cut)
        #expect(bytes == Array("a b c\td \r\n.\r\n".utf8))
        let (empty, _) = SSIP.speakData("")
        #expect(empty == Array("\r\n.\r\n".utf8))
        // "é" is two bytes: a limit between them cuts before it.
        let (long, truncated) = SSIP.speakData("abé", limit: 3)
        #expect(truncated)
        #expect(long == Array("ab\r\n.\r\n".utf8))
    }

    @Test func priorityIsSetOnlyWhenItChanges() async throws {
        let fixture = try Fixture()
        defer { fixture.tearDown() }
        let client = try await fixture.connectedClient()
        defer { client.stop(withinMicroseconds: 0) }

        for (text, priority) in [
            ("Speech mode", Utterance.Priority.important), ("Pay", .text), ("Back", .text), ("Hint", .message),
        ] {
            let spoken = client.statistics.spoken
            client.submit(.speak(Utterance(text: text, priority: priority, language: nil)))
            #expect(await eventually { client.statistics.spoken == spoken + 1 })
        }
        #expect(
            fixture.server.texts.filter { $0.hasPrefix("SET SELF PRIORITY") } == [
                "SET SELF PRIORITY important", "SET SELF PRIORITY text", "SET SELF PRIORITY message",
            ])
        #expect(fixture.server.texts.filter { $0 == "SPEAK" }.count == 4)
    }

    @Test func languageIsSetWhenItChangesAndNeverWhenItIsNotATag() async throws {
        let fixture = try Fixture()
        defer { fixture.tearDown() }
        let client = try await fixture.connectedClient()
        defer { client.stop(withinMicroseconds: 0) }

        for language in ["de", "de", "fr-CA", nil, "en\r\nQUIT", "fr-CA"] {
            let spoken = client.statistics.spoken
            client.submit(.speak(Utterance(text: "x", priority: .message, language: language)))
            #expect(await eventually { client.statistics.spoken == spoken + 1 })
        }
        #expect(
            fixture.server.texts.filter { $0.hasPrefix("SET SELF LANGUAGE") } == [
                "SET SELF LANGUAGE de", "SET SELF LANGUAGE fr-CA",
            ])
        #expect(!fixture.server.texts.contains("QUIT"))
        #expect(fixture.logs.captured.contains { $0.contains("language is not a language tag") })
    }

    @Test func aRefusedLanguageIsSentAgainForTheNextUtterance() async throws {
        let fixture = try Fixture()
        defer { fixture.tearDown() }
        let client = try await fixture.connectedClient()
        defer { client.stop(withinMicroseconds: 0) }

        fixture.server.override("SET SELF LANGUAGE", with: Array("302 ERR COULDNT SET LANGUAGE\r\n".utf8))
        for _ in 0..<2 {
            let spoken = client.statistics.spoken
            client.submit(.speak(Utterance(text: "x", priority: .text, language: "de")))
            #expect(await eventually { client.statistics.spoken == spoken + 1 })
        }
        #expect(fixture.server.texts.filter { $0 == "SET SELF LANGUAGE de" }.count == 2)
        #expect(client.statistics.refused == 1)
        #expect(
            fixture.logs.captured.contains {
                $0.contains("speech server refused SET SELF LANGUAGE: 302 ERR COULDNT SET LANGUAGE")
            })
    }

    @Test func cancelPauseAndResumeAreSentForSelf() async throws {
        let fixture = try Fixture()
        defer { fixture.tearDown() }
        let client = try await fixture.connectedClient()
        defer { client.stop(withinMicroseconds: 0) }

        for command in [SpeechCommand.pause, .resume, .cancel] {
            let count = fixture.server.lines.count
            client.submit(command)
            #expect(await eventually { fixture.server.lines.count == count + 1 })
        }
        #expect(fixture.server.texts.dropFirst(2) == ["PAUSE self", "RESUME self", "CANCEL self"])
        #expect(await eventually { client.statistics.canceled == 1 })
        #expect(await eventually { fixture.reports.cancelTimes.count == 1 })
    }

    @Test func aCancelAndTheNextSpeakLeaveTogetherWithoutWaitingForTheCancelsReply() async throws {
        let fixture = try Fixture()
        defer { fixture.tearDown() }
        let client = try await fixture.connectedClient()
        defer { client.stop(withinMicroseconds: 0) }

        // A server slow to answer CANCEL: the SPEAK behind it goes out anyway, and its text only after its 230.
        fixture.server.holdReplies(from: "CANCEL")
        client.submit(.cancel)
        client.submit(.speak(Utterance(text: "Pay", priority: .text, language: nil)))
        #expect(await eventually { fixture.server.texts.last == "SPEAK" })
        #expect(fixture.server.texts.dropFirst(2) == ["CANCEL self", "SET SELF PRIORITY text", "SPEAK"])
        // Nothing follows an unanswered SPEAK: the server would read it as text.
        client.submit(.pause)
        try await Task.sleep(for: .milliseconds(100))
        #expect(fixture.server.texts.last == "SPEAK")
        #expect(client.statistics.spoken == 0)

        fixture.server.releaseReplies()
        #expect(await eventually { client.statistics.spoken == 1 })
        #expect(await eventually { fixture.server.texts.last == "PAUSE self" })
        #expect(fixture.server.texts.dropFirst(5) == ["Pay", ".", "PAUSE self"])
        #expect(client.statistics.refused == 0)
        #expect(client.availability == .available)
    }

    @Test func aRefusedSpeakSendsNoTextAndTheConnectionGoesOn() async throws {
        let fixture = try Fixture()
        defer { fixture.tearDown() }
        let client = try await fixture.connectedClient()
        defer { client.stop(withinMicroseconds: 0) }

        fixture.server.override("SPEAK", with: Array("321 ERR NO OUTPUT MODULE LOADED\r\n".utf8))
        client.submit(.speak(Utterance(text: "lost", priority: .text, language: nil)))
        #expect(await eventually { client.statistics.refused == 1 })
        client.submit(.speak(Utterance(text: "heard", priority: .text, language: nil)))
        #expect(await eventually { client.statistics.spoken == 1 })
        #expect(!fixture.server.texts.contains("lost"))
        #expect(fixture.server.texts.contains("heard"))
        #expect(client.availability == .available)
        #expect(fixture.server.acceptedConnections == 1)
    }

    // MARK: - The queue

    @Test func aNewerTextUtteranceReplacesQueuedOnesAndACancelDropsQueuedSpeech() {
        var state = SpeechCore.State(capacity: 8)
        state.availability = .available
        func speak(_ text: String, _ priority: Utterance.Priority) -> SpeechCommand {
            .speak(Utterance(text: text, priority: priority, language: nil))
        }
        let wakes = [
            state.accept(speak("Intro", .important)), state.accept(speak("Pay", .text)),
            state.accept(speak("Back", .text)), state.accept(speak("Hint", .message)),
            state.accept(speak("Help", .text)),
        ]
        // Only the first, which found the queue empty, wakes the thread.
        #expect(wakes == [true, false, false, false, false])
        #expect(state.queue == [speak("Intro", .important), speak("Hint", .message), speak("Help", .text)])
        #expect(state.statistics.dropped == 2)

        _ = state.accept(.pause)
        _ = state.accept(.cancel)
        _ = state.accept(.cancel)
        #expect(state.queue == [.pause, .cancel])
        #expect(state.statistics.dropped == 5)
    }

    @Test func aFullQueueDropsItsOldestAndAnUnavailableServerTakesNothing() {
        var state = SpeechCore.State(capacity: 3)
        let woke = state.accept(.cancel)
        #expect(!woke)
        #expect(state.statistics.unavailable == 1)
        #expect(state.queue.isEmpty)

        state.availability = .available
        for index in 0..<5 {
            _ = state.accept(.speak(Utterance(text: "\(index)", priority: .message, language: nil)))
        }
        #expect(state.queue.map { if case .speak(let u) = $0 { u.text } else { "" } } == ["2", "3", "4"])
        #expect(state.statistics.dropped == 2)
    }

    // MARK: - Events

    @Test func eventsAreParsedAndReported() async throws {
        let fixture = try Fixture()
        defer { fixture.tearDown() }
        let client = try await fixture.connectedClient()
        defer { client.stop(withinMicroseconds: 0) }

        fixture.server.send(Array("701-1\r\n701-7\r\n701 BEGIN\r\n702-1\r\n702-7\r\n702 END\r\n".utf8))
        fixture.server.send(Array("703-2\r\n703-7\r\n703 CANCELED\r\n700-3\r\n700-7\r\n700-here\r\n700 END\r\n".utf8))
        #expect(await eventually { fixture.reports.events.count == 4 })
        #expect(fixture.reports.events.map(\.kind) == [.begin, .end, .canceled, .indexMark])
        #expect(fixture.reports.events.map(\.messageID) == [1, 1, 2, 3])
        #expect(fixture.reports.events.last?.mark == "here")
        #expect(client.statistics.events == 4)
        #expect(client.availability == .available)
    }

    @Test func theEndOfAMarkedUtteranceIsReportedWithItsMarkAndNoOtherEnd() async throws {
        let fixture = try Fixture()
        defer { fixture.tearDown() }
        let client = try await fixture.connectedClient()
        defer { client.stop(withinMicroseconds: 0) }

        // Message 1 carries no mark, 2 carries 41, 3 carries 42 (priority message: a queued text would be replaced).
        client.submit(.speak(Utterance(text: "Plain", priority: .message, language: nil)))
        client.submit(.speak(Utterance(text: "OK, button", priority: .message, language: nil, endMark: 41)))
        #expect(await eventually { fixture.reports.queuedIDs == [1, 2] })
        client.submit(.speak(Utterance(text: "Help, button", priority: .message, language: nil, endMark: 42)))
        #expect(await eventually { fixture.reports.queuedIDs == [1, 2, 3] })
        // 1 ends (no mark), 2 is canceled (its mark is forgotten, no end), 3 ends: only 42 is reported.
        fixture.server.send(Array("702-1\r\n702-7\r\n702 END\r\n703-2\r\n703-7\r\n703 CANCELED\r\n".utf8))
        fixture.server.send(Array("702-2\r\n702-7\r\n702 END\r\n".utf8))
        let before = monotonicMicroseconds()
        fixture.server.send(Array("702-3\r\n702-7\r\n702 END\r\n".utf8))
        #expect(await eventually { fixture.reports.events.count == 4 })
        let ends = fixture.reports.ends
        #expect(ends.map(\.mark) == [42])
        #expect(ends.allSatisfy { $0.at >= before && $0.at <= monotonicMicroseconds() })
    }

    // MARK: - A server that goes away or misbehaves

    @Test func aServerThatGoesAwayIsReportedAndReconnectedWhenItComesBack() async throws {
        let fixture = try Fixture()
        defer { fixture.tearDown() }
        let client = try await fixture.connectedClient()
        defer { client.stop(withinMicroseconds: 0) }

        fixture.server.stop()
        #expect(await eventually { !client.availability.isAvailable })
        #expect(await eventually { fixture.reports.availabilities.count == 2 })
        guard case .unavailable(let reason) = fixture.reports.availabilities.last else {
            Issue.record("no unavailability reported")
            return
        }
        #expect(reason == "the server closed the connection")
        // Speech submitted meanwhile is dropped, not kept for later.
        client.submit(.speak(Utterance(text: "stale", priority: .text, language: nil)))
        #expect(client.statistics.unavailable == 1)
        // Retries fail while it is away (each logged attempt says when the next one is).
        #expect(
            await eventually {
                fixture.logs.captured.contains {
                    $0.contains("speech server unavailable: connect failed: ") && $0.contains("retry_ms=")
                }
            })

        let again = try FakeSSIPServer(path: fixture.path)
        defer { again.stop() }
        #expect(await eventually { client.availability == .available })
        #expect(again.texts == ["SET SELF CLIENT_NAME user:touchd:explore", "SET SELF NOTIFICATION all on"])
        // The report follows the state it reports (both on the client's thread).
        #expect(await eventually { fixture.reports.availabilities.last == .available })
        #expect(client.statistics.connections == 2)
        #expect(client.statistics.losses == 1)
        // Priority and language are set again on the new connection.
        client.submit(.speak(Utterance(text: "back", priority: .text, language: "de")))
        #expect(await eventually { client.statistics.spoken == 1 })
        #expect(again.texts.contains("SET SELF PRIORITY text"))
        #expect(again.texts.contains("SET SELF LANGUAGE de"))
        #expect(!again.texts.contains("stale"))
    }

    @Test func anAbsentServerIsRetriedWithABoundedBackoffAndNoSpin() async throws {
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let logs = LineSink.memory()
        var options = SpeechClient.Options()
        options.backoff = .init(initial: 20_000, maximum: 80_000)
        let client = SpeechClient(
            socketPath: directory.appendingPathComponent("absent.sock").path, logger: testLogger(logs),
            options: options)
        try client.start()
        defer { client.stop(withinMicroseconds: 0) }

        usleep(600_000)
        // 20 + 40 + 80 + 80 ... ms: about 9 attempts in 600 ms, each one pass, plus wake-ups; never thousands.
        let passes = client.loopPasses
        #expect(passes >= 4 && passes < 40, "\(passes) passes")
        #expect(client.availability == .unavailable(reason: "connect failed: No such file or directory"))
        let warnings = logs.captured.filter { $0.contains("speech server unavailable") }
        #expect(warnings.first?.contains("errno=\(ENOENT)") == true)
        #expect(warnings.first?.contains("retry_ms=20") == true)
        // The log's rate limit holds the retries back: 5 lines per 30 s.
        #expect(warnings.count <= 5)
    }

    @Test func aServerThatNeverAnswersIsGivenUpAfterTheReplyTimeout() async throws {
        let fixture = try Fixture()
        defer { fixture.tearDown() }
        fixture.server.set(.silent)
        let client = try fixture.client(replyTimeout: 150_000)
        defer { client.stop(withinMicroseconds: 0) }

        #expect(await eventually { fixture.server.acceptedConnections >= 2 })
        #expect(client.availability.isAvailable == false)
        #expect(
            fixture.logs.captured.contains {
                $0.contains("speech server unavailable: no answer to SET SELF CLIENT_NAME within 150 ms")
            })
        // One command at a time: the silent server never saw the second handshake line.
        #expect(!fixture.server.texts.contains("SET SELF NOTIFICATION all on"))
        #expect(fixture.reports.availabilities.isEmpty)

        fixture.server.set(.normal)
        #expect(await eventually { client.availability == .available })
    }

    @Test(arguments: [
        ("hello there\r\n", "the server sent a line that is not SSIP: \"hello there\""),
        (String(repeating: "2", count: 5000), "the server sent a line longer than 4096 bytes"),
        ("230-a\r\n231 b\r\n", "the server sent a reply whose code changed from 230 to 231"),
        ("999 WHAT\r\n", "the server sent a code SSIP does not have: 999 WHAT"),
        (String(repeating: "230-x\r\n", count: 100), "the server sent a reply of more than 64 lines"),
    ])
    func garbageLosesTheConnectionWithAPreciseLineAndTheClientComesBack(reply: String, logged: String) async throws {
        let fixture = try Fixture()
        defer { fixture.tearDown() }
        let client = try await fixture.connectedClient()
        defer { client.stop(withinMicroseconds: 0) }

        fixture.server.override("SPEAK", with: Array(reply.utf8))
        client.submit(.speak(Utterance(text: "x", priority: .text, language: nil)))
        #expect(await eventually { fixture.logs.captured.contains { $0.contains(logged) } })
        #expect(await eventually { fixture.server.acceptedConnections == 2 && client.availability == .available })
        #expect(client.statistics.losses == 1)
        #expect(await eventually { fixture.reports.availabilities.count == 3 })
    }

    @Test func aServerThatHangsUpAtOnceIsRetriedOnTheBackoffNotInASpin() async throws {
        let fixture = try Fixture()
        defer { fixture.tearDown() }
        fixture.server.set(.hangUp)
        let client = try fixture.client()
        defer { client.stop(withinMicroseconds: 0) }

        usleep(500_000)
        let accepted = fixture.server.acceptedConnections
        // 20 ms doubling to 80 ms: at most about 9 attempts in 500 ms.
        #expect(accepted >= 2 && accepted <= 12, "\(accepted) connections")
        #expect(fixture.reports.availabilities.isEmpty)
    }

    // MARK: - Idle and stop

    @Test func anIdleConnectedClientDoesNotWakeUp() async throws {
        let fixture = try Fixture()
        defer { fixture.tearDown() }
        let client = try await fixture.connectedClient()
        defer { client.stop(withinMicroseconds: 0) }

        let before = client.loopPasses
        usleep(400_000)
        #expect(client.loopPasses == before)
        client.submit(.speak(Utterance(text: "x", priority: .text, language: nil)))
        #expect(await eventually { client.statistics.spoken == 1 })
        let after = client.loopPasses
        usleep(400_000)
        #expect(client.loopPasses == after)
    }

    @Test func stopFlushesWhatIsQueuedThenSaysQuit() async throws {
        let fixture = try Fixture()
        defer { fixture.tearDown() }
        let client = try await fixture.connectedClient()

        client.submit([
            .speak(Utterance(text: "Speech mode off", priority: .important, language: nil)), .cancel,
        ])
        client.stop(withinMicroseconds: 1_000_000)
        #expect(await eventually { fixture.server.texts.last == "QUIT" })
        #expect(fixture.server.texts.contains("CANCEL self"))
        #expect(client.availability == .unavailable(reason: "touchd is stopping"))
        client.submit(.cancel)
        #expect(client.statistics.unavailable == 1)
    }
}

// MARK: - Helpers

private func testLogger(_ sink: LineSink) -> Logger {
    Logger(label: "touchd.test") { _ in JournalLogHandler(logLevel: .debug, style: .terminal, sink: sink) }
}

/// What a client reported, in order.
private final class Reports: Sendable {
    private let all = Mutex<[SpeechClient.Report]>([])

    func record(_ report: SpeechClient.Report) { all.withLock { $0.append(report) } }

    var availabilities: [SpeechAvailability] {
        all.withLock { $0.compactMap { if case .availability(let a) = $0 { a } else { nil } } }
    }
    var queuedIDs: [Int?] {
        all.withLock { $0.compactMap { if case .queued(let id, _) = $0 { id } else { nil } } }
    }
    var speakTimes: [UInt64] {
        all.withLock { $0.compactMap { if case .speakSent(let at) = $0 { at } else { nil } } }
    }
    var cancelTimes: [UInt64] {
        all.withLock { $0.compactMap { if case .cancelSent(let at) = $0 { at } else { nil } } }
    }
    var ends: [(mark: UInt64, at: UInt64)] {
        all.withLock { $0.compactMap { if case .ended(let mark, let at) = $0 { (mark, at) } else { nil } } }
    }
    var events: [SSIP.Event] {
        all.withLock { $0.compactMap { if case .event(let e, _) = $0 { e } else { nil } } }
    }
}

/// A fake server in a temporary directory, a log and a report collector; `client()` makes a client with a short
/// backoff (20 ms doubling to 80 ms).
private struct Fixture {
    let directory: URL
    let path: String
    let server: FakeSSIPServer
    let logs = LineSink.memory()
    let reports = Reports()

    init() throws {
        directory = try TestSupport.makeTemporaryDirectory()
        path = directory.appendingPathComponent("speechd.sock").path
        server = try FakeSSIPServer(path: path)
    }

    /// `replyTimeout` is long unless a test is about it: a test that holds a reply back, or a loaded machine, must not
    /// see the client give the server up and reconnect.
    func client(replyTimeout: UInt64 = 30_000_000) throws -> SpeechClient {
        var options = SpeechClient.Options()
        options.backoff = .init(initial: 20_000, maximum: 80_000)
        options.replyTimeout = replyTimeout
        let reports = reports
        let client = SpeechClient(
            socketPath: path, logger: testLogger(logs), options: options, report: { reports.record($0) })
        try client.start()
        return client
    }

    /// A client whose handshake is done.
    func connectedClient() async throws -> SpeechClient {
        let client = try client()
        try #require(await eventually { client.availability == .available })
        return client
    }

    func tearDown() {
        server.stop()
        try? FileManager.default.removeItem(at: directory)
    }
}

/// `touchd speak`, the diagnostics tool, run as a process against the fake server.
@Suite(.serialized)
struct SpeakCommandTests {
    @Test func speaksReportsEachStepInOrderAndExitsZero() throws {
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try FakeSSIPServer(path: directory.appendingPathComponent("s.sock").path)
        defer { server.stop() }
        server.set(.speaking(milliseconds: 50))

        let run = try TouchdProcess.run([
            "speak", "--json", "--socket", server.path, "--language", "de", "--priority", "important",
            "Guten", "Tag",
        ])
        #expect(run.status == 0, "\(run.standardError)")
        let object = try #require(
            JSONSerialization.jsonObject(with: Data(run.standardOutput.utf8)) as? [String: Any])
        let times = ["requested_us", "speak_sent_us", "queued_us", "begin_us", "end_us"].map {
            (object[$0] as? NSNumber)?.uint64Value ?? 0
        }
        #expect(!times.contains(0), "\(object)")
        #expect(times == times.sorted())
        #expect(object["message_id"] as? Int == 1)
        #expect(server.texts.contains("SET SELF LANGUAGE de"))
        #expect(server.texts.contains("SET SELF PRIORITY important"))
        #expect(server.texts.contains("Guten Tag"))
    }

    @Test func cancelAfterSendsCancelOnceSpeechBegan() throws {
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try FakeSSIPServer(path: directory.appendingPathComponent("s.sock").path)
        defer { server.stop() }
        server.set(.speaking(milliseconds: 5000))

        let run = try TouchdProcess.run([
            "speak", "--json", "--socket", server.path, "--cancel-after-ms", "20", "long text",
        ])
        #expect(run.status == 0, "\(run.standardError)")
        let object = try #require(
            JSONSerialization.jsonObject(with: Data(run.standardOutput.utf8)) as? [String: Any])
        let begin = try #require((object["begin_us"] as? NSNumber)?.uint64Value)
        let cancel = try #require((object["cancel_sent_us"] as? NSNumber)?.uint64Value)
        let canceled = try #require((object["canceled_us"] as? NSNumber)?.uint64Value)
        #expect(cancel >= begin + 20_000)
        #expect(canceled >= cancel)
        #expect(server.texts.last == "QUIT" || server.texts.contains("CANCEL self"))
    }

    @Test func anAbsentServerExits69WithTheReason() throws {
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let run = try TouchdProcess.run([
            "speak", "--socket", directory.appendingPathComponent("none.sock").path, "--timeout-ms", "300", "hi",
        ])
        #expect(run.status == 69)
        #expect(run.standardError.contains("is unavailable: connect failed: No such file or directory"))
    }

    @Test func aServerWithoutEventsExits1AfterTheTimeout() throws {
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try FakeSSIPServer(path: directory.appendingPathComponent("s.sock").path)
        defer { server.stop() }
        let run = try TouchdProcess.run(["speak", "--socket", server.path, "--timeout-ms", "300", "hi"])
        #expect(run.status == 1)
        #expect(run.standardOutput.contains("queued: "))
        #expect(run.standardError.contains("no end of speech (702 or 703) within 300 ms"))
    }
}
