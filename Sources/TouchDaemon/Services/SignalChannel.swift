import CLinux
import Glibc

/// Delivers SIGHUP, SIGINT and SIGTERM through a signalfd that the input loop polls, so reloads and stops happen on
/// the input thread, between two frames, with no async-signal-safety concerns.
///
/// The signals are blocked with `pthread_sigmask` before any thread of touchd's starts, and threads inherit the mask,
/// so no thread ever runs a default handler (which for SIGHUP would kill the daemon). SIGPIPE is ignored process-wide;
/// every socket write also passes MSG_NOSIGNAL.
final class SignalChannel: Sendable {
    static let handled: [Int32] = [SIGHUP, SIGINT, SIGTERM]

    let fileDescriptor: Int32

    /// Blocks the signals in the calling thread (call it on the main thread before starting others) and opens the
    /// signalfd. Returns nil, with errno set, when signalfd fails.
    init?() {
        signal(SIGPIPE, SIG_IGN)
        var mask = sigset_t()
        sigemptyset(&mask)
        for signal in Self.handled { sigaddset(&mask, signal) }
        guard pthread_sigmask(SIG_BLOCK, &mask, nil) == 0 else { return nil }
        let fd = signalfd(-1, &mask, Int32(SFD_NONBLOCK) | Int32(SFD_CLOEXEC))
        guard fd >= 0 else { return nil }
        fileDescriptor = fd
    }

    deinit { close(fileDescriptor) }

    /// The signals that arrived since the last call, in order. Several SIGHUPs pending at once arrive as one, which
    /// coalesces a reload storm.
    func drain() -> [Int32] {
        var received: [Int32] = []
        var info = signalfd_siginfo()
        while true {
            let count = read(fileDescriptor, &info, MemoryLayout<signalfd_siginfo>.size)
            if count < 0 && errno == EINTR { continue }
            guard count == MemoryLayout<signalfd_siginfo>.size else { return received }
            received.append(Int32(bitPattern: info.ssi_signo))
        }
    }
}
