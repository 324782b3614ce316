// Rate limits with time passed in (monotonic microseconds): one for log lines, one for actions and requests.

/// Lets a repeating message through `burst` times per `interval`, then counts what it suppressed, the way libinput
/// rate-limits its own warnings. Time is passed in (microseconds, monotonic).
struct RateLimit: Sendable {
    enum Verdict: Equatable, Sendable {
        /// Log it. `suppressed` messages were dropped since the last one that got through.
        case pass(suppressed: Int)
        /// Drop it.
        case suppress
    }

    let burst: Int
    let interval: UInt64
    private var windowStart: UInt64?
    private var passed = 0
    private var suppressed = 0

    init(burst: Int = 5, intervalMicroseconds: UInt64 = 30_000_000) {
        self.burst = burst
        self.interval = intervalMicroseconds
    }

    mutating func check(now: UInt64) -> Verdict {
        if let start = windowStart, now >= start, now - start < interval {
            guard passed < burst else {
                suppressed += 1
                return .suppress
            }
            passed += 1
            return .pass(suppressed: 0)
        }
        windowStart = now
        passed = 1
        defer { suppressed = 0 }
        return .pass(suppressed: suppressed)
    }
}

/// A rate limit in the generic cell rate algorithm's form: on average one event per `interval`, bursts of up to
/// `burst`. One number of state, no floating point.
struct TokenBucket: Hashable, Sendable {
    let burst: Int
    let interval: UInt64
    /// The time at which the bucket would be full again ("theoretical arrival time").
    private var full: UInt64 = 0

    init(burst: Int, interval: UInt64) {
        self.burst = burst
        self.interval = interval
    }

    /// Takes a token at `now` if one is left.
    mutating func take(now: UInt64) -> Bool {
        let allowance = UInt64(burst).multipliedReportingOverflow(by: interval)
        let span = allowance.overflow ? UInt64.max : allowance.partialValue
        let base = max(full, now)
        // Full again more than `burst` intervals from now: no token left.
        guard base.saturatingSubtract(now) + interval <= span else { return false }
        full = base.saturatingSum(interval)
        return true
    }
}
