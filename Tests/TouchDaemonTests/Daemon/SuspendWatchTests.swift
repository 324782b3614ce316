import Testing

@testable import TouchDaemon

/// Fault-cases.md P1: a suspend shows as CLOCK_BOOTTIME moving ahead of CLOCK_MONOTONIC between two wake-ups.
@Suite("Suspend watch")
struct SuspendWatchTests {
    @Test("the first check only learns the offset; a jump of at least the threshold is a suspend, once")
    func detectsAJump() {
        var watch = SuspendWatch()
        #expect(watch.check(monotonic: 1_000_000, boottime: 5_000_000) == nil)
        // Both clocks moved together: no suspend.
        #expect(watch.check(monotonic: 2_000_000, boottime: 6_000_000) == nil)
        // BOOTTIME moved 30 s more than MONOTONIC: the system slept 30 s.
        #expect(watch.check(monotonic: 2_100_000, boottime: 36_100_000) == 30_000_000)
        // Reported once: the next wake-up sees the new offset.
        #expect(watch.check(monotonic: 2_200_000, boottime: 36_200_000) == nil)
    }

    @Test("drift below the threshold is not a suspend, and never accumulates into one")
    func ignoresSmallDrift() {
        var watch = SuspendWatch()
        var monotonic: UInt64 = 0
        var boottime: UInt64 = 0
        _ = watch.check(monotonic: monotonic, boottime: boottime)
        for _ in 0..<100 {
            monotonic += 1_000_000
            boottime += 1_000_000 + SuspendWatch.threshold - 1
            #expect(watch.check(monotonic: monotonic, boottime: boottime) == nil)
        }
        boottime += SuspendWatch.threshold
        #expect(watch.check(monotonic: monotonic, boottime: boottime) == SuspendWatch.threshold)
    }

    @Test("a BOOTTIME behind MONOTONIC (no kernel does this) neither traps nor reports")
    func clocksOutOfOrder() {
        var watch = SuspendWatch()
        #expect(watch.check(monotonic: 10, boottime: 5) == nil)
        #expect(watch.check(monotonic: .max, boottime: 0) == nil)
        #expect(watch.check(monotonic: 0, boottime: .max) == .max)
    }
}
