import Glibc

/// Microseconds on CLOCK_MONOTONIC: the clock of libinput's event timestamps, of the model's deadlines and of
/// systemd's `MONOTONIC_USEC`.
func monotonicMicroseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    // Both fields are non-negative on CLOCK_MONOTONIC; the arithmetic cannot overflow for 292,000 years of uptime.
    return UInt64(now.tv_sec) &* 1_000_000 &+ UInt64(now.tv_nsec) / 1000
}

/// Microseconds on CLOCK_BOOTTIME: CLOCK_MONOTONIC plus the time the system spent suspended (see ``SuspendWatch``).
func boottimeMicroseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_BOOTTIME, &now)
    return UInt64(now.tv_sec) &* 1_000_000 &+ UInt64(now.tv_nsec) / 1000
}
