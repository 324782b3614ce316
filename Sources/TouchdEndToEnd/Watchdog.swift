import Glibc
import Synchronization

/// Set when the run has finished, so the watchdog stands down.
let runFinished = Atomic<Bool>(false)

/// The backstops that keep the driver from hanging or leaving touchd behind, whatever goes wrong in the sequence.
enum Watchdog {
    /// Past `limit`, SIGKILLs touchd, prints its output and exits 1. Exiting closes /dev/uinput, which removes the
    /// driver's devices; no other thread's state is touched.
    static func start(limit: Microseconds) {
        let deadline = monotonicNow() + limit
        startThread("watchdog") {
            sleep(until: deadline)
            guard !runFinished.load(ordering: .relaxed) else { return }
            Console.line("FAIL global-deadline: the run took longer than \(seconds(limit)); killing touchd")
            let pid = runningDaemonPID.load(ordering: .relaxed)
            if pid > 0 { kill(pid, SIGKILL) }
            currentDaemon.withLock { $0?.printTail(100) }
            Console.line("touchd-e2e: failed: global deadline")
            _exit(1)
        }
    }

    /// SIGINT, SIGTERM or SIGHUP to the driver (a harness timeout, Ctrl-C) SIGKILLs touchd before the driver dies.
    /// Only async-signal-safe calls: an atomic load, kill(2), _exit(2).
    static func installSignalHandlers() {
        for number in [SIGINT, SIGTERM, SIGHUP] {
            signal(number) { number in
                let pid = runningDaemonPID.load(ordering: .relaxed)
                if pid > 0 { kill(pid, SIGKILL) }
                _exit(128 + number)
            }
        }
        // A socket the driver writes to (self-test clients) may be closed by its peer: an error, not a death.
        signal(SIGPIPE, SIG_IGN)
    }
}
