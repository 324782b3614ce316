import CLinux
import Glibc

/// `pthread_create` failed with this error number.
struct ThreadStartError: Error {
    var errno: Int32
}

/// Starts a joinable thread that runs `body`, named `name` when given (Linux shows at most 15 bytes). The thread
/// inherits the caller's signal mask: touchd's main thread blocks the signals it handles before starting any thread.
func startThread(named name: String?, _ body: @escaping @Sendable () -> Void) throws(ThreadStartError) -> pthread_t {
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
    return thread
}
