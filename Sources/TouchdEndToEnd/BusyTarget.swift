import Glibc
import Synchronization

/// What the busy-target checks share (`--busy-target`, ScenarioBusyTarget.swift, for the next tap's action; `--filter`,
/// ScenarioFilter.swift, for the next touch forwarded to the application): a loaded kiosk, and the verdict.
///
/// The situation: the application keeps one of the guest's two CPUs busy (an animation: ``CPULoad``), and the socket
/// target that receives a button's action works for ``work`` right after each message it reads
/// (``TargetListener/work``). The next touch comes ``nextTouchAfter`` after the target read that action, while it still
/// works. Nothing on touchd's path may wait for that work: neither the next touch's action to another, idle target,
/// nor the next touch forwarded to the application.
///
/// Each pair taps the button, and the target's own reader thread writes the next touch's touch-down
/// ``nextTouchAfter`` into its work (a ``TargetListener/Interlude``): that thread is on a CPU at that moment by
/// definition, so the touch comes on time however slowly the guest wakes the driver's other threads (which, while the
/// build machine was loaded, missed the target's 20 ms in half the pairs). With the target busy it then works on to
/// ``work``; with it idle it does not work at all: its reader sleeps until it writes the next touch, and reads again.
/// Busy and idle pairs alternate, and the next touch's latency is compared.
enum BusyTarget {
    /// The busy target's work after each message it reads.
    static let work: Microseconds = 20_000
    /// When the next touch is written: this long after the target read the button's action.
    static let nextTouchAfter: Microseconds = 5_000
    /// What the busy median may exceed the idle one by, besides the idle median itself (``Comparison/bound``): a
    /// target just woken is owed up to half of the scheduler's period, 6 ms of the 12 ms in the two-vCPU guest
    /// (sched_latency, 6 ms scaled for two CPUs), by which it may run ahead of a path that lands behind it on its CPU;
    /// and a wake-up across vCPUs, which the emulator holds 0.8–1.6 ms (docs/performance.md), may come where it did
    /// not with a CPU idle: 8 ms in all.
    ///
    /// Why this bound: the next touch is written 5 ms into the target's 20 ms of work, so a path that waits for that
    /// work to end delivers it up to 15 ms later than with the target idle, whatever the path's own length. A path
    /// that does not wait still pays for the CPU the target takes: with one CPU kept busy by the load, the target's
    /// work leaves it no idle CPU, so each of its wake-ups preempts a spinning thread, or lands behind the freshly
    /// woken target and waits for its due, and when it needs the CPU for longer than a slice it shares it. Sharing can
    /// at most double a path that needs the CPU throughout: hence the idle median plus ``slack``. A release build's
    /// path (idle median 1–3 ms) is judged within 9–11 ms, below the 15 ms of a wait; a debug build's, whose path is
    /// several times longer, within its idle median and 8 ms: sharp while that median is under about 7 ms (on an
    /// unloaded machine), and then only gross waits are caught. Measured in the test guest (two vCPUs, 20 pairs each,
    /// the build machine loaded 0.5–2 over its two cores), medians idle → busy:
    ///
    /// | touchd | next tap's action | next forwarded touch |
    /// | --- | --- | --- |
    /// | static release build | 1.0 → 1.5 ms | 2.1 → 2.1 ms |
    /// | the same, `--yield-on-send` | 1.3 → 16.0 ms | 2.9 → 16.0 ms |
    /// | debug build | 8.3 → 18.0 ms | 4.1 → 9.0 ms |
    /// | the same, `--yield-on-send` | 10.5 → 28.0 ms | 5.9 → 21.1 ms |
    ///
    /// The debug build's extra with the target busy is CPU sharing, not a wait: without the load (the other CPU
    /// free) the same debug build measured 3.6 → 5.2 and 6.7 → 7.0 ms. The emulator adds its own share: each vCPU
    /// that spins takes a core of the build machine, so on a machine busy with other work the busy pairs, with two
    /// spinning vCPUs, lose more to it than the idle ones.
    static let slack: Microseconds = 8_000
    /// Pairs with the target idle, and as many with it busy: the two alternate pair by pair, idle first, so that a
    /// change in the guest's speed over the run (the build machine is shared) touches both alike.
    static let pairsEach = 20
    /// The load starts this long before the button's touch-down, so that it runs when the pair begins.
    static let loadLead: Microseconds = 20_000
    /// Between one pair and the next: the target's work is long over, the last lift is outside the 350 ms
    /// touchDownRepeat window, and touchd has gone back to sleep.
    static let settle: Microseconds = 400_000

