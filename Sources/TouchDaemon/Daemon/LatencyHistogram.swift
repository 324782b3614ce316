/// Counts durations in microseconds with 1 µs resolution up to 10 ms (beyond that, only the count and the maximum),
/// so percentiles are exact where they matter and memory stays fixed (80 KB) however long the daemon runs.
struct LatencyHistogram: Sendable {
    static let resolvedLimit = 10_000

    private var buckets = [Int](repeating: 0, count: resolvedLimit)
    private(set) var count = 0
    private(set) var overflow = 0
    private(set) var maximum: UInt64 = 0

    mutating func record(_ microseconds: UInt64) {
        count &+= 1
        maximum = max(maximum, microseconds)
        if microseconds < UInt64(Self.resolvedLimit) {
            buckets[Int(microseconds)] &+= 1
        } else {
            overflow &+= 1
        }
    }

    /// The smallest duration that at least `fraction` (0…1) of the samples do not exceed; nil with no samples.
    /// A percentile that falls among the durations beyond 10 ms is reported as the maximum.
    func percentile(_ fraction: Double) -> UInt64? {
        guard count > 0 else { return nil }
        let clamped = min(max(fraction, 0), 1)
        // The rank is at most `count`, so the conversion cannot trap.
        let rank = max(1, Int((clamped * Double(count)).rounded(.up)))
        var seen = 0
        for (microseconds, samples) in buckets.enumerated() where samples > 0 {
            seen += samples
            if seen >= rank { return UInt64(microseconds) }
        }
        return maximum
    }

    /// `samples=N p50_us=A p99_us=B max_us=C` as log metadata.
    var summary: [String: String] {
        [
            "samples": "\(count)",
            "p50_us": percentile(0.5).map { "\($0)" } ?? "-",
            "p99_us": percentile(0.99).map { "\($0)" } ?? "-",
            "max_us": count > 0 ? "\(maximum)" : "-",
        ]
    }
}
