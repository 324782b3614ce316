/// Notices that the system was suspended (fault-cases.md P1). CLOCK_BOOTTIME goes on counting while the machine
/// sleeps and CLOCK_MONOTONIC does not, so their difference grows by the time asleep and by nothing else. The input
/// loop checks it at every wake-up, before it handles the input that woke it: a finger that was down at suspend may
/// have lifted while the machine slept, and its release, read after resume, must not click whatever lies under it.
/// Pure: both clocks are read by the caller. Needs no D-Bus (logind's PrepareForSleep would) and costs two clock
/// reads per wake-up.
struct SuspendWatch {
    /// A growth of the difference at least this long (microseconds) counts as a suspend. The two clocks come from the
    /// same clock source and otherwise move together; a quarter of a second is far above any rounding between them
    /// and below any real suspend and resume.
    static let threshold: UInt64 = 250_000

    /// `boottime − monotonic` at the last check.
    private var offset: UInt64?

    /// How long the system was suspended since the last check (microseconds), or nil when it was not.
    mutating func check(monotonic: UInt64, boottime: UInt64) -> UInt64? {
        // CLOCK_BOOTTIME is never behind CLOCK_MONOTONIC; saturate rather than trap if a kernel said otherwise.
        let current = boottime >= monotonic ? boottime - monotonic : 0
        defer { offset = current }
        guard let previous = offset, current > previous else { return nil }
        let asleep = current - previous
        return asleep >= Self.threshold ? asleep : nil
    }
}
