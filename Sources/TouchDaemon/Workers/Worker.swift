import Glibc

/// One of touchd's threads besides the input thread: the socket sender, the control server or the command runner.
/// Each runs a ``WakeableLoop``; ``WorkerGroup`` starts them and stops them all in one order.
protocol Worker: AnyObject, Sendable {
    /// Starts the worker's thread (the command runner's waits for its first command: most kiosks run none).
    /// Idempotent; throws when the process is out of descriptors or threads, or after `stop`.
    func start() throws(WorkerStartError)

    /// Finishes what is in flight within `microseconds` (flushes queued messages, says goodbye to clients, or stops
    /// running commands), then lets everything go and ends its thread. Idempotent; a second caller waits for the
    /// first.
    func stop(withinMicroseconds microseconds: UInt64)
}

/// Why a worker's thread could not start: the call that failed and its errno.
struct WorkerStartError: Error, CustomStringConvertible {
    var operation: String
    var errno: Int32

    var description: String { "\(operation): \(UnixSocket.describe(errno))" }
}

/// touchd's workers, started in the order `touchd run` makes them and stopped in the reverse (as
/// swift-service-lifecycle's `ServiceGroup` runs its services): written once for `touchd run`, its early exits
/// included, and `touchd simulate --execute` (which has no control server). A test that uses one worker on its own
/// starts it itself.
///
/// 1. The control server, within 500 ms: subscribers get their `shutdown` line and have it flushed, so they know the
///    connection's end is not a crash.
/// 2. The socket targets, within 1 s: their queued messages are flushed while the commands still run.
/// 3. Speech (explore by touch's SSIP client), within 500 ms: what speech mode said last is sent, then `QUIT`.
/// 4. The commands: SIGTERM to their process groups, SIGKILL after 1 s of grace.
struct WorkerGroup: Sendable {
    /// How long the control server has to flush its clients' last lines.
    static let controlFlush: UInt64 = 500_000
    /// How long socket targets have to flush at stop.
    static let socketFlush: UInt64 = 1_000_000
    /// How long running commands get between SIGTERM and SIGKILL at stop.
    static let commandGrace: UInt64 = 1_000_000

    /// How long the speech client has to send what is queued at stop.
    static let speechFlush: UInt64 = 500_000

    let control: (any Worker)?
    let executors: Executors
    /// Explore by touch's speech; nil where there is none (`touchd simulate --execute` without speech).
    let speech: SpeechEdge?

    init(control: (any Worker)?, executors: Executors, speech: SpeechEdge? = nil) {
        self.control = control
        self.executors = executors
        self.speech = speech
    }

    /// Starts every worker: the socket sender, the control server, the speech edge (its client's thread waits for a
    /// configuration that asks for speech), then the command runner. On a failure the ones already started are left
    /// for ``stop(commandsMayFinishWithin:)``, which every exit path calls.
    func start() throws(WorkerStartError) {
        try executors.sockets.start()
        try control?.start()
        try speech?.start()
        try executors.commands.start()
    }

    /// Stops every worker, in order. `commandsMayFinishWithin`: how long running commands may go on by themselves
    /// before they get SIGTERM (`touchd simulate --execute` lets them run their timeout's worth; `touchd run` stops
    /// them at once, since a stopping kiosk should stop). Idempotent.
    func stop(commandsMayFinishWithin: UInt64 = 0) {
        control?.stop(withinMicroseconds: Self.controlFlush)
        executors.sockets.stop(withinMicroseconds: Self.socketFlush)
        speech?.stop(withinMicroseconds: Self.speechFlush)
        let deadline = monotonicMicroseconds() &+ commandsMayFinishWithin
        while executors.commands.runningCount > 0, monotonicMicroseconds() < deadline { usleep(10_000) }
        executors.commands.stop(withinMicroseconds: Self.commandGrace)
    }
}
