import Glibc
import Logging

/// `poll(2)`'s timeout for waking at `deadline` (monotonic microseconds): rounded up to whole milliseconds, so that
/// on waking the deadline has passed (waking a little early would find nothing due and poll again with a zero
/// timeout); 0 when it has passed already, −1 (no limit) for no deadline.
func pollTimeout(until deadline: UInt64?, now: UInt64) -> Int32 {
    guard let deadline else { return -1 }
    return deadline <= now ? 0 : Int32(clamping: (deadline - now).saturatingSum(999) / 1000)
}

/// One wait of an executor thread's loop: `poll` on `descriptors` with `timeout` milliseconds. Returns how many are
/// ready; 0 on a timeout, on EINTR, and on any other error, which is logged (as `what: poll failed`, rate limited by
/// `failures`) and followed by a 100 ms pause, so that an error that repeats never makes the loop spin.
func pollOnce(
    _ descriptors: inout [pollfd], timeout: Int32, now: UInt64, failures: inout RateLimit, logger: Logger,
    what: String
) -> Int32 {
    let ready = poll(&descriptors, nfds_t(descriptors.count), timeout)
    guard ready < 0 else { return ready }
    let error = errno
    guard error != EINTR else { return 0 }
    if case .pass(let suppressed) = failures.check(now: now) {
        var metadata: Logger.Metadata = ["errno": "\(error)"]
        if suppressed > 0 { metadata["suppressed"] = "\(suppressed)" }
        logger.error("\(what): poll failed: \(UnixSocket.describe(error))", metadata: metadata)
    }
    usleep(100_000)
    return 0
}