    /// One pair's touches. The button at `button` sends `action` to `target` on its touchUpInside; the next touch
    /// goes down at `nextTouch`. `watch`, called before the button is tapped, takes its cursors and returns a wait
    /// for the next touch where it is measured (the idle target's message, debug-events' line from the twin) that
    /// gives its arrival, nil if it never came.
    struct Pairs {
        var target: TargetListener
        var panel: VirtualTouchscreen
        var button: (x: Int, y: Int)
        var action: String
        var nextTouch: (x: Int, y: Int)
        var watch: () -> () -> Microseconds?
    }

    /// Runs one pair as a warm-up (connections made, pages touched; not counted), then ``pairsEach`` busy and idle
    /// pairs in turn, with one CPU kept busy during each pair (from ``loadLead`` before the button until the next touch
    /// arrived): the load runs when it matters, and the emulator, which needs a core of the build machine for each
    /// vCPU that spins, does not add more of its own delays to every wake-up of the run. The target is left idle.
    static func compare(_ pairs: Pairs) throws(Abort) -> Comparison {
        var comparison = Comparison()
        let load = try attempt { () throws(DriverError) in try CPULoad() }
        defer {
            load.stop()
            pairs.target.work = 0
            pairs.target.interlude = nil
        }
        for pair in -1..<(2 * pairsEach) {
            defer { sleep(microseconds: settle) }
            let busy = pair % 2 == 1
            pairs.target.work = busy ? work : 0
            let writer = NextTouchWriter(panel: pairs.panel, at: pairs.nextTouch)
            pairs.target.interlude = TargetListener.Interlude(
                after: nextTouchAfter, matches: { [action = pairs.action] in $0.action == action },
                body: { writer.write() })
            load.run()
            sleep(microseconds: loadLead)
            let wait = pairs.watch()
            let cursor = pairs.target.inbox.count
            try attempt { () throws(DriverError) in
                try pairs.panel.write([.down(slot: 0, x: pairs.button.x, y: pairs.button.y)])
                sleep(microseconds: 50_000)
                try pairs.panel.write([.up(slot: 0)])
            }
            writer.release()
            let read = poll(until: monotonicNow() + Limits.message) {
                pairs.target.inbox.first(from: cursor) { $0.action == pairs.action }
            }
            guard let arrival = read?.element.arrival else {
                load.pause()
                // The reader may have taken the interlude just now: the panel is the scenario's again only after it.
                if !pairs.target.cancelInterlude() {
                    guard writer.finished(within: 1_000_000) else { throw Abort("the target's reader never let go") }
                }
                comparison.missing.append("the button's action never reached the target (\(busy ? "busy" : "idle"))")
                if writer.written != nil {
                    _ = try attempt { () throws(DriverError) in try pairs.panel.write([.up(slot: 0)]) }
                }
                continue
            }
            guard writer.finished(within: Limits.message) else { throw Abort("the target's reader never let go") }
            guard let written = writer.written else {
                load.pause()
                throw Abort("the target's reader could not write the next touch: \(writer.problem ?? "?")")
            }
            let arrived = wait()
            load.pause()
            sleep(microseconds: 30_000)
            _ = try attempt { () throws(DriverError) in try pairs.panel.write([.up(slot: 0)]) }
            guard let arrived else {
                comparison.missing.append("the next touch never arrived (target \(busy ? "busy" : "idle"))")
                continue
            }
            if pair < 0 { continue }
            let latency = Int64(arrived) - Int64(written.beforeReport)
            if busy {
                comparison.busy.append(latency)
                if written.beforeReport < arrival + work { comparison.duringWork += 1 }
            } else {
                comparison.idle.append(latency)
            }
        }
        return comparison
    }

    /// The next touch's latencies with the target idle and busy.
    struct Comparison {
        var idle: [Int64] = []
        var busy: [Int64] = []
        /// Busy pairs whose next touch was written while the target still worked: the pairs that test anything.
        var duringWork = 0
        /// What did not arrive, one entry per pair.
        var missing: [String] = []

