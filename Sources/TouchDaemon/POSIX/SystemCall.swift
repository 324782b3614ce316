import Glibc

/// An `errno`, kept with the system call that set it (not read later from the global, which the next call changes).
struct SystemCallError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The call's name, e.g. `read`.
    var call: String
    var errno: Int32

    var description: String { "\(call): \(String(cString: strerror(errno)))" }
}

/// The one way touchd makes a system call that reports failure as −1 and `errno`: again while it fails with EINTR (a
/// signal arrived), and otherwise as it returned, with the errno thrown as a typed error. Blocking, non-blocking and
/// would-block handling stay the caller's: `EAGAIN` is thrown like any other errno. (swift-nio's `System.swift` is
/// the model; unlike it, nothing here traps: a daemon that must keep a kiosk running reports even a programming error.)
@inline(__always)
func systemCall<Result: BinaryInteger>(_ name: String, _ body: () -> Result) throws(SystemCallError) -> Result {
    while true {
        let result = body()
        guard result == -1 else { return result }
        let code = errno
        if code == EINTR { continue }
        throw SystemCallError(call: name, errno: code)
    }
}

/// Writes every byte of `bytes` to `descriptor`, retrying short writes and EINTR. The corresponding C function is
/// `write`.
func writeAll(_ bytes: some Collection<UInt8>, to descriptor: Int32) throws(SystemCallError) {
    var remaining = Array(bytes)[...]
    while !remaining.isEmpty {
        // withUnsafeBytes rethrows untyped errors: carry the typed one out in a Result.
        let written = try remaining.withUnsafeBytes { buffer in
            Result { () throws(SystemCallError) in
                try systemCall("write") { Glibc.write(descriptor, buffer.baseAddress, buffer.count) }
            }
        }.get()
        // write(2) returns 0 only for a count of 0; guard anyway so that a broken descriptor cannot spin.
        guard written > 0 else { throw SystemCallError(call: "write", errno: EIO) }
        remaining = remaining.dropFirst(written)
    }
}
