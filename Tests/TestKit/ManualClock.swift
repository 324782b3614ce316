import Synchronization

/// A monotonic clock in microseconds that only moves when the test moves it; shareable with the threads under test.
public final class ManualClock: Sendable {
    private let microseconds: Atomic<UInt64>

    public init(start: UInt64 = 1_000_000) {
        microseconds = Atomic(start)
    }

    public var now: UInt64 { microseconds.load(ordering: .relaxed) }

    /// The same as ``now``, as a function to hand over as a clock (`clock: clock.read`).
    public func read() -> UInt64 { now }

    public func advance(by step: UInt64) { microseconds.add(step, ordering: .relaxed) }
}
