import CLinux
import Glibc
import Synchronization

/// Delivers SIGHUP, SIGINT and SIGTERM through a signalfd that the input loop polls, so reloads and stops happen on
/// the input thread, between two frames, with no async-signal-safety concerns.
///
/// The signals are blocked with `pthread_sigmask` before any thread of touchd's starts, and threads inherit the mask,
/// so no thread ever runs a default handler (which for SIGHUP would kill the daemon). SIGPIPE is ignored process-wide;
/// every socket write also passes MSG_NOSIGNAL.
///
/// A thread that unblocks them anyway still cannot take the daemon down: a SIGHUP or SIGTERM delivered to such a
/// thread (a library's helper thread, such as a process monitor that waits with an empty signal mask) would run the
/// default action and end the process. The three signals therefore also have a handler, which forwards the signal with tgkill(2) to the thread that reads the signalfd
/// (``receiveOnCurrentThread()``). That thread blocks them, so the forwarded signal stays pending and the signalfd
/// reports it like any other.
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
        // Until the reading thread says otherwise, this (blocking) thread receives strays. The store also runs the
        // global's lazy initialisation here, never in the handler.
        signalForwardingTarget.store(touchd_gettid(), ordering: .sequentiallyConsistent)
        for signal in Self.handled {
            guard touchd_install_handler(signal, forwardSignal) == 0 else { return nil }
        }
    }

    /// Makes the calling thread the one stray signals are forwarded to. Call it on the thread that reads the
    /// signalfd; that thread must have the signals blocked (threads started after `init` inherit that).
    func receiveOnCurrentThread() {
        signalForwardingTarget.store(touchd_gettid(), ordering: .sequentiallyConsistent)
    }

    deinit { close(fileDescriptor) }

    /// The signals that arrived since the last call, in order. Several SIGHUPs pending at once arrive as one, which
    /// coalesces a reload storm.
    func drain() -> [Int32] {
        var received: [Int32] = []
        var info = signalfd_siginfo()
        while true {
            // EAGAIN (nothing left: the fd is non-blocking) and any failure end the drain.
            let size = MemoryLayout<signalfd_siginfo>.size
            guard let count = try? systemCall("read", { read(fileDescriptor, &info, size) }), count == size else {
                return received
            }
            received.append(Int32(bitPattern: info.ssi_signo))
        }
    }
}

/// The thread `forwardSignal` sends stray signals to; see ``SignalChannel``.
private let signalForwardingTarget = Atomic<Int32>(0)

/// The handler of SIGHUP, SIGINT and SIGTERM. It only runs in a thread that has them unblocked, which touchd's own
/// threads never do. Async-signal-safe: an atomic load, getpid(2) and tgkill(2).
private func forwardSignal(_ signal: Int32) {
    let saved = errno
    let target = signalForwardingTarget.load(ordering: .sequentiallyConsistent)
    if target > 0 { _ = touchd_tgkill(getpid(), target, signal) }
    errno = saved
}
