import Foundation
import Glibc
import Synchronization

/// The pid of the touchd the driver started and has not reaped yet (0 when none). Signal handlers and the global
/// deadline's watchdog read it to SIGKILL touchd without touching anything else.
let runningDaemonPID = Atomic<Int32>(0)

/// The touchd the watchdog prints the output of when the global deadline passes.
let currentDaemon = Mutex<Daemon?>(nil)

/// How a child process ended.
enum ExitStatus: Equatable, Sendable, CustomStringConvertible {
    case exited(Int32)
    case signaled(Int32)

    /// Decodes a waitpid(2) status (the W* macros are not imported into Swift).
    init(waitStatus status: Int32) {
        if status & 0x7f == 0 {
            self = .exited((status >> 8) & 0xff)
        } else {
            self = .signaled(status & 0x7f)
        }
    }

    var description: String {
        switch self {
        case .exited(let code): "exit status \(code)"
        case .signaled(let signal): "killed by signal \(signal) (\(String(cString: strsignal(signal))))"
        }
    }
}

/// A child process (touchd, or a stand-in in the self-test) with its standard output and standard error captured
/// through one pipe, line by line, by a reader thread.
final class Daemon: Sendable {
    let pid: pid_t
    let executable: String
    /// Every line the child wrote to stdout or stderr, in order.
    let output = Inbox<String>()
    /// When the reader thread read each line of ``output`` (same indices), for latency figures.
    let arrivals = Inbox<Microseconds>()
    private let status = Mutex<ExitStatus?>(nil)
    private let outputEnded = Atomic<Bool>(false)

    /// Starts `executable` with `arguments`, the driver's environment without `removing` and with `environment`
    /// added, stdin from /dev/null, and stdout and stderr into a pipe. The child gets default signal dispositions,
    /// an empty signal mask, and its own process group, so a Ctrl-C meant for the driver reaches touchd only
    /// through the driver (which SIGKILLs it). `published` makes it the child the watchdog and the signal handlers
    /// SIGKILL (``runningDaemonPID``): true for touchd, false for a tool the scenario runs next to it (udevadm),
    /// which must not take touchd's place there.
    init(
        executable: String, arguments: [String], environment: [String: String], removing: Set<String> = [],
        echoPrefix: String?, published: Bool = true
    ) throws(DriverError) {
        self.executable = executable
        var pipeEnds: [Int32] = [-1, -1]
        // pipe2(O_CLOEXEC) is not imported (it needs _GNU_SOURCE); only this thread spawns, so setting the flag
        // afterwards leaves no window in which another child could inherit the pipe.
        guard pipe(&pipeEnds) == 0 else { throw DriverError("pipe: \(describe(errno: errno))") }
        let (readEnd, writeEnd) = (pipeEnds[0], pipeEnds[1])
        _ = fcntl(readEnd, F_SETFD, FD_CLOEXEC)
        _ = fcntl(writeEnd, F_SETFD, FD_CLOEXEC)

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, writeEnd, 1)
        posix_spawn_file_actions_adddup2(&actions, writeEnd, 2)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGPIPE, SIGHUP, SIGINT, SIGTERM, SIGQUIT, SIGCHLD] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var mask = sigset_t()
        sigemptyset(&mask)
        posix_spawnattr_setsigmask(&attributes, &mask)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(
            &attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP))

        var variables = ProcessInfo.processInfo.environment.filter { !removing.contains($0.key) }
        variables.merge(environment) { $1 }
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = variables.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var child: pid_t = 0
        let result = posix_spawn(&child, executable, &actions, &attributes, argv, envp)
        close(writeEnd)
        guard result == 0 else {
            close(readEnd)
            throw DriverError("cannot start \(executable): \(describe(errno: result))")
        }
        pid = child
        if published { runningDaemonPID.store(child, ordering: .relaxed) }
        startThread("output reader") { [self] in
            readOutput(readEnd, echoPrefix: echoPrefix)
        }
    }

    /// The exit status once the child has ended (reaping it), nil while it runs.
    var exitStatus: ExitStatus? {
        status.withLock { status in
            if status == nil {
                var raw: Int32 = 0
                if waitpid(pid, &raw, WNOHANG) == pid {
                    status = ExitStatus(waitStatus: raw)
                    _ = runningDaemonPID.compareExchange(expected: pid, desired: 0, ordering: .relaxed)
                }
            }
            return status
        }
    }

    /// Sends `signal` unless the child has been reaped (so a recycled pid is never signalled). False when it had.
    @discardableResult
    func send(_ signal: Int32) -> Bool {
        status.withLock { status in
            guard status == nil else { return false }
            return Glibc.kill(pid, signal) == 0
        }
    }

    /// Waits for the child to end; nil if it still runs at `deadline`.
    func waitForExit(until deadline: Microseconds) -> ExitStatus? {
        poll(until: deadline) { exitStatus }
    }

    /// SIGKILLs the child if it still runs and reaps it.
    func killAndReap() {
        guard exitStatus == nil else { return }
        send(SIGKILL)
        _ = waitForExit(until: monotonicNow() + 5_000_000)
    }

    /// Waits until the pipe reached end-of-file (every line read), at most until `deadline`.
    func waitForOutputEnd(until deadline: Microseconds) {
        _ = poll(until: deadline) { outputEnded.load(ordering: .relaxed) ? true : nil }
    }

    /// The last `count` lines of output, for failure reports.
    func tail(_ count: Int) -> [String] {
        Array(output.all.suffix(count))
    }

    /// Prints the end of the captured output, to help debug a failure.
    func printTail(_ count: Int = 100) {
        let lines = output.all
        let shown = lines.suffix(count)
        Console.line("--- touchd output (last \(shown.count) of \(lines.count) lines) ---")
        for line in shown { Console.line("touchd| \(line)") }
        Console.line("--- end of touchd output ---")
    }

    private func readOutput(_ fd: Int32, echoPrefix: String?) {
        StampingThreads.prepareCurrentThread()
        var buffer = [UInt8](repeating: 0, count: 16384)
        var lines = LineBuffer()
        func deliver(_ line: String, arrival: Microseconds) {
            arrivals.append(arrival)
            output.append(line)
            if let echoPrefix { Console.line(echoPrefix + line) }
        }
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            // Stamped right after read(2) returns, before the lines are split: what the latency comparison times.
            let arrival = monotonicNow()
            if count < 0, errno == EINTR { continue }
            if count <= 0 { break }
            for line in lines.append(buffer[..<count]) { deliver(line, arrival: arrival) }
        }
        if let rest = lines.finish() { deliver(rest, arrival: monotonicNow()) }
        close(fd)
        outputEnded.store(true, ordering: .relaxed)
    }
}
