/// p50, p99 and the maximum of a set of samples (nearest-rank percentiles: the smallest sample with at least p % of
/// the samples at or below it, so every figure is a value that was measured).
struct Percentiles: Equatable, Sendable, CustomStringConvertible {
    let samples: Int
    let p50: Int64
    let p99: Int64
    let maximum: Int64

    init?(_ values: [Int64]) {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        samples = sorted.count
        p50 = Self.rank(50, in: sorted)
        p99 = Self.rank(99, in: sorted)
        maximum = sorted[sorted.count - 1]
    }

    /// The nearest-rank `percent`-th percentile of `sorted` (ascending, not empty).
    static func rank(_ percent: Int, in sorted: [Int64]) -> Int64 {
        let rank = (percent * sorted.count + 99) / 100  // ⌈percent × n / 100⌉, at least 1 for percent > 0
        return sorted[max(rank, 1) - 1]
    }

    var description: String { "samples=\(samples) p50=\(p50)µs p99=\(p99)µs max=\(maximum)µs" }
}

/// One frame of the latency run that should produce one message: a tap's touch-down (→ touchDown) or lift
/// (→ touchUpInside).
struct LatencyWrite: Sendable {
    let control: String
    let action: String
    let event: String
    /// Where the contact was, in output pixels (a lift is reported where the contact last was).
    let x: Int
    let y: Int
    let timing: FrameTiming
}

/// The latency run's writes paired with the messages they caused.
struct LatencyMatch {
    struct Pair {
        let write: LatencyWrite
        let message: TargetMessage

        /// From just before the SYN_REPORT write to the arrival on the target socket.
        var endToEnd: Int64 { Int64(message.arrival) - Int64(write.timing.beforeReport) }
        /// From the kernel's event timestamp (the message's `time_us`) to the arrival.
        var kernelToSocket: Int64? { message.timeMicroseconds.map { Int64(message.arrival) - Int64($0) } }
    }

    private(set) var pairs: [Pair] = []
    /// Writes no message was found for.
    private(set) var missing: [LatencyWrite] = []
    /// Messages that match no write: other events (touchDownRepeat, drags), other controls, or surplus copies.
    private(set) var unexpected: [TargetMessage] = []
    /// Matched pairs whose message contradicts the write (action, generation, position).
    private(set) var mismatches: [String] = []

    /// Pairs each message with the earliest unmatched write of the same event and control (and position, when the
    /// message carries x and y), so one lost message costs one pair instead of shifting all that follow.
    init(writes: [LatencyWrite], messages: [TargetMessage], generation: Int) {
        var used = [Bool](repeating: false, count: writes.count)
        for message in messages {
            let candidate = writes.indices.first { index in
                let write = writes[index]
                guard !used[index], write.event == message.event, write.control == message.control,
                    message.arrival >= write.timing.beforeReport
                else { return false }
                if let x = message.x, let y = message.y {
                    return abs(x - Double(write.x)) <= 1 && abs(y - Double(write.y)) <= 1
                }
                return true
            }
            guard let index = candidate else {
                unexpected.append(message)
                continue
            }
            used[index] = true
            let write = writes[index]
            pairs.append(Pair(write: write, message: message))
            if message.action != write.action || (message.generation.map { $0 != generation } ?? false) {
                mismatches.append(
                    "\(write.control) \(write.event) #\(index + 1): expected action=\(write.action) "
                        + "generation=\(generation), got \(message.details)")
            }
        }
        missing = writes.indices.filter { !used[$0] }.map { writes[$0] }
    }

    /// Pairs whose `time_us` is not the kernel's stamp of the frame: outside the SYN_REPORT write, or absent.
    var timeProblems: [String] {
        pairs.compactMap { pair in
            let window = pair.write.timing
            guard let time = pair.message.timeMicroseconds else { return "\(pair.message.summary): no time_us" }
            if time >= window.beforeReport, time <= window.afterReport { return nil }
            let offset =
                time < window.beforeReport
                ? "\(window.beforeReport - time) µs before" : "\(time - window.afterReport) µs after"
            return "\(pair.message.summary) time_us=\(time) is \(offset) the SYN_REPORT write "
                + "[\(window.beforeReport), \(window.afterReport)]"
        }
    }
}
