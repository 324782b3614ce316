import Foundation
import Glibc
import Synchronization

/// Microseconds of CLOCK_MONOTONIC: the clock libinput stamps its events with, so the driver's write and arrival
/// times and the daemon's `time_us` can be subtracted from each other.
typealias Microseconds = UInt64

/// Time limits. The guest runs under TCG emulation, about ten times slower than the build machine, so every limit is
/// generous; a wait that expires is a failed check, never a hang.
enum Limits {
    /// `TOUCHD_E2E_TIME_SCALE=N` (1…100) multiplies the readiness and stop limits: for a touchd run under a profiler
    /// (valgrind, for instance), which starts and stops many times slower.
    static let scale: Microseconds = {
        guard let text = getenv("TOUCHD_E2E_TIME_SCALE").map({ String(cString: $0) }), let value = UInt64(text),
            (1...100).contains(value)
        else { return 1 }
        return value
    }()
    /// For the daemon to say READY=1 or to report a device change on the notify socket.
    static let readiness: Microseconds = 15_000_000 * scale
    /// For one expected message on the socket target.
    static let message: Microseconds = 5_000_000
    /// Silence that must follow a gesture's last expected message before "nothing else arrived" counts.
    static let quiet: Microseconds = 500_000
    /// The longest a quiet period may be pushed back by messages that keep arriving.
    static let quietCeiling: Microseconds = 5_000_000
    /// For STOPPING=1 and the exit after SIGTERM.
    static let stop: Microseconds = 10_000_000 * scale
    /// The whole run; past it the watchdog kills touchd and the driver fails.
    static let global: Microseconds = 240_000_000
    /// Between a lift and the next touch-down on the same control outside the latency run: longer than the
    /// 350 ms touchDownRepeat window the config sets, so no step gets touchDownRepeat by accident.
    static let repeatGuard: Microseconds = 400_000
}

/// The current CLOCK_MONOTONIC time in microseconds.
func monotonicNow() -> Microseconds {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Microseconds(now.tv_sec) * 1_000_000 + Microseconds(now.tv_nsec) / 1000
}

/// Sleeps for `microseconds` (resuming after signals).
func sleep(microseconds: Microseconds) {
    sleep(until: monotonicNow() + microseconds)
}

/// Sleeps until CLOCK_MONOTONIC reaches `deadline`, with an absolute deadline so a schedule does not drift.
func sleep(until deadline: Microseconds) {
    var target = timespec(tv_sec: Int(deadline / 1_000_000), tv_nsec: Int(deadline % 1_000_000) * 1000)
    while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &target, nil) == EINTR {}
}

/// Polls `probe` every millisecond until it returns a value or `deadline` passes. Waiting this way keeps the
/// listeners simple (no condition variables); arrival times are taken by the reader threads, not here, so the
/// polling interval does not affect any measurement.
func poll<T>(until deadline: Microseconds, _ probe: () throws -> T?) rethrows -> T? {
    while true {
        if let value = try probe() { return value }
        if monotonicNow() >= deadline { return nil }
        sleep(microseconds: 1000)
    }
}

/// `strerror` for an errno value.
func describe(errno code: Int32) -> String {
    String(cString: strerror(code))
}

/// How the threads that stamp arrivals (a socket target's reader, a daemon's output reader) are scheduled. The latency
/// comparison (ScenarioLatency.swift) sets ``realtime`` before it starts any reader: each such thread then runs under
/// SCHED_FIFO, so that the message or line that wakes it is stamped at once, whichever reader sent it. Under the
/// normal policy, in the one-vCPU guest, whether the woken thread preempted the sender depended on which of the two had
/// run more lately, so one reader's work after its send delayed its stamp and another's did not. The threads only read, stamp and split lines, and block in `read` otherwise.
enum StampingThreads {
    static let realtime = Atomic<Bool>(false)

    /// Called by a stamping thread as it starts.
    static func prepareCurrentThread() {
        guard realtime.load(ordering: .relaxed) else { return }
        var parameters = sched_param(sched_priority: 1)
        if sched_setscheduler(0, Int32(SCHED_FIFO), &parameters) != 0 {
            Console.line("touchd-e2e: cannot run a stamping thread under SCHED_FIFO: \(describe(errno: errno))")
        }
    }
}