        /// What the busy target's median may exceed the idle one's by: the idle median (the CPU share a path may
        /// lose to the target's work) and ``BusyTarget/slack``.
        var bound: Int64 {
            (Percentiles(idle)?.p50 ?? 0) + Int64(BusyTarget.slack)
        }

        /// Nil when the busy target's median is at most ``bound`` above the idle one's, with every pair complete and
        /// most next touches written while the target worked; else why not. `what` names the next touch's measure
        /// ("the next tap's action").
        func failure(_ what: String) -> String? {
            var failures: [String] = []
            if !missing.isEmpty {
                failures.append("\(missing.count) pair(s) incomplete: \(missing.prefix(3).joined(separator: "; "))")
            }
            guard let idle = Percentiles(idle), let busy = Percentiles(busy) else {
                return (failures + ["no samples to compare"]).joined(separator: "; ")
            }
            if duringWork * 2 < busy.samples {
                failures.append(
                    "only \(duringWork) of \(busy.samples) next touches were written while the target still worked: "
                        + "the sequence tested nothing")
            }
            let difference = busy.p50 - idle.p50
            if difference > bound {
                failures.append(
                    "\(what) waited behind the busy target: median \(busy.p50) µs with it busy against \(idle.p50) µs "
                        + "idle, \(difference) µs later (bound \(bound) µs; a wait for its \(BusyTarget.work / 1000) "
                        + "ms of work costs up to \((BusyTarget.work - nextTouchAfter) / 1000) ms)")
            }
            return failures.isEmpty ? nil : failures.joined(separator: "; ")
        }

        /// `busy-target: check=NAME idle_p50_us=… idle_p99_us=… busy_p50_us=… busy_p99_us=… difference_p50_us=…
        /// bound_us=… idle_samples=… busy_samples=… during_work=…` (p99 nearest-rank: of 20 samples, the largest).
        func line(check: String) -> String {
            let idle = Percentiles(idle)
            let busy = Percentiles(busy)
            func figure(_ value: Int64?) -> String { value.map(String.init) ?? "n/a" }
            let difference = idle.flatMap { idle in busy.map { $0.p50 - idle.p50 } }
            return "busy-target: check=\(check) idle_p50_us=\(figure(idle?.p50)) idle_p99_us=\(figure(idle?.p99)) "
                + "busy_p50_us=\(figure(busy?.p50)) busy_p99_us=\(figure(busy?.p99)) "
                + "difference_p50_us=\(figure(difference)) bound_us=\(bound) "
                + "idle_samples=\(self.idle.count) busy_samples=\(self.busy.count) during_work=\(duringWork)"
        }
    }

    private static func attempt<T>(_ body: () throws(DriverError) -> T) throws(Abort) -> T {
        do {
            return try body()
        } catch {
            throw Abort(error.description)
        }
    }
}

/// The next touch's touch-down, written by the target's reader thread (``TargetListener/Interlude``) while the
/// scenario's thread waits. The panel is the scenario's otherwise (``VirtualTouchscreen`` is used from one thread at a
/// time): the reader writes only after ``release()``, which the scenario calls once its own last write returned, and
/// the scenario uses the panel again only after ``finished(within:)``.
final class NextTouchWriter: @unchecked Sendable {
    private let panel: VirtualTouchscreen
    private let point: (x: Int, y: Int)
    private let released = Atomic<Bool>(false)
    private let done = Atomic<Bool>(false)
    private let outcome = Mutex<(timing: FrameTiming?, problem: String?)>((nil, nil))

    init(panel: VirtualTouchscreen, at point: (x: Int, y: Int)) {
        self.panel = panel
        self.point = point
    }

    /// The scenario is done with the panel until ``finished(within:)``.
    func release() { released.store(true, ordering: .releasing) }

    /// On the reader's thread: waits (spinning, as the target works anyway) for ``release()``, at most a second,
    /// then writes the touch-down.
    func write() {
        defer { done.store(true, ordering: .releasing) }
        let deadline = monotonicNow() + 1_000_000
        while !released.load(ordering: .acquiring) {
            guard monotonicNow() < deadline else {
                outcome.withLock { $0.problem = "the scenario did not let go of the panel" }
                return
            }
        }
        do {
            let timing = try panel.write([.down(slot: 0, x: point.x, y: point.y)])
            outcome.withLock { $0.timing = timing }
        } catch {
            outcome.withLock { $0.problem = error.description }
        }
    }

