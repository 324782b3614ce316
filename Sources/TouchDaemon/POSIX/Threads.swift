import CLinux
import Glibc
import Synchronization

/// `pthread_create` failed with this error number.
struct ThreadStartError: Error {
    var errno: Int32
}

/// A started thread that an executor joins when it stops.
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

/// Starts a joinable thread that runs `body`, named `name` when given (Linux shows at most 15 bytes). The thread
/// inherits the caller's signal mask: touchd's main thread blocks the signals it handles before starting any thread.
func startThread(named name: String?, _ body: @escaping @Sendable () -> Void) throws(ThreadStartError) -> WorkerThread {
    /// Handed to the thread, which takes ownership of it.
    final class Start: Sendable {
        let name: String?
        let body: @Sendable () -> Void
        init(name: String?, body: @escaping @Sendable () -> Void) {
            self.name = name
            self.body = body
        }
    }
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
