import CLinux
import Glibc
import Synchronization

/// `pthread_create` failed with this error number.
struct ThreadStartError: Error {
    var errno: Int32
}

/// A started thread, joined by whoever stops it.
final class WorkerThread: Sendable {
    private let thread: pthread_t
    /// Whether the thread was joined; held while joining, so a second caller waits for the first.
    private let joined = Mutex(false)

    fileprivate init(_ thread: pthread_t) {
        self.thread = thread
    }

    /// Waits for the thread to end; returns at once if it was joined before. The thread itself must never call it.
    func join() {
        joined.withLock { joined in
            guard !joined else { return }
            // The thread never takes `joined`, so holding it while joining cannot deadlock.
            pthread_join(thread, nil)
            joined = true
        }
    }
}

/// Starts a joinable thread that runs `body`, named `name` when given (Linux shows at most 15 bytes).
///
/// With `blockingSignals`, the thread starts with every signal blocked (the mask is set around `pthread_create`, so
/// there is no moment when it has one unblocked): signals go to the threads that handle them, and a `SIGPIPE` could
/// never end the process from it. Otherwise it inherits the caller's mask: touchd's main thread blocks the signals it
/// handles before starting any thread.
func startThread(
    named name: String?, blockingSignals: Bool = false, _ body: @escaping @Sendable () -> Void
) throws(ThreadStartError) -> WorkerThread {
    /// Handed to the thread, which takes ownership of it.
    final class Start: Sendable {
        let name: String?
        let body: @Sendable () -> Void
        init(name: String?, body: @escaping @Sendable () -> Void) {
            self.name = name
            self.body = body
        }
    }
    var previous = sigset_t()
    if blockingSignals {
        var all = sigset_t()
        sigfillset(&all)
        pthread_sigmask(SIG_SETMASK, &all, &previous)
    }
    defer { if blockingSignals { pthread_sigmask(SIG_SETMASK, &previous, nil) } }
    let argument = Unmanaged.passRetained(Start(name: name, body: body)).toOpaque()
    var thread = pthread_t()
    let result = pthread_create(
        &thread, nil,
        { argument in
            let start = Unmanaged<Start>.fromOpaque(argument!).takeRetainedValue()
            if let name = start.name { _ = touchd_set_thread_name(String(name.prefix(15))) }
            start.body()
            return nil
        }, argument)
    guard result == 0 else {
        Unmanaged<Start>.fromOpaque(argument).release()
        throw ThreadStartError(errno: result)
    }
    return WorkerThread(thread)
}

/// Runs `body` on a new thread of its own, named `name` (as `top -H` shows it), and waits for its result; on the
/// calling thread when no thread can be started.
func runOnDedicatedThread(name: String, _ body: @escaping @Sendable () -> Int32) -> Int32 {
    /// The thread's result, read after the join.
    final class Result: Sendable {
        let status = Atomic<Int32>(0)
    }
    let result = Result()
    do {
        try startThread(named: name) { result.status.store(body(), ordering: .relaxed) }.join()
    } catch {
        return body()
    }
    return result.status.load(ordering: .relaxed)
}