    /// Whether the reader is done with the panel (or never took the interlude) within `limit`: it has written, or
    /// given up.
    func finished(within limit: Microseconds) -> Bool {
        poll(until: monotonicNow() + limit) { done.load(ordering: .acquiring) ? true : nil } != nil
    }

    var written: FrameTiming? { outcome.withLock { $0.timing } }
    var problem: String? { outcome.withLock { $0.problem } }
}

/// Work that keeps a CPU busy: arithmetic, with a look at the clock only every half millisecond or so. A loop that
/// read CLOCK_MONOTONIC on every turn would not load the test guest as an application does: the guest's clock source
/// is the emulated HPET (the TSC is marked unstable there), so each read is a system call and an emulated device
/// access, which in QEMU takes the lock that every vCPU's device accesses and interrupts go through.
enum CPUWork {
    /// Turns of ``turns(_:)`` that take about half a millisecond on this machine, measured once, on first use.
    static let turnsPerStep: Int = {
        let probe = 200_000
        let start = monotonicNow()
        turns(probe)
        let elapsed = max(monotonicNow() - start, 1)
        return max(1000, Int(UInt64(probe) * 500 / elapsed))
    }()

    /// Spins until CLOCK_MONOTONIC reaches `deadline` (overshooting by at most a step).
    static func spin(until deadline: Microseconds) {
        let step = turnsPerStep
        while monotonicNow() < deadline { turns(step) }
    }

    /// `count` turns of a little arithmetic whose result is kept, so that no optimiser drops the loop.
    static func turns(_ count: Int) {
        var value = sink.load(ordering: .relaxed) | 1
        for _ in 0..<count { value = value &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407 }
        sink.store(value, ordering: .relaxed)
    }

    private static let sink = Atomic<UInt64>(0)
}

/// One thread of the driver that keeps a CPU busy while asked to (``run()`` … ``pause()``), as a kiosk application's
/// animation keeps one, and sleeps in `read(2)` otherwise. An ordinary (SCHED_OTHER) thread in the driver's session, so
/// touchd and the readers compete with it as they would with the application.
final class CPULoad: Sendable {
    private let running = Atomic<Bool>(false)
    private let stopped = Atomic<Bool>(false)
    private let ended = Atomic<Bool>(false)
    private let wakeRead: Int32
    private let wakeWrite: Int32

    init() throws(DriverError) {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw DriverError("pipe: \(describe(errno: errno))") }
        (wakeRead, wakeWrite) = (ends[0], ends[1])
        _ = fcntl(wakeRead, F_SETFD, FD_CLOEXEC)
        _ = fcntl(wakeWrite, F_SETFD, FD_CLOEXEC)
        let step = CPUWork.turnsPerStep
        startThread("cpu load") { [self] in
            var byte: UInt8 = 0
            while !stopped.load(ordering: .relaxed) {
                let got = Glibc.read(wakeRead, &byte, 1)
                if got < 0, errno == EINTR { continue }
                if got <= 0 { break }
                while running.load(ordering: .relaxed) { CPUWork.turns(step) }
            }
            ended.store(true, ordering: .releasing)
        }
    }

    /// Starts keeping a CPU busy (the thread is woken; it runs once the scheduler puts it on a CPU).
    func run() {
        running.store(true, ordering: .relaxed)
        var byte: UInt8 = 1
        _ = Glibc.write(wakeWrite, &byte, 1)
    }

    /// Stops keeping the CPU busy within a step of ``CPUWork``.
    func pause() {
        running.store(false, ordering: .relaxed)
    }

    /// Ends the thread, waits (at most a second) until it has, and closes the pipe.
    func stop() {
        stopped.store(true, ordering: .relaxed)
        running.store(false, ordering: .relaxed)
        close(wakeWrite)  // the thread's read returns 0
        _ = poll(until: monotonicNow() + 1_000_000) { ended.load(ordering: .acquiring) ? true : nil }
        close(wakeRead)
    }
}
