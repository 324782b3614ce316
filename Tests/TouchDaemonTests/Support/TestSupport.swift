import Foundation
// Every file of this target uses the shared helpers (SeededGenerator, ManualClock, eventually).
@_exported import TestKit
import Testing

@testable import TouchDaemon

/// Paths and helpers shared by the daemon's tests.
enum TestSupport {
    /// The package's root directory (this file lives in Tests/TouchDaemonTests/Support/).
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// The example configuration, validated by CI.
    static let kioskConfig = packageRoot.appendingPathComponent("config/kiosk.toml").path

    /// A resource folder of this test target (`BrokenConfigs`, `Golden`).
    static func resourceDirectory(_ name: String) -> URL {
        Bundle.module.resourceURL!.appendingPathComponent(name)
    }

    /// A fresh directory under the system's temporary directory; the caller removes it.
    static func makeTemporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent(
            "touchd-tests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// The expected problem lines of a broken configuration: its leading `# expect: ` lines (after an
    /// optional byte order mark), with the literal `PATH` standing for the file's path. Works on raw
    /// bytes, so files that are deliberately not UTF-8 can still say what they expect.
    static func expectations(in bytes: [UInt8]) -> [String] {
        var body = bytes[...]
        if body.starts(with: [0xEF, 0xBB, 0xBF]) { body = body.dropFirst(3) }
        var result: [String] = []
        for line in body.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            var line = line
            if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
            let prefix = Array("# expect: ".utf8)
            guard line.starts(with: prefix), let text = String(validating: line.dropFirst(prefix.count), as: UTF8.self)
            else { break }
            result.append(text)
        }
        return result
    }

    /// Problem lines as `touchd check` prints them, with the file's path replaced by `PATH`.
    static func normalised(_ error: ConfigurationError) -> [String] {
        error.lines.map { line in
            line.hasPrefix(error.path) ? "PATH" + line.dropFirst(error.path.count) : line
        }
    }

    // MARK: Fuzzing

    /// `TOUCHD_FUZZ_ROUNDS`: how many inputs each fuzz test feeds instead of its own number, for longer runs outside
    /// the normal suite.
    static let fuzzRounds = ProcessInfo.processInfo.environment["TOUCHD_FUZZ_ROUNDS"].flatMap { Int($0) }
    /// `TOUCHD_FUZZ_SEED`: the seed every fuzz test uses instead of its own fixed one.
    static let fuzzSeed = ProcessInfo.processInfo.environment["TOUCHD_FUZZ_SEED"].flatMap { UInt64($0) }

    /// Applies one random mutation to `bytes`: flips a bit, deletes a run, duplicates or deletes a line, inserts a
    /// fragment, or replaces the value after a `valueAfter` byte (TOML's `=`, YAML's `:`) up to the end of its line
    /// with a fragment. With `numbers`, it may also replace a run of digits with one of them, which reaches the
    /// numeric checks behind a format's syntax (a recording's event fields). Shared by every fuzz test, so that a
    /// mutation added here exercises every parser.
    static func mutate(
        _ bytes: inout [UInt8], fragments: [String], valueAfter: UInt8, numbers: [String] = [],
        using random: inout SeededGenerator
    ) {
        guard !bytes.isEmpty else {
            bytes = Array(fragments.randomElement(using: &random)!.utf8)
            return
        }
        let offset = Int.random(in: 0..<bytes.count, using: &random)
        // Without numbers, the same draws as before they were added: a seed keeps reproducing the same inputs.
        switch Int.random(in: 0..<(numbers.isEmpty ? 6 : 7), using: &random) {
        case 0:  // flip a bit
            bytes[offset] ^= 1 << UInt8.random(in: 0...7, using: &random)
        case 1:  // delete a run
            bytes.removeSubrange(offset..<Swift.min(bytes.count, offset + Int.random(in: 1...40, using: &random)))
        case 2:  // duplicate a line
            var lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
            let line = Int.random(in: 0..<lines.count, using: &random)
            lines.insert(lines[line], at: line)
            bytes = Array(lines.joined(separator: [UInt8(ascii: "\n")]))
        case 3:  // delete a line
            var lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
            lines.remove(at: Int.random(in: 0..<lines.count, using: &random))
            bytes = Array(lines.joined(separator: [UInt8(ascii: "\n")]))
        case 4:  // insert a fragment anywhere
            bytes.insert(contentsOf: fragments.randomElement(using: &random)!.utf8, at: offset)
        case 5:  // replace a value with a fragment
            guard let separator = bytes[offset...].firstIndex(of: valueAfter) else { return }
            let end = bytes[separator...].firstIndex(of: UInt8(ascii: "\n")) ?? bytes.count
            bytes.replaceSubrange(
                (separator + 1)..<end, with: Array((" " + fragments.randomElement(using: &random)!).utf8))
        default:  // replace a number with another
            let isDigit = { (byte: UInt8) in (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }
            guard let start = bytes[offset...].firstIndex(where: isDigit) else { return }
            let end = bytes[start...].firstIndex { !isDigit($0) } ?? bytes.count
            bytes.replaceSubrange(start..<end, with: Array(numbers.randomElement(using: &random)!.utf8))
        }
    }

    /// The problem lines of a load that must fail; records an issue when it succeeds.
    static func problemLines(
        _ result: Result<Configuration, ConfigurationError>, sourceLocation: SourceLocation = #_sourceLocation
    ) -> [String] {
        switch result {
        case .success:
            Issue.record("the configuration loaded, but it should have been rejected", sourceLocation: sourceLocation)
            return []
        case .failure(let error):
            return normalised(error)
        }
    }
}

/// A bound Unix datagram socket that receives what touchd sends: sd_notify's NOTIFY_SOCKET, journald's socket, a
/// datagram socket target.
final class DatagramReceiver {
    let path: String
    let fd: Int32

    init(path: String) throws {
        self.path = path
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        try #require(fd >= 0)
        let resolved = try #require(UnixSocket.address(Array(path.utf8)), "\(path) is too long for a socket")
        var address = resolved.address
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, resolved.length) }
        }
        try #require(bound == 0, "cannot bind \(path)")
    }

    deinit { close(fd) }

    /// The next datagram, waiting at most `milliseconds` (waits bound failures only, never measure speed).
    func receive(milliseconds: Int32 = 20_000) -> [UInt8]? {
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&descriptor, 1, milliseconds) == 1 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let count = recv(fd, &buffer, buffer.count, 0)
        guard count > 0 else { return nil }
        return Array(buffer.prefix(count))
    }
}
