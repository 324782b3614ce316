import Foundation
import Testing

@testable import TouchDaemon

/// Paths and helpers shared by the daemon's tests.
enum TestSupport {
    /// The package's root directory (this file lives in Tests/TouchDaemonTests/).
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

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

/// SplitMix64: a small, fast, seedable generator, so property tests are reproducible.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
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
