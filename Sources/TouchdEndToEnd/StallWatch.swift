import CLinux
import Foundation
import Glibc
import Synchronization

/// Watches whether the guest's vCPUs run at all. One thread per online CPU, pinned to it and under SCHED_FIFO at the
/// top priority, sleeps until a deadline 2 ms ahead, again and again. Nothing in the guest keeps such a thread off its
/// CPU once its timer fires, short of kernel code that runs long with interrupts off or without a preemption point; so
/// when it wakes `threshold` or more past its deadline, that vCPU ran no guest code for the time since its last
/// wake-up: the emulator did not run it (the host busy with other work; perhaps QEMU's own device work holding the lock
/// a vCPU needs, not shown). The guest's clock goes on meanwhile, and whatever was being timed in the guest looks
/// slower.
///
/// The speech check says beside each stop of the audio how much of it the guest stood still
/// (ScenarioSpeechTouch.swift); the figure is always the one measured, and a stop past its bound fails unless the time
/// the guest certainly stood still accounts for the excess (``judge(stop:stoodStill:bound:)``). On a quiet host the
/// watchers see stalls of about 30 ms in bursts while processes start (speech-dispatcher, touchd), and few otherwise;
/// with the host's two cores busy with other work, stalls of 10–100 ms throughout. It costs each vCPU a wake-up every
/// 2 ms, so the latency measurements do not run it.
final class StallWatch: @unchecked Sendable {
    /// A time a vCPU did not run: from its watcher's last wake-up to the late one (CLOCK_MONOTONIC, µs).
    struct Stall: Equatable, Sendable {
        let cpu: Int
        let from: UInt64
        let to: UInt64
        var length: UInt64 { to - from }
    }

    static let period: UInt64 = 2_000
    let threshold: UInt64
    let cpus: Int
    private let stalls = Mutex<[Stall]>([])
    private let running = Atomic<Bool>(false)
    /// Watchers that have ended: all of them until ``start()`` (so ``stop()`` before it returns at once).
    private let finished: Atomic<Int>
    /// Why a watcher could not be pinned or raised (then its CPU is not watched and ``watchingProblems`` says so).
    private let problems = Mutex<[String]>([])

    init(threshold: UInt64 = 10_000) {
        self.threshold = threshold
        cpus = max(1, sysconf(Int32(_SC_NPROCESSORS_ONLN)))
        finished = Atomic<Int>(cpus)
    }

    func start() {
        running.store(true, ordering: .relaxed)
        finished.store(0, ordering: .relaxed)
        for cpu in 0..<cpus {
            startThread("stall watch \(cpu)") { [self] in
                watch(cpu: cpu)
                finished.add(1, ordering: .relaxed)
            }
        }
    }

    func stop() {
        running.store(false, ordering: .relaxed)
        while finished.load(ordering: .relaxed) < cpus { usleep(1000) }
    }

    /// Empty when every CPU was watched; otherwise why not.
    var watchingProblems: [String] { problems.withLock { $0 } }

    var all: [Stall] { stalls.withLock { $0 } }

