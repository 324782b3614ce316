import Glibc
import Testing

@testable import TouchDaemon

/// The system-call funnel: EINTR is retried, any other errno is kept with the call's name.
@Suite("System calls")
struct SystemCallTests {
    @Test("EINTR is retried until the call gives a result")
    func retriesInterrupts() throws {
        var attempts = 0
        let result = try systemCall("fake") { () -> Int in
            attempts += 1
            if attempts < 3 {
                errno = EINTR
                return -1
            }
            return 7
        }
        #expect(result == 7)
        #expect(attempts == 3)
    }

    @Test("another errno is thrown with the call's name, once")
    func keepsErrno() {
        var attempts = 0
        #expect(throws: SystemCallError(call: "fake", errno: EBADF)) {
            try systemCall("fake") { () -> Int32 in
                attempts += 1
                errno = EBADF
                return -1
            }
        }
        #expect(attempts == 1)
        #expect(SystemCallError(call: "read", errno: EAGAIN).description.hasPrefix("read: "))
    }

    @Test("writeAll writes every byte through a pipe, and names a closed descriptor")
    func writesEverything() throws {
        var pipeEnds: [Int32] = [-1, -1]
        try #require(pipe(&pipeEnds) == 0)
        defer { close(pipeEnds[0]) }
        let bytes = [UInt8](repeating: 0x61, count: 10_000)
        try writeAll(bytes, to: pipeEnds[1])
        close(pipeEnds[1])
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = try systemCall("read") {
                buffer.withUnsafeMutableBytes { read(pipeEnds[0], $0.baseAddress, $0.count) }
            }
            if count == 0 { break }
            received += buffer[..<count]
        }
        #expect(received == bytes)
        #expect(throws: SystemCallError(call: "write", errno: EBADF)) { try writeAll([1], to: pipeEnds[1]) }
    }
}
