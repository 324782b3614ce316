import CLinux
import Glibc

/// The input loop's wait on its descriptors: one epoll instance that holds them all, so that a wake-up returns from
/// one `epoll_wait` that looks only at what is ready. `poll(2)` on the loop's five descriptors asked each of them again
/// on every wake-up and unhooked five wait queues before returning: in the test guest about 13 µs more between a touch
/// waking the input thread and its `poll` returning than the floor daemon's one descriptor.
final class ReadyWait {
    /// What the wait says: how many descriptors are ready (0 on a timeout, -1 on an error, with `errno`), and which
    /// (bit `i`: the `i`th descriptor given to ``init(_:)``).
    struct Ready {
        var count: Int32
        var mask: UInt64

        func contains(_ index: Int) -> Bool {
            mask & (1 << UInt64(index)) != 0
        }
    }

    private let epoll: Int32

    /// An epoll instance with `descriptors` added for reading, in order (at most 64). Throws the errno of a failure,
    /// with nothing left open.
    init(_ descriptors: [Int32]) throws(ReadyWaitError) {
        guard descriptors.count <= 64 else { throw ReadyWaitError(operation: "epoll_ctl", errno: EINVAL) }
        epoll = touchd_epoll_create()
        guard epoll >= 0 else { throw ReadyWaitError(operation: "epoll_create1", errno: errno) }
        for (index, descriptor) in descriptors.enumerated()
        where touchd_epoll_add(epoll, descriptor, UInt32(index)) != 0 {
            let error = errno
            close(epoll)
            throw ReadyWaitError(operation: "epoll_ctl", errno: error)
        }
    }

    deinit {
        close(epoll)
    }

    /// Adds a descriptor later (filter mode's panels read at the edge) as number `index` (0–63) of the mask; the errno
    /// of a failure, nil on success.
    func add(_ descriptor: Int32, index: Int) -> Int32? {
        guard (0..<64).contains(index) else { return EINVAL }
        return touchd_epoll_add(epoll, descriptor, UInt32(index)) == 0 ? nil : errno
    }

    /// Takes a descriptor out of the wait, before it is closed (a descriptor that another still shares stays in an
    /// epoll set after its own close).
    func remove(_ descriptor: Int32) {
        _ = touchd_epoll_remove(epoll, descriptor)
    }

    /// Waits at most `timeout` milliseconds (-1: no limit) for any descriptor to be ready.
    func wait(timeout: Int32) -> Ready {
        var mask: UInt64 = 0
        let count = touchd_epoll_wait(epoll, &mask, timeout)
        return Ready(count: count, mask: count > 0 ? mask : 0)
    }
}

/// Setting up ``ReadyWait`` failed.
struct ReadyWaitError: Error, CustomStringConvertible {
    var operation: String
    var errno: Int32

    var description: String { "\(operation): \(String(cString: strerror(errno)))" }
}
