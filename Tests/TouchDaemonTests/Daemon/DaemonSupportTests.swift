import Foundation
import Glibc
import Logging
import Testing

@testable import TouchDaemon

/// The small pieces `touchd run` is built from: percentiles, log rate limits, log lines, sd_notify.
struct DaemonSupportTests {
    @Test func percentilesAreExactBelowTenMilliseconds() {
        var histogram = LatencyHistogram()
        #expect(histogram.percentile(0.5) == nil)
        for microseconds in 1...100 { histogram.record(UInt64(microseconds)) }
        #expect(histogram.percentile(0.5) == 50)
        #expect(histogram.percentile(0.99) == 99)
        #expect(histogram.percentile(1) == 100)
        #expect(histogram.summary == ["samples": "100", "p50_us": "50", "p99_us": "99", "max_us": "100"])
    }

    @Test func durationsBeyondTheResolvedRangeCountAsTheMaximum() {
        var histogram = LatencyHistogram()
        histogram.record(5)
        histogram.record(.max)
        #expect(histogram.percentile(0.5) == 5)
        #expect(histogram.percentile(0.99) == .max)
        #expect(histogram.overflow == 1)
    }

    @Test func rateLimitPassesABurstThenReportsWhatItSuppressed() {
        var limit = RateLimit(burst: 2, intervalMicroseconds: 1000)
        #expect(limit.check(now: 0) == .pass(suppressed: 0))
        #expect(limit.check(now: 10) == .pass(suppressed: 0))
        #expect(limit.check(now: 20) == .suppress)
        #expect(limit.check(now: 30) == .suppress)
        #expect(limit.check(now: 1000) == .pass(suppressed: 2))
        #expect(limit.check(now: 1001) == .pass(suppressed: 0))
        // A clock that goes backwards starts a new window instead of trapping.
        #expect(limit.check(now: 5) == .pass(suppressed: 0))
    }

    @Test func journalLinesCarryThePriorityPrefix() {
        let metadata: Logger.Metadata = ["device.name": "ILITEK Multi-Touch", "device.sysname": "event5"]
        #expect(
            JournalLogHandler.format(level: .info, message: "touchscreen added", metadata: metadata, style: .journal)
                == #"<6>touchscreen added device.name="ILITEK Multi-Touch" device.sysname=event5"#)
        #expect(
            JournalLogHandler.format(level: .error, message: "two\nlines", metadata: [:], style: .terminal)
                == #"error: two\nlines"#)
        #expect(JournalLogHandler.priority(of: .warning) == 4)
        #expect(JournalLogHandler.priority(of: .debug) == 7)
    }

    @Test func loggerWritesThroughTheSink() {
        let sink = LineSink.memory()
        let logger = Logger(label: "test") { _ in JournalLogHandler(logLevel: .info, style: .journal, sink: sink) }
        logger.debug("hidden")
        logger.warning("shown", metadata: ["target": "kiosk"])
        #expect(sink.captured == ["<4>shown target=kiosk"])
    }

    /// sd_notify: the datagram reaches the socket named by NOTIFY_SOCKET, lines joined by newlines.
    @Test func notifierSendsDatagrams() throws {
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let listener = try TouchdProcess.NotifySocket(path: directory.appendingPathComponent("notify").path)
        let notifier = Notifier(socketPath: listener.path, watchdogInterval: nil)
        #expect(notifier.notify(["READY=1", "STATUS=waiting for a touchscreen"]))
        #expect(listener.next() == ["READY=1", "STATUS=waiting for a touchscreen"])
        // Without NOTIFY_SOCKET nothing is sent and nothing fails.
        #expect(!Notifier(socketPath: nil, watchdogInterval: nil).notify(["READY=1"]))
    }

    /// NOTIFY_SOCKET may name an abstract socket ("@name"), as systemd in containers does.
    @Test func notifierReachesAbstractSockets() throws {
        let name = "touchd-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        try #require(fd >= 0)
        defer { close(fd) }
        var path = Array(name.utf8)
        path.insert(0, at: 0)
        var (address, length) = try #require(UnixSocket.address(path))
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length - 1) }
        }
        try #require(bound == 0)
        #expect(Notifier(socketPath: "@" + name, watchdogInterval: nil).notify(["READY=1"]))
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
        #expect(String(decoding: buffer.prefix(max(count, 0)), as: UTF8.self) == "READY=1")
    }
}
