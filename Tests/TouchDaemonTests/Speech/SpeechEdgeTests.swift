import Foundation
import Glibc
import Logging
import TestKit
import Testing

@testable import TouchDaemon

/// The daemon's speech edge: the client started on a socket, its availability reaching the input thread through a
/// descriptor the input loop waits on, commands handed over, and the stop.
@Suite(.serialized)
struct SpeechEdgeTests {
    @Test func availabilityWakesTheInputLoopAndCommandsReachTheServer() async throws {
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try FakeSSIPServer(path: directory.appendingPathComponent("a.sock").path)
        defer { server.stop() }
        let logs = LineSink.memory()
        let edge = SpeechEdge(logger: testLogger(logs))
        let descriptor = try #require(edge.fileDescriptor)

        // Nothing waits before the client starts; commands without a client go nowhere.
        #expect(!readable(descriptor, milliseconds: 0))
        edge.submit(.cancel)
        #expect(edge.availability == .unavailable(reason: "speech is not configured"))

        #expect(edge.start(socketPath: server.path) == nil)
        #expect(readable(descriptor, milliseconds: 10_000))
        #expect(edge.takeReports().change == .available)
        #expect(!readable(descriptor, milliseconds: 0))

        edge.submit(.speak(Utterance(text: "Pay", priority: .text, language: "en")))
        #expect(await eventually { edge.statistics?.spoken == 1 })
        #expect(server.texts.contains("Pay"))

        // The same path again: the connection stays.
        #expect(edge.start(socketPath: server.path) == nil)
        #expect(server.acceptedConnections == 1)

        // The server goes away: the loop hears of it.
        server.stop()
        #expect(readable(descriptor, milliseconds: 10_000))
        #expect(edge.takeReports().change == .unavailable(reason: "the server closed the connection"))

        edge.stop(withinMicroseconds: 100_000)
        edge.stop(withinMicroseconds: 100_000)
        #expect(logs.captured.filter { $0.hasPrefix("info: speech statistics") && $0.contains("spoken=1") }.count == 1)
        #expect(edge.start(socketPath: server.path) == "touchd is stopping")
    }

    @Test func theEndOfAMarkedUtteranceWakesTheInputLoopWithItsMarkAndTime() async throws {
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try FakeSSIPServer(path: directory.appendingPathComponent("e.sock").path)
        defer { server.stop() }
        let edge = SpeechEdge(logger: testLogger(LineSink.memory()))
        defer { edge.stop(withinMicroseconds: 0) }
        let descriptor = try #require(edge.fileDescriptor)
        #expect(edge.start(socketPath: server.path) == nil)
        #expect(readable(descriptor, milliseconds: 10_000))
        #expect(edge.takeReports().change == .available)

        edge.submit(.speak(Utterance(text: "OK, button", priority: .text, language: "en", endMark: 7)))
        #expect(await eventually { edge.statistics?.spoken == 1 })
        // Its begin wakes nothing; its end does.
        server.send(Array("701-1\r\n701-7\r\n701 BEGIN\r\n".utf8))
        #expect(!readable(descriptor, milliseconds: 200))
        let before = monotonicMicroseconds()
        server.send(Array("702-1\r\n702-7\r\n702 END\r\n".utf8))
        #expect(readable(descriptor, milliseconds: 10_000))
        let reports = edge.takeReports()
        #expect(reports.change == nil)
        #expect(reports.ends.map(\.mark) == [7])
        #expect(reports.ends.allSatisfy { $0.at >= before && $0.at <= monotonicMicroseconds() })
        #expect(!readable(descriptor, milliseconds: 0))
    }

    @Test func aNewSocketReplacesTheClientAndStoppingSpeechReportsUnavailable() async throws {
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = try FakeSSIPServer(path: directory.appendingPathComponent("first.sock").path)
        defer { first.stop() }
        let second = try FakeSSIPServer(path: directory.appendingPathComponent("second.sock").path)
        defer { second.stop() }
        let edge = SpeechEdge(logger: testLogger(LineSink.memory()))
        defer { edge.stop(withinMicroseconds: 0) }
        let descriptor = try #require(edge.fileDescriptor)

        #expect(edge.start(socketPath: first.path) == nil)
        #expect(await eventually { edge.availability == .available })
        _ = edge.takeReports().change

        let before = first.texts.count
        #expect(edge.start(socketPath: second.path) == nil)
        // The old client was stopped at once (no flush: the input thread does not wait for it), so it said nothing more.
        #expect(first.texts.count == before)
        #expect(await eventually { second.acceptedConnections == 1 && edge.availability == .available })
        #expect(readable(descriptor, milliseconds: 10_000))
        // The latest change wins: the new client's availability (or the switch's unavailability, if it was read
        // before the new client's handshake).
        let change = edge.takeReports().change
        #expect(change == .available || change == .unavailable(reason: "the speech socket changed to \(second.path)"))

        edge.stopClient()
        #expect(edge.takeReports().change == .unavailable(reason: "speech is turned off"))
        #expect(edge.statistics == nil)
    }
}

private func testLogger(_ sink: LineSink) -> Logger {
    Logger(label: "touchd.test") { _ in JournalLogHandler(logLevel: .debug, style: .terminal, sink: sink) }
}

private func readable(_ descriptor: Int32, milliseconds: Int32) -> Bool {
    var set = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
    return poll(&set, 1, milliseconds) == 1
}
