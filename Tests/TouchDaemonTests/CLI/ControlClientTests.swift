import Foundation
import Glibc
import Synchronization
import Testing

@testable import TouchDaemon

/// `touchd ctl` against a hostile daemon: a fake server on a Unix socket in a temporary directory answers with
/// what a broken or malicious touchd could send. Every case must end with a precise message and exit status (76
/// for a protocol violation), bounded in memory (the fake counts what the client took) and in time (a deadline,
/// never a measured duration).
@Suite(.serialized)
struct ControlClientTests {
    /// The hello every fake sends first, answering request 1.
    static let hello = #"{"type":"hello","v":1,"id":1,"server":"fake","generation":1,"role":"controller","client":1}"#

    @Test func aResponseWithAnotherIDIsAProtocolError() throws {
        let fake = try FakeDaemon { connection in
            guard connection.readLine() != nil, connection.write(Self.hello + "\n"), connection.readLine() != nil
            else { return }
            _ = connection.write(#"{"type":"response","id":99,"ok":true,"result":{}}"# + "\n")
            // A client that waited for its own id would time out (69) instead of stopping here.
            connection.waitForClose()
        }
        defer { fake.tearDown() }
        let result = try TouchdProcess.ctl(["state", "--socket", fake.path, "--timeout", "30"])
        #expect(result.status == 76, "\(result.error)")
        #expect(result.error.contains("a response to another request (ours was id 2)"), "\(result.error)")
        #expect(result.error.contains(#"\"id\":99"#), "\(result.error)")
    }

    @Test func aHelloWithAnotherIDIsAProtocolError() throws {
        let fake = try FakeDaemon { connection in
            guard connection.readLine() != nil else { return }
            _ = connection.write(Self.hello.replacingOccurrences(of: #""id":1"#, with: #""id":7"#) + "\n")
            connection.waitForClose()
        }
        defer { fake.tearDown() }
        let result = try TouchdProcess.ctl(["state", "--socket", fake.path, "--timeout", "30"])
        #expect(result.status == 76, "\(result.error)")
        #expect(result.error.contains("a hello for another id (ours was 1)"), "\(result.error)")
    }

    @Test func malformedRepliesAreProtocolErrorsNamingWhatCame() throws {
        let cases: [(reply: String, message: String)] = [
            ("not json at all", #"a line that is not valid JSON (expected a value at byte 0): "not json at all""#),
            (#"[1,2]"#, #"a line without a "type": "[1,2]""#),
            (#"{"type":"response","id":2,"ok":"yes"}"#, "a response with neither ok nor an error"),
            (#"{"type":"response","id":null,"ok":true,"result":{}}"#, "a response to another request"),
            ("\u{1B}[2J", #"\u001b[2J"#),
        ]
        for (reply, message) in cases {
            let fake = try FakeDaemon { connection in
                guard connection.readLine() != nil, connection.write(Self.hello + "\n"), connection.readLine() != nil
                else { return }
                _ = connection.write(reply + "\n")
                connection.waitForClose()
            }
            defer { fake.tearDown() }
            let result = try TouchdProcess.ctl(["state", "--socket", fake.path, "--timeout", "30"])
            #expect(result.status == 76, "\(reply): \(result.error)")
            #expect(result.error.contains(message), "\(reply): \(result.error)")
            // What the daemon sent is quoted, never written raw to the terminal.
            #expect(!result.error.contains("\u{1B}"))
        }
    }

    @Test func aRefusalOfAnUnreadableRequestIsStillARefusal() throws {
        let fake = try FakeDaemon { connection in
            guard connection.readLine() != nil, connection.write(Self.hello + "\n"), connection.readLine() != nil
            else { return }
            _ = connection.write(
                #"{"type":"response","id":null,"ok":false,"error":{"code":"bad_request","message":"no"}}"# + "\n")
            connection.waitForClose()
        }
        defer { fake.tearDown() }
        let result = try TouchdProcess.ctl(["state", "--socket", fake.path, "--timeout", "30"])
        #expect(result.status == 1, "\(result.error)")
        #expect(result.error == "touchd ctl: bad_request: no\n")
    }

    /// A reply line that never ends: refused once it passes `ControlClient.maxLineBytes`, having taken no more than
    /// that and a read or two (once, the client took 16 MiB, searching all of it again after every read).
    @Test func anEndlessLineIsRefusedAtTheLimit() throws {
        let fake = try FakeDaemon { connection in
            guard connection.readLine() != nil, connection.write(Self.hello + "\n"), connection.readLine() != nil
            else { return }
            guard connection.write(#"{"type":"response","id":2,"ok":true,"result":""#) else { return }
            let chunk = String(repeating: "x", count: 65_536)
            // Until the client hangs up; 64 MiB at most, so a client that never stops cannot hold the test forever.
            var chunks = 0
            while chunks < 1_024 && connection.write(chunk) { chunks += 1 }
        }
        defer { fake.tearDown() }
        let result = try TouchdProcess.ctl(["state", "--socket", fake.path, "--timeout", "30"])
        #expect(result.status == 76, "\(result.error)")
        #expect(result.error.contains("a line longer than 1048576 bytes"), "\(result.error)")
        #expect(result.error.contains(#"{\"type\":\"response\""#), "\(result.error)")
        #expect(result.error.count < 1_000)
        #expect(fake.finished)
        // The client read at most the limit and a read, plus what the kernel's socket buffers held when it closed.
        #expect(fake.bytesWritten > ControlClient.maxLineBytes)
        #expect(fake.bytesWritten < ControlClient.maxLineBytes + 65_536 + 2 << 20, "\(fake.bytesWritten)")
    }

    /// A daemon that trickles bytes and never finishes a line: the timeout bounds the whole answer, not each read.
    @Test func aTricklingDaemonTimesOut() throws {
        let fake = try FakeDaemon { connection in
            guard connection.readLine() != nil, connection.write(Self.hello + "\n"), connection.readLine() != nil
            else { return }
            // One byte every 50 ms, for at most 60 s: each read gets something well within the timeout.
            var bytes = 0
            while bytes < 1_200 && connection.write(" ") {
                bytes += 1
                usleep(50_000)
            }
        }
        defer { fake.tearDown() }
        let result = try TouchdProcess.ctl(["state", "--socket", fake.path, "--timeout", "0.5"])
        #expect(result.status == 69, "\(result.error)")
        #expect(result.error == "touchd ctl: connection lost: no answer within 0.5 s\n")
        #expect(fake.finished)
    }

    /// A touchscreen named with `ESC]0;…BEL` retitled the terminal of whoever ran `touchd ctl state`:
    /// the human output shows every control character as an escape; `--json` stays the same JSON value, with DEL, C1
    /// and bidirectional controls as `\u` escapes; a refusal's message on standard error is escaped too.
    @Test func controlCharactersFromTheServerAreEscaped() throws {
        // ESC ] 0 ; owned BEL, then DEL, U+009B (CSI) and U+202E (right-to-left override), raw in the JSON string.
        let name = #"\u001b]0;owned\u0007"# + "\u{7F}\u{9B}\u{202E}x"
        let state =
            #"{"generation":1,"screens":[],"controls":[],"gestures":[],"devices":[{"sysname":"event5","name":""#
            + name + #"","vendor":"0001","product":"0002","node":"/dev/input/event5"}],"contacts":0}"#
        for json in [false, true] {
            let fake = try FakeDaemon { connection in
                guard connection.readLine() != nil, connection.write(Self.hello + "\n"),
                    connection.readLine() != nil
                else { return }
                _ = connection.write(#"{"type":"response","id":2,"ok":true,"result":"# + state + "}\n")
                connection.waitForClose()
            }
            defer { fake.tearDown() }
            let result = try TouchdProcess.ctl(
                ["state", "--socket", fake.path, "--timeout", "30"] + (json ? ["--json"] : []))
            #expect(result.status == 0, "\(result.error)")
            #expect(!result.output.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x07 })
            #expect(!result.output.unicodeScalars.contains { [0x7F, 0x9B, 0x202E].contains($0.value) })
            if json {
                let line = try #require(result.output.split(separator: "\n").first)
                let value = try JSONValue.parse(Array(line.utf8))
                let device = value["result"]?["devices"]?.arrayValue?.first
                #expect(device?["name"]?.stringValue == "\u{1B}]0;owned\u{07}\u{7F}\u{9B}\u{202E}x")
            } else {
                #expect(
                    result.output.contains(
                        #"  event5  \x1b]0;owned\x07\x7f\u009b\u202ex  0001:0002  /dev/input/event5"#))
            }
        }

        let refusing = try FakeDaemon { connection in
            guard connection.readLine() != nil, connection.write(Self.hello + "\n"), connection.readLine() != nil
            else { return }
            _ = connection.write(
                #"{"type":"response","id":2,"ok":false,"error":{"code":"busy","message":"\u001b[2Jgone"}}"# + "\n")
            connection.waitForClose()
        }
        defer { refusing.tearDown() }
        let refused = try TouchdProcess.ctl(["state", "--socket", refusing.path, "--timeout", "30"])
        #expect(refused.status == 1)
        #expect(refused.error.contains(#"\x1b[2Jgone"#), "\(refused.error)")
        #expect(!refused.error.unicodeScalars.contains { $0.value == 0x1B })
    }

    /// `stats --prometheus` asks for `stats` and prints exactly the exposition of its result, nothing more.
    @Test func statsForPrometheusPrintsTheExposition() throws {
        let fake = try FakeDaemon { connection in
            guard connection.readLine() != nil, connection.write(Self.hello + "\n"),
                let request = connection.readLine(), request.contains(#""type":"stats""#)
            else { return }
            _ = connection.write(#"{"type":"response","id":2,"ok":true,"result":"# + PrometheusTests.stats + "}\n")
            connection.waitForClose()
        }
        defer { fake.tearDown() }
        let result = try TouchdProcess.ctl(["stats", "--prometheus", "--socket", fake.path, "--timeout", "30"])
        #expect(result.status == 0, "\(result.error)")
        let stats = try JSONValue.parse(Array(PrometheusTests.stats.utf8))
        #expect(result.output == PrometheusExposition.text(stats: stats))
        #expect(result.output.contains("touchd_frames_total 1200\n"))
    }

    /// With `--json`, a refusal is a response like any other, printed on standard output as it
    /// came (it printed nothing there, only the message on standard error); the exit status stays 1.
    @Test func jsonPrintsRefusalsOnStandardOutput() throws {
        let invalid =
            #"{"type":"response","id":2,"ok":false,"error":{"code":"invalid_configuration","message":"1 problem","#
            + #""problems":["/etc/touchd/touchd.toml:3:1: error: output.width: expected a number"]}}"#
        let unknown =
            #"{"type":"response","id":2,"ok":false,"error":{"code":"unknown_control","message":"no control 'NOSUCH'"}}"#
        let hello = #"{"type":"response","id":1,"ok":false,"error":{"code":"unauthorized","message":"observers only"}}"#
        let cases: [(arguments: [String], reply: String, toHello: Bool)] = [
            (["reload"], invalid, false),
            (["send", "NOSUCH", "touchUpInside"], unknown, false),
            (["subscribe", "--kind", "nosuch"], unknown, false),
            (["state"], hello, true),
        ]
        for (arguments, reply, toHello) in cases {
            let fake = try FakeDaemon { connection in
                guard connection.readLine() != nil else { return }
                if !toHello {
                    guard connection.write(Self.hello + "\n"), connection.readLine() != nil else { return }
                }
                _ = connection.write(reply + "\n")
                connection.waitForClose()
            }
            defer { fake.tearDown() }
            let result = try TouchdProcess.ctl(
                arguments + ["--json", "--socket", fake.path, "--timeout", "30"])
            #expect(result.status == 1, "\(arguments): \(result.error)")
            #expect(result.output == reply + "\n", "\(arguments)")
        }
    }

    /// A fake that says hello, accepts a subscription and then sends `events` and nothing more, holding the
    /// connection open for 10 s.
    private static func silentSubscription(events: [String] = []) throws -> FakeDaemon {
        try FakeDaemon { connection in
            guard connection.readLine() != nil, connection.write(Self.hello + "\n"), connection.readLine() != nil,
                connection.write(#"{"type":"response","id":2,"ok":true,"result":{"generation":1}}"# + "\n")
            else { return }
            for event in events { _ = connection.write(event + "\n") }
            connection.waitForClose()
        }
    }

    /// `--timeout` bounds the verbs that wait for events. `monitor --count 1 --timeout 1` waited
    /// until touchd closed the connection (here the fake, after 10 s; a real touchd never does); now it stops after a
    /// second with 69, saying how many of the events came. Without --count the timeout is how long to watch: exit 0.
    @Test func timeoutBoundsMonitorAndSubscribe() throws {
        let contact = #"{"type":"event","seq":2,"kind":"contact","touch":"down","contact":0,"x":1,"y":2,"time_us":5}"#
        let cases: [(arguments: [String], events: [String], status: Int32, error: String, lines: Int)] = [
            (["monitor", "--count", "1"], [], 69, "touchd ctl: 0 of 1 events within --timeout 1 s\n", 0),
            (["monitor", "--count", "2"], [contact], 69, "touchd ctl: 1 of 2 events within --timeout 1 s\n", 1),
            (["subscribe", "--count", "1"], [], 69, "touchd ctl: 0 of 1 events within --timeout 1 s\n", 1),
            (["monitor"], [contact], 0, "", 1),
        ]
        for (arguments, events, status, error, lines) in cases {
            let fake = try Self.silentSubscription(events: events)
            defer { fake.tearDown() }
            let result = try TouchdProcess.ctl(arguments + ["--json", "--socket", fake.path, "--timeout", "1"])
            #expect(result.status == status, "\(arguments): \(result.error)")
            #expect(result.error == error, "\(arguments)")
            #expect(result.output.split(separator: "\n").count == lines, "\(arguments): \(result.output)")
        }
    }
}

/// A one-connection server on a Unix socket in a temporary directory, running `script` on its own thread.
private final class FakeDaemon: Sendable {
    /// The accepted connection, as the script sees it.
    final class Connection: Sendable {
        let socket: Int32
        private let written = Atomic<Int>(0)
        private let buffer = Mutex<[UInt8]>([])

        init(socket: Int32) {
            self.socket = socket
            var timeout = timeval(tv_sec: 10, tv_usec: 0)
            setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            setsockopt(socket, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        }

        var bytesWritten: Int { written.load(ordering: .relaxed) }

        /// The next line from the client; nil at its end or after 10 s.
        func readLine() -> String? {
            buffer.withLock { buffer in
                while true {
                    if let newline = buffer.firstIndex(of: 10) {
                        let line = String(decoding: buffer[..<newline], as: UTF8.self)
                        buffer.removeFirst(newline + 1)
                        return line
                    }
                    var chunk = [UInt8](repeating: 0, count: 4_096)
                    let count = recv(socket, &chunk, chunk.count, 0)
                    guard count > 0 else { return nil }
                    buffer += chunk[..<count]
                }
            }
        }

        /// Writes all of `text`; false once the client is gone (or after 10 s without progress).
        func write(_ text: String) -> Bool {
            let bytes = Array(text.utf8)
            var offset = 0
            while offset < bytes.count {
                let sent = bytes.withUnsafeBytes {
                    send(socket, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL))
                }
                guard sent > 0 else { return false }
                offset += sent
                written.add(sent, ordering: .relaxed)
            }
            return true
        }

        /// Waits (at most 10 s) for the client to hang up.
        func waitForClose() {
            var byte: UInt8 = 0
            while recv(socket, &byte, 1, 0) > 0 {}
        }
    }

    let directory: URL
    let path: String
    private let listener: Int32
    private let state = Mutex<(connection: Connection?, finished: Bool)>((nil, false))

    init(_ script: @escaping @Sendable (Connection) -> Void) throws {
        directory = try TestSupport.makeTemporaryDirectory()
        path = directory.appendingPathComponent("control.sock").path
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
        try #require(listener >= 0)
        self.listener = listener
        let resolved = try #require(UnixSocket.address(Array(path.utf8)))
        var address = resolved.address
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, resolved.length) }
        }
        try #require(bound == 0 && listen(listener, 4) == 0, "cannot listen on \(path)")
        Thread.detachNewThread { [self] in
            let descriptor = accept(listener, nil, nil)
            if descriptor >= 0 {
                let connection = Connection(socket: descriptor)
                state.withLock { $0.connection = connection }
                script(connection)
                close(descriptor)
            }
            state.withLock { $0.finished = true }
        }
    }

    /// Whether the script has ended (waiting up to 10 s for it).
    var finished: Bool {
        let deadline = monotonicMicroseconds() + 10_000_000
        while monotonicMicroseconds() < deadline {
            if state.withLock({ $0.finished }) { return true }
            usleep(5_000)
        }
        return state.withLock { $0.finished }
    }

    /// Bytes the script wrote to the client.
    var bytesWritten: Int { state.withLock { $0.connection?.bytesWritten ?? 0 } }

    func tearDown() {
        // Unblocks an accept that never got a client.
        shutdown(listener, Int32(SHUT_RDWR))
        _ = finished
        close(listener)
        try? FileManager.default.removeItem(at: directory)
    }
}
