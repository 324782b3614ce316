/// A moment on the input source's monotonic clock, in microseconds.
///
/// The model never reads a clock: every instant comes in from the caller (libinput's event
/// timestamps in the daemon, script times in `touchd simulate`, virtual time in tests).
public struct Instant: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// Microseconds since an arbitrary origin shared by every instant of one scene.
    public var microseconds: UInt64

    /// Creates an instant from microseconds.
    public init(microseconds: UInt64) {
        self.microseconds = microseconds
    }

    /// Creates an instant from milliseconds, saturating at the largest representable instant.
    public static func milliseconds(_ milliseconds: UInt64) -> Instant {
        let (product, overflow) = milliseconds.multipliedReportingOverflow(by: 1000)
        return Instant(microseconds: overflow ? .max : product)
    }

    /// The zero instant.
    public static let zero = Instant(microseconds: 0)

    /// This instant moved later by `microseconds`, saturating instead of overflowing.
    public func advanced(by microseconds: UInt64) -> Instant {
        let (sum, overflow) = self.microseconds.addingReportingOverflow(microseconds)
        return Instant(microseconds: overflow ? .max : sum)
    }

    /// Microseconds from `earlier` to this instant, or 0 when `earlier` is not earlier.
    public func microseconds(since earlier: Instant) -> UInt64 {
        microseconds >= earlier.microseconds ? microseconds - earlier.microseconds : 0
    }

    /// Whole milliseconds since the origin, rounded down.
    public var milliseconds: UInt64 { microseconds / 1000 }

    public static func < (lhs: Instant, rhs: Instant) -> Bool {
        lhs.microseconds < rhs.microseconds
    }

    public var description: String { "\(microseconds)µs" }
}
