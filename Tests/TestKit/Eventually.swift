import Glibc

/// Polls `condition` every few milliseconds until it holds or `seconds` have passed; whether it held. A bound on
/// waiting for a failure only, never a measure of speed.
public func eventually(within seconds: Int = 10, _ condition: () -> Bool) -> Bool {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while ContinuousClock.now < deadline {
        if condition() { return true }
        usleep(5_000)
    }
    return condition()
}

/// ``eventually(within:_:)`` for async tests: sleeps the task instead of the thread.
public func eventually(within seconds: Int = 10, _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return condition()
}