/// Starts a detached thread. Listeners and the output reader block in poll(2) and read(2), so they get threads of
/// their own rather than tasks of the cooperative pool.
func startThread(_ name: String, _ body: @escaping @Sendable () -> Void) {
    let thread = Thread(block: body)
    thread.name = name
    thread.start()
}

/// Writes whole lines to standard output with one write(2) each, so lines from the reader threads (in --verbose
/// mode) and the checks never interleave, and nothing waits in a buffer when the process is killed.
enum Console {
    static func line(_ text: String) {
        var bytes = Array((text + "\n").utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeMutableBytes { buffer in
                write(1, buffer.baseAddress! + offset, buffer.count - offset)
            }
            if written < 0 {
                if errno == EINTR { continue }
                return
            }
            offset += written
        }
        bytes.removeAll()
    }
}

/// A private directory for the sockets and the config, short enough for AF_UNIX paths (at most 107 bytes).
final class ScratchDirectory: Sendable {
    let path: String

    init() throws(DriverError) {
        var template = Array("/tmp/e2e-XXXXXX".utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw DriverError("mkdtemp /tmp/e2e-XXXXXX: \(describe(errno: errno))")
        }
        path = String(cString: made)
    }

    func file(_ name: String) -> String { path + "/" + name }

    /// Removes the files the driver made and the directory itself.
    func remove() {
        if let names = try? FileManager.default.contentsOfDirectory(atPath: path) {
            for name in names { unlink(file(name)) }
        }
        rmdir(path)
    }
}

/// A failure of the driver's own machinery (a socket that cannot be bound, a device that cannot be created).
struct DriverError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Writes `text` to `path`, replacing the file.
func writeFile(_ path: String, _ text: String) throws(DriverError) {
    do {
        try text.write(toFile: path, atomically: false, encoding: .utf8)
    } catch {
        throw DriverError("cannot write \(path): \(error)")
    }
}

/// What a process's threads have had of the CPUs, from /proc/PID/task/*/schedstat (the scheduler's own account, to
/// the nanosecond, where utime and stime count clock ticks): the time on a CPU and the number of times a thread was
/// put on one (about one per wake-up). Threads that ended are not counted: read it around work done by threads that
/// stay. Nil when the process is gone.
struct ProcessRunTime {
    var nanoseconds: UInt64 = 0
    var timeslices: UInt64 = 0

    init?(pid: pid_t) {
        guard let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task") else { return nil }
        for task in tasks {
            guard let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/schedstat", encoding: .utf8)
            else { continue }
            let fields = text.split(whereSeparator: { $0 == " " || $0 == "\n" })
            guard fields.count >= 3, let run = UInt64(fields[0]), let slices = UInt64(fields[2]) else { continue }
            nanoseconds &+= run
            timeslices &+= slices
        }
    }
}

/// The fields of /proc/PID/stat the fault checks read: the process's state (`R`, `S`, `T` stopped, `Z` zombie, …)
/// and the CPU time it has used (utime + stime, all its threads).
struct ProcessStat: Equatable {
    let state: Character
    /// User and system CPU time, in microseconds.
    let userTime: Microseconds
    let systemTime: Microseconds

    var cpuTime: Microseconds { userTime + systemTime }

    /// Reads /proc/`pid`/stat; nil when the process is gone (or was reaped).
    init?(pid: pid_t) {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return nil }
        self.init(statLine: text)
    }

    /// Parses a stat line. The command name (field 2) is in parentheses and may hold spaces and parentheses itself,
    /// so the fields are counted from the last `)`.
    init?(statLine text: String) {
        guard let close = text.lastIndex(of: ")") else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        // fields[0] is field 3 (state); utime and stime are fields 14 and 15, in clock ticks.
        guard fields.count > 12, let state = fields[0].first, let user = UInt64(fields[11]),
            let system = UInt64(fields[12])
        else { return nil }
        let ticks = UInt64(max(sysconf(Int32(_SC_CLK_TCK)), 1))
        self.state = state
        userTime = user * 1_000_000 / ticks
        systemTime = system * 1_000_000 / ticks
    }
}

extension String {
    /// The string with the first occurrence of `target` replaced (unchanged when there is none).
    func replacingFirst(_ target: String, with replacement: String) -> String {
        guard let range = range(of: target) else { return self }
        return replacingCharacters(in: range, with: replacement)
    }
}
