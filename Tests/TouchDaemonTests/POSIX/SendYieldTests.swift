import CLinux
import Glibc
import Testing

@testable import TouchDaemon

/// The input thread's send under SCHED_IDLE (SendYield.swift): what the probe says holds on the thread that asks, the
/// thread always comes back to SCHED_OTHER, and nothing changes when the yield is off. Each case runs on a thread of its
/// own, which ends with it, so the test runner's threads keep their policy whatever happens.
@Suite("The input thread's yield to the target it wakes")
struct SendYieldTests {
    /// The calling thread's policy: SCHED_OTHER 0, SCHED_BATCH 3, SCHED_IDLE 5.
    static func policy() -> Int32 { touchd_scheduling_policy() }

    @Test func whatTheProbeSaysHoldsOnTheThread() {
        // 0: as the probe said; otherwise the step that went wrong.
        let result = runOnDedicatedThread(name: "yield-test") {
            guard Self.policy() == 0 else { return 1 }
            let yield = SendYield.forCallingThread()
            switch yield.state {
            case .on:
                guard SendYield.probe() == nil, touchd_allowed_cpu_count() > 1 else { return 2 }
            case .notNeeded(let reason):
                // It could, but the test runs on one CPU: it says so and changes nothing.
                guard SendYield.probe() == nil, touchd_allowed_cpu_count() <= 1, !reason.isEmpty else { return 3 }
                guard !yield.lower(), Self.policy() == 0 else { return 4 }
                return 0
            case .unavailable(let reason):
                // It cannot (an unprivileged test run with RLIMIT_NICE 0): it says why and changes nothing.
                guard SendYield.probe() == reason, !yield.lower(), Self.policy() == 0 else { return 4 }
                return 0
            case .turnedOff:
                // Only the flag turns it off.
                return 7
            }
            for _ in 0..<3 {
                guard yield.lower(), Self.policy() == 5 else { return 5 }
                guard yield.restore() == nil, Self.policy() == 0 else { return 6 }
            }
            return 0
        }
        #expect(result == 0)
    }

    @Test func offNeverChangesThePolicy() {
        let result = runOnDedicatedThread(name: "yield-test") {
            let yield = SendYield.off
            guard !yield.isOn, yield.state == .turnedOff else { return 1 }
            guard !yield.lower(), Self.policy() == 0 else { return 2 }
            return 0
        }
        #expect(result == 0)
    }

    @Test func aThreadUnderAnotherPolicyKeepsIt() {
        let result = runOnDedicatedThread(name: "yield-test") {
            var parameters = sched_param(sched_priority: 0)
            // SCHED_BATCH, which any thread may take.
            guard sched_setscheduler(0, 3, &parameters) == 0 else { return 1 }
            let yield = SendYield.forCallingThread()
            guard case .unavailable(let reason) = yield.state, reason.contains("policy 3") else { return 2 }
            guard !yield.lower(), Self.policy() == 3 else { return 3 }
            return 0
        }
        #expect(result == 0)
    }

    @Test func turnedOffAfterAFailedReturnItStopsLowering() {
        let result = runOnDedicatedThread(name: "yield-test") {
            var yield = SendYield.forCallingThread()
            yield.turnOff(because: "sched_setscheduler: Operation not permitted")
            guard yield.state == .unavailable("sched_setscheduler: Operation not permitted") else { return 1 }
            guard !yield.lower(), Self.policy() == 0 else { return 2 }
            return 0
        }
        #expect(result == 0)
    }
}

/// The yield is off by default (no priority games unless asked for); `--yield-on-send` turns it on and
/// `--no-yield-on-send` says the default.
@Suite("touchd run's yield flag")
struct SendYieldFlagTests {
    @Test func offByDefaultAndOnWithTheFlag() throws {
        let plain = try #require(try Touchd.parseAsRoot(["run"]) as? Run)
        #expect(!plain.yieldOnSend)
        let on = try #require(try Touchd.parseAsRoot(["run", "--yield-on-send"]) as? Run)
        #expect(on.yieldOnSend)
        let off = try #require(try Touchd.parseAsRoot(["run", "--no-yield-on-send"]) as? Run)
        #expect(!off.yieldOnSend)
    }
}