    private func watch(cpu: Int) {
        if touchd_pin_to_cpu(Int32(clamping: cpu)) != 0 {
            problems.withLock { $0.append("vCPU \(cpu): sched_setaffinity: \(describe(errno: errno))") }
            return
        }
        var parameters = sched_param(sched_priority: sched_get_priority_max(Int32(SCHED_FIFO)))
        if sched_setscheduler(0, Int32(SCHED_FIFO), &parameters) != 0 {
            problems.withLock { $0.append("vCPU \(cpu): SCHED_FIFO: \(describe(errno: errno))") }
            return
        }
        var last = monotonicNow()
        while running.load(ordering: .relaxed) {
            let deadline = last + Self.period
            var until = timespec(tv_sec: Int(deadline / 1_000_000), tv_nsec: Int(deadline % 1_000_000) * 1000)
            while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, nil) == EINTR {}
            let now = monotonicNow()
            if now >= deadline + threshold {
                stalls.withLock { $0.append(Stall(cpu: cpu, from: last, to: now)) }
            }
            last = now
        }
    }

    /// How much of `start..<end` some vCPU, and every vCPU at once, did not run (µs).
    func lost(from start: UInt64, to end: UInt64) -> (anyCPU: UInt64, everyCPU: UInt64) {
        Self.lost(in: all, cpus: cpus, from: start, to: end)
    }

    /// The same over given stalls: a sweep over their ends, clipped to the window, counting the stalled CPUs.
    static func lost(in stalls: [Stall], cpus: Int, from start: UInt64, to end: UInt64) -> (
        anyCPU: UInt64, everyCPU: UInt64
    ) {
        guard end > start else { return (0, 0) }
        var edges: [(time: UInt64, change: Int)] = []
        for stall in stalls where stall.to > start && stall.from < end {
            edges.append((max(stall.from, start), 1))
            edges.append((min(stall.to, end), -1))
        }
        // At one instant, ends before starts: two stalls that only touch never overlap.
        edges.sort { $0.time != $1.time ? $0.time < $1.time : $0.change < $1.change }
        var anyCPU: UInt64 = 0
        var everyCPU: UInt64 = 0
        var depth = 0
        var previous = start
        for edge in edges {
            let span = edge.time - previous
            if depth > 0 { anyCPU += span }
            if depth >= cpus { everyCPU += span }
            depth += edge.change
            previous = edge.time
        }
        return (anyCPU, everyCPU)
    }

    /// How a stop of the audio measured in the guest stands against its bound (the speech check's 100 ms).
    enum StopVerdict: Equatable {
        /// Within the bound.
        case within
        /// Past the bound, but within it once the time the guest stood still is left out: the emulator did not run
        /// the guest, and nothing in it (touchd, the server, its module, the sound card) could act meanwhile.
        case guestStoodStill
        /// Past the bound with the guest running: a real miss.
        case late
    }

    /// Judges `stop` (µs from the CANCEL to silence) against `bound`: within it, or past it only by time the guest
    /// stood still (``stoodStill(from:to:)``), or late.
    static func judge(stop: UInt64, stoodStill: UInt64, bound: UInt64) -> StopVerdict {
        if stop <= bound { return .within }
        return stop - min(stop, stoodStill) <= bound ? .guestStoodStill : .late
    }

    /// How much of `start..<end` some vCPU certainly stood still (µs): each stall without the ``period`` the watcher
    /// slept anyway, so the figure never exceeds what the emulator took. What ``judge(stop:stoodStill:bound:)``
    /// leaves out of a stop.
    func stoodStill(from start: UInt64, to end: UInt64) -> UInt64 {
        Self.stoodStill(in: all, cpus: cpus, from: start, to: end)
    }

    static func stoodStill(in stalls: [Stall], cpus: Int, from start: UInt64, to end: UInt64) -> UInt64 {
        let certain = stalls.compactMap { stall in
            stall.length > period ? Stall(cpu: stall.cpu, from: stall.from + period, to: stall.to) : nil
        }
        return lost(in: certain, cpus: cpus, from: start, to: end).anyCPU
    }

    /// One line for the report: how many stalls, the longest, the total per vCPU.
    func summary() -> String {
        let stalls = all
        var parts: [String] = []
        for cpu in 0..<cpus {
            let mine = stalls.filter { $0.cpu == cpu }
            let total = mine.reduce(UInt64(0)) { $0 + $1.length }
            let longest = mine.map(\.length).max() ?? 0
            parts.append(
                String(
                    format: "vCPU %d: %d, longest %.1f ms, %.1f ms in all", cpu, mine.count, Double(longest) / 1000,
                    Double(total) / 1000))
        }
        let problems = watchingProblems
        return "guest stalls (a watcher woke ≥ \(threshold / 1000) ms late): " + parts.joined(separator: "; ")
            + (problems.isEmpty ? "" : "; not watched: " + problems.joined(separator: ", "))
    }
}
