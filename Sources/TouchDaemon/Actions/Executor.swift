import Logging

/// Carries out one kind of target's actions on a thread of its own (a ``Worker``). The input thread configures it and
/// hands it deliveries (it never blocks the caller); ``WorkerGroup`` stops it. `touchd simulate --execute` does the
/// same. A new kind of target is its executor (a conforming type), its case here in ``ExecutorKind`` and in
/// ``Executors``, its schema entry (Configuration/Schema/TargetKinds.swift) and its construction in `touchd run` and
/// `touchd simulate --execute` (CLI/Run.swift, CLI/Simulate.swift).
protocol Executor: Worker {
    /// Which targets it serves.
    var kind: ExecutorKind { get }
    /// Takes the targets of its kind from a configuration: at start and after each reload taken.
    func configure(_ configuration: Configuration)
    /// Takes deliveries for its targets and returns at once. An array, not a generic sequence: called through `any
    /// Executor`, a generic requirement runs unspecialized, and on the input thread between a touch and its message
    /// that cost more than building the message.
    func submit(_ deliveries: [ActionDelivery])
    /// Per target name (targets since removed included): its counters as a JSON object for `stats`, and as log
    /// metadata for the line logged at stop.
    var targetReports: [ExecutorTargetReport] { get }
}

/// Which executor takes a target's actions.
enum ExecutorKind: Hashable, Sendable {
    case socket
    case exec
}

extension Configuration.TargetDefinition.Kind {
    var executor: ExecutorKind {
        switch self {
        case .socket: .socket
        case .exec: .exec
        }
    }
}

/// One target's counters, as an executor reports them.
struct ExecutorTargetReport: Sendable {
    var target: String
    var json: String
    var metadata: Logger.Metadata
}

/// The executors of every kind, for `touchd run` and `touchd simulate --execute`.
struct Executors: Sendable {
    let sockets: SocketTargetSender
    let commands: CommandRunner

    var all: [any Executor] { [sockets, commands] }

    func configure(_ configuration: Configuration) {
        for executor in all { executor.configure(configuration) }
    }

    /// One batch's deliveries, filed by executor as they come (in their order within each), so that the hand-over
    /// splits nothing: it runs between a tap and its message.
    struct Batch {
        var sockets: [ActionDelivery] = []
        var commands: [ActionDelivery] = []

        mutating func append(_ delivery: consuming ActionDelivery, for executor: ExecutorKind) {
            switch executor {
            case .socket: sockets.append(delivery)
            case .exec: commands.append(delivery)
            }
        }

        var isEmpty: Bool { sockets.isEmpty && commands.isEmpty }

        /// Empties it with its room kept, for the next batch.
        mutating func removeAllKeepingCapacity() {
            sockets.removeAll(keepingCapacity: true)
            commands.removeAll(keepingCapacity: true)
        }
    }

    /// Hands each executor its deliveries, one call each: socket targets first, since their messages are what a
    /// kiosk app waits for.
    func submit(_ batch: Batch) {
        if !batch.sockets.isEmpty { sockets.submit(batch.sockets) }
        if !batch.commands.isEmpty { commands.submit(batch.commands) }
    }

    /// Stops them in the workers' order (``WorkerGroup``), for `touchd simulate --execute`, which has no control
    /// server.
    func stop(commandsMayFinishWithin: UInt64 = 0) {
        WorkerGroup(control: nil, executors: self).stop(commandsMayFinishWithin: commandsMayFinishWithin)
    }

    /// Every target's report, sorted by name.
    var targetReports: [ExecutorTargetReport] {
        all.flatMap(\.targetReports).sorted { $0.target < $1.target }
    }
}

extension SocketTargetSender: Executor {
    var kind: ExecutorKind { .socket }

    func configure(_ configuration: Configuration) { configure(configuration.socketTargets) }

    func stop(withinMicroseconds microseconds: UInt64) { stop(flushTimeoutMicroseconds: microseconds) }

    var targetReports: [ExecutorTargetReport] {
        statistics.map { name, counts in
            var entry = JSONLine()
            entry.add("kind", "socket")
            entry.add("sent", counts.sent)
            entry.add("dropped", counts.dropped)
            entry.add("failed", counts.failed)
            entry.add("connected", counts.connected)
            entry.add("queued", counts.queued)
            return ExecutorTargetReport(
                target: name, json: entry.line,
                metadata: [
                    "target": "\(name)", "kind": "socket", "sent": "\(counts.sent)", "dropped": "\(counts.dropped)",
                    "failed": "\(counts.failed)",
                ])
        }
    }
}

extension CommandRunner: Executor {
    var kind: ExecutorKind { .exec }

    func configure(_ configuration: Configuration) { configure(configuration.execTargets) }

    func stop(withinMicroseconds microseconds: UInt64) { stop(graceMicroseconds: microseconds) }

    var targetReports: [ExecutorTargetReport] {
        statistics.map { name, counts in
            var entry = JSONLine()
            entry.add("kind", "exec")
            entry.add("started", counts.started)
            entry.add("succeeded", counts.succeeded)
            entry.add("failed", counts.failed)
            entry.add("timed_out", counts.timedOut)
            entry.add("terminated", counts.terminated)
            entry.add("spawn_errors", counts.spawnErrors)
            entry.add("dropped", counts.dropped)
            return ExecutorTargetReport(
                target: name, json: entry.line,
                metadata: [
                    "target": "\(name)", "kind": "exec", "started": "\(counts.started)",
                    "succeeded": "\(counts.succeeded)", "failed": "\(counts.failed)",
                    "timed_out": "\(counts.timedOut)", "terminated": "\(counts.terminated)",
                    "spawn_errors": "\(counts.spawnErrors)", "dropped": "\(counts.dropped)",
                ])
        }
    }
}
