import CLinux
import Glibc

/// The input thread's send, made under SCHED_IDLE, so that the target it wakes runs at once on the input thread's own
/// CPU. Off unless `touchd run --yield-on-send` asks for it (docs/performance.md says what it costs).
///
/// A message on a Unix socket wakes the target's reader with a "sync" wake-up. Linux then puts the reader on the
/// sender's CPU only if that CPU counts as idle; otherwise on the CPU it last ran on, when that one idles, which is a
/// wake-up across CPUs (an inter-processor interrupt; on a real machine a core coming out of its sleep state, in the
/// two-vCPU test guest 1–2 ms). A CPU whose running thread is SCHED_IDLE counts as idle, and any woken thread preempts
/// a SCHED_IDLE one. So, for the send only, the input thread goes to SCHED_IDLE: the reader is put on its CPU and runs
/// as soon as the send returns; then the input thread comes back to SCHED_OTHER and does the rest of its wake-up (the
/// frame handled, the next plans) at its own priority. Only that one call runs under SCHED_IDLE: should the target keep
/// the CPU busy, the input thread waits as a SCHED_IDLE thread until the scheduler gives it its turn or an idle CPU
/// takes it, and is back at its own priority with the next thing it does.
///
/// The two calls cost about 50 µs a send in the one-vCPU test guest, where there is no other CPU to wake: the yield is
/// used only when the input thread may run on more than one CPU.
///
/// Coming back from SCHED_IDLE needs CAP_SYS_NICE or an RLIMIT_NICE that allows the thread's nice value: the shipped
/// unit sets `LimitNICE=+0` and lets `sched_setscheduler` through its system call filter. ``probe()`` tries both steps
/// once, on a thread of its own, before the input loop relies on them: a thread that could go but not come back would
/// stay SCHED_IDLE.
struct SendYield {
    enum State: Equatable {
        /// The input thread sends under SCHED_IDLE.
        case on
        /// It could, but there is no other CPU for a target to be woken on.
        case notNeeded(String)
        /// Off: the default, or `touchd run --no-yield-on-send`.
        case turnedOff
        /// It cannot (the probe failed, or the thread runs under another policy than SCHED_OTHER), or it stopped after
        /// failing to come back.
        case unavailable(String)
    }

    private(set) var state: State

    var isOn: Bool { state == .on }

    /// For the thread that will send (the input loop's): its policy, the probe, and the CPUs it may run on.
    static func forCallingThread() -> SendYield {
        let policy = touchd_scheduling_policy()
        guard policy == 0 else {
            let reason =
                policy < 0
                ? "sched_getscheduler: \(String(cString: strerror(errno)))"
                : "the input thread runs under scheduling policy \(policy), not SCHED_OTHER"
            return SendYield(state: .unavailable(reason))
        }
        if let problem = probe() { return SendYield(state: .unavailable(problem)) }
        let cpus = touchd_allowed_cpu_count()
        guard cpus > 1 else {
            return SendYield(state: .notNeeded(cpus == 1 ? "it may run on one CPU only" : "its CPUs are unknown"))
        }
        return SendYield(state: .on)
    }

    /// Off: the default (`touchd run` without `--yield-on-send`), and the input loop before it starts.
    static let off = SendYield(state: .turnedOff)

    /// Whether a thread of this process can go to SCHED_IDLE and come back: nil if so, else what failed.
    static func probe() -> String? {
        var step: Int32 = 0
        let error = touchd_probe_idle_policy(&step)
        guard error != 0 else { return nil }
        let text = String(cString: strerror(error))
        switch step {
        case 0: return "cannot start a thread to try SCHED_IDLE: \(text)"
        case 1: return "sched_setscheduler(SCHED_IDLE): \(text)"
        default:
            return "sched_setscheduler(SCHED_OTHER) after SCHED_IDLE: \(text) (coming back needs CAP_SYS_NICE or "
                + "LimitNICE=+0)"
        }
    }

    /// Before a send that wakes a target: the calling thread to SCHED_IDLE. True if it went (then ``restore()`` must
    /// follow the send).
    @inline(__always)
    func lower() -> Bool {
        isOn && touchd_set_idle_policy(1) == 0
    }

    /// After the send: the calling thread back to SCHED_OTHER. Nil, or the error if it could not come back, after
    /// which the caller turns the yield off (``turnOff(because:)``) and reports it.
    @inline(__always)
    func restore() -> SystemCallError? {
        touchd_set_idle_policy(0) == 0 ? nil : SystemCallError(call: "sched_setscheduler", errno: errno)
    }

    mutating func turnOff(because reason: String) {
        state = .unavailable(reason)
    }
}
