import Foundation
import Glibc
import Logging
import Synchronization
import Testing

@testable import TouchDaemon

/// The command runner against real processes: `/bin/sh` scripts in a temporary directory stand in for the kiosk's
/// commands (fault-cases.md A1–A3, A5–A7, A9–A11). Nothing here asserts on a duration: every wait polls for a
/// condition with a generous deadline, and timeouts are only ever shorter than those deadlines. A slow machine makes
/// these tests slower, not flaky.
@Suite(.serialized)
struct CommandTargetTests {
    // MARK: - argv and environment

    @Test func shellMetacharactersReachTheChildVerbatimAsArgv() async throws {
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        // Writes each argument followed by a NUL, so the bytes can be compared exactly.
        let script = try writeScript(in: directory, "argv.sh", #"printf '%s\0' "$@" > argv.out"#)
        let arguments = [
            "; touch injected-semicolon", "$(touch injected-substitution)", "`touch injected-backticks`",
            #"'single' "double" \back"#, "line one\nline two", "*", "$HOME", "a  b", "&& touch injected-and |", "",
            "ünïcödé ✓",
        ]
        let logs = LineSink.memory()
        let runner = CommandRunner(logger: testLogger(logs), output: .discarded)
        runner.configure(["cmd": execTarget([script] + arguments, workingDirectory: directory.path)])
        runner.submit(delivery("go"))

        #expect(await eventually(within: 90) { runner.statistics["cmd"]?.succeeded == 1 })
        let written = try Data(contentsOf: directory.appendingPathComponent("argv.out"))
        #expect(written == Data(arguments.map { $0 + "\0" }.joined().utf8))
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        #expect(!files.contains { $0.hasPrefix("injected") }, "a shell interpreted an argument: \(files)")
        // No shell: nothing logged about one.
        #expect(!logs.captured.contains { $0.contains("/bin/sh -c") })
        await runner.shutdown(graceMicroseconds: 100_000)
    }

    /// A command cannot create an input device (UinputGuard): `ioctl(UI_DEV_CREATE)` answers EPERM in the child (on
    /// /dev/null here; the VM checks /dev/uinput itself), where without the filter it answers ENOTTY. The thread that
    /// runs the tests is not under the filter: only the commands' thread and what it starts.
    @Test func commandsCannotCreateInputDevices() async throws {
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let probe = """
            import errno, fcntl, os
            fd = os.open("/dev/null", os.O_RDONLY)
            try:
                fcntl.ioctl(fd, 0x5501)
                result = "created"
            except OSError as error:
                result = errno.errorcode[error.errno]
            open("ioctl.out", "w").write(result)
            """
        let runner = CommandRunner(logger: testLogger(LineSink.memory()), output: .discarded)
        runner.configure(["cmd": execTarget(["/usr/bin/python3", "-c", probe], workingDirectory: directory.path)])
        runner.submit(delivery("go"))
        #expect(await eventually(within: 90) { runner.statistics["cmd"]?.succeeded == 1 })
        let answer = try String(contentsOf: directory.appendingPathComponent("ioctl.out"), encoding: .utf8)
        #expect(answer == "EPERM", "ioctl(UI_DEV_CREATE) in a command answered \(answer)")
        let status = try String(contentsOfFile: "/proc/thread-self/status", encoding: .utf8)
        #expect(status.contains("Seccomp:\t0"), "the test's own thread is under a filter")
        await runner.shutdown(graceMicroseconds: 100_000)
    }

    @Test func shellTargetsRunThroughBinShAndAreLoggedAsSuch() async throws {
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let logs = LineSink.memory()
        let runner = CommandRunner(logger: testLogger(logs), output: .discarded)
        let target = execTarget(
            [#"echo "$TOUCHD_ACTION $TOUCHD_CONTROL" > shell.out; exit 0"#], shell: true,
            workingDirectory: directory.path)
        runner.configure(["cmd": target])
        runner.submit(delivery("go"))

        #expect(await eventually(within: 90) { runner.statistics["cmd"]?.succeeded == 1 })
        let written = try String(contentsOf: directory.appendingPathComponent("shell.out"), encoding: .utf8)
        #expect(written == "go pay\n")
        let announcements = logs.captured.filter { $0.contains("/bin/sh -c") }
        #expect(announcements.count == 1)
        #expect(announcements.first?.hasPrefix("info: ") == true)
        #expect(announcements.first?.contains("target=cmd") == true)
        // Once per target per configuration: a reload announces it again.
        runner.configure(["cmd": target])
        #expect(logs.captured.filter { $0.contains("/bin/sh -c") }.count == 2)
        await runner.shutdown(graceMicroseconds: 100_000)
    }

    @Test func childSeesOnlyStandardDescriptorsItsOwnSessionAndTheAllowedEnvironment() async throws {
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        // Descriptors the child must not inherit, whether or not they are close-on-exec: a listening socket and a
        // plain file opened without O_CLOEXEC.
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        try #require(listener >= 0)
        defer { close(listener) }
        let plain = open(directory.appendingPathComponent("inheritable").path, O_CREAT | O_RDWR, 0o600)
        try #require(plain >= 0)
        defer { close(plain) }

        let runner = CommandRunner(logger: testLogger(LineSink.memory()), output: .discarded)
        runner.configure([
            "cmd": execTarget(
                ["/bin/sleep", "1000"], environment: ["KIOSK_MODE": "on", "LANG": "de_DE.UTF-8"],
                workingDirectory: directory.path)
        ])
        runner.submit(
            ActionDelivery(
                action: "pay", target: "cmd", control: "pay-button", event: "touchUpInside", timeMicroseconds: 1,
                contact: 0, x: 1600, y: 12.5, value: 0.25, device: "event5", generation: 1))
        let pid = try #require(await processID(of: "cmd", in: runner))

        // Descriptors: exactly 0, 1 and 2, with stdin from /dev/null (and stdout, stderr discarded here).
        let descriptors = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").sorted()
        #expect(descriptors == ["0", "1", "2"])
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/0") == "/dev/null")
        // Its own session and process group, led by itself; the configured working directory.
        let stat = try #require(ProcessStat(pid: pid))
        #expect(stat.session == pid && stat.group == pid)
        #expect(stat.session != getsid(0) && stat.group != getpgrp())
        #expect(
            try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/cwd")
                == directory.resolvingSymlinksInPath().path)
        // Exactly the allow-list: the fixed PATH, LANG as configured, the target's variables, the TOUCHD_ ones.
        #expect(
            try environment(of: pid) == [
                "PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "de_DE.UTF-8", "KIOSK_MODE": "on",
                "TOUCHD_ACTION": "pay", "TOUCHD_CONTROL": "pay-button", "TOUCHD_EVENT": "touchUpInside",
                "TOUCHD_X": "1600", "TOUCHD_Y": "12.5", "TOUCHD_VALUE": "0.25", "TOUCHD_DEVICE": "event5",
            ])

        await runner.shutdown(graceMicroseconds: 100_000)
        #expect(runner.statistics["cmd"]?.terminated == 1)
        #expect(!ProcessStat.isAlive(pid))
    }

    @Test func unknownActionDetailsAreLeftOutOfTheEnvironment() async throws {
        let runner = CommandRunner(logger: testLogger(LineSink.memory()), output: .discarded)
        runner.configure(["cmd": execTarget(["/bin/sleep", "1000"])])
        runner.submit(delivery("go"))
        let pid = try #require(await processID(of: "cmd", in: runner))
        let seen = try environment(of: pid)
        #expect(
            seen == [
                "PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "TOUCHD_ACTION": "go",
                "TOUCHD_CONTROL": "pay", "TOUCHD_EVENT": "touchUpInside",
            ],
            "pid \(pid): \(seen); \((try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? "no stat")")
        await runner.shutdown(graceMicroseconds: 100_000)
    }

    /// systemd's variables never reach a child, even when touchd has them. Runs in a process of its own, so setting
    /// them cannot disturb tests running alongside.
    @Test func systemdVariablesOfTouchdNeverReachTheChild() async {
        await #expect(processExitsWith: .success) {
            let leaked = [
                "NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES",
                "JOURNAL_STREAM", "INVOCATION_ID", "HOME", "TOUCHD_TEST_SECRET",
            ]
            for name in leaked { setenv(name, "/run/leaked-\(name)", 1) }
            let runner = CommandRunner(logger: testLogger(LineSink.memory()), output: .discarded)
            runner.configure(["cmd": execTarget(["/bin/sleep", "1000"])])
            runner.submit(delivery("go"))
            let pid = try #require(await processID(of: "cmd", in: runner))
            let seen = try environment(of: pid)
            #expect(Set(seen.keys).isDisjoint(with: leaked), "leaked: \(seen)")
            #expect(Set(seen.keys) == ["PATH", "LANG", "TOUCHD_ACTION", "TOUCHD_CONTROL", "TOUCHD_EVENT"])
            await runner.shutdown(graceMicroseconds: 100_000)
        }
    }

    // MARK: - Output

    /// Fault case A9: a command that writes megabytes leaves touchd's memory flat, because touchd never reads a byte
    /// of it. By construction: the child's stdout and stderr are touchd's stderr (the journal under systemd), the same
    /// open file description, with no pipe in between. Runs in a process of its own whose stderr is a scratch file,
    /// so the 20 MB stay out of the test's output and the file's offset, which touchd shares with the child, shows
    /// where every byte went.
    @Test func megabytesOfChildOutputGoStraightToTouchdsStderrAndMemoryStaysFlat() async {
        await #expect(processExitsWith: .success) {
            let path = FileManager.default.temporaryDirectory.appendingPathComponent("touchd-a9-\(getpid())").path
            let file = open(path, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0o600)
            try #require(file >= 0)
            defer { unlink(path) }
            try #require(dup2(file, 2) == 2)
            close(file)

            let runner = CommandRunner(logger: testLogger(LineSink.memory()), output: .standardError)
            runner.configure([
                "idle": execTarget(["/bin/sleep", "1000"]),
                // 10 MB without a newline on stdout, then 10 MB of short lines on stderr.
                "flood": execTarget(["head -c 10000000 /dev/zero; yes | head -c 10000000 >&2"], shell: true),
            ])
            runner.submit(delivery("wait", target: "idle"))
            let pid = try #require(await processID(of: "idle", in: runner))
            // The child's descriptors 1 and 2 open the very file that is touchd's descriptor 2: a regular file, so
            // no pipe exists that touchd could read (or have to drain).
            var ours = stat()
            try #require(fstat(2, &ours) == 0)
            for descriptor in [1, 2] {
                var theirs = stat()
                try #require(stat("/proc/\(pid)/fd/\(descriptor)", &theirs) == 0)
                #expect(theirs.st_dev == ours.st_dev && theirs.st_ino == ours.st_ino)
                #expect(theirs.st_mode & S_IFMT == S_IFREG)
            }

            let before = residentBytes()
            runner.submit(delivery("flood", target: "flood"))
            #expect(await eventually(within: 90) { runner.statistics["flood"]?.succeeded == 1 })
            let after = residentBytes()
            // Every byte went through the shared description (the child's writes moved touchd's offset), and the
            // idle child's descriptors share that offset too: one open file, not a copy of it.
            let offset = lseek(2, 0, SEEK_CUR)
            #expect(offset == 20_000_000)
            #expect(fileOffset(pid: pid, descriptor: 1) == offset && fileOffset(pid: pid, descriptor: 2) == offset)
            // A generous bound: what spawning costs, far below the 20 MB that reading the output would hold.
            #expect(after - before < 8 << 20, "resident memory grew from \(before) to \(after) bytes")
            await runner.shutdown(graceMicroseconds: 100_000)
        }
    }

    // MARK: - Failures

    @Test func missingOrNonExecutableProgramIsLoggedCountedAndLaterRunsWork() async throws {
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let notExecutable = directory.appendingPathComponent("not-executable").path
        try "#!/bin/sh\nexit 0\n".write(toFile: notExecutable, atomically: true, encoding: .utf8)
        let good = try writeScript(in: directory, "good.sh", "touch ran")
        let logs = LineSink.memory()
        let runner = CommandRunner(logger: testLogger(logs), output: .discarded)
        runner.configure([
            "missing": execTarget([directory.appendingPathComponent("deleted-after-load").path]),
            "denied": execTarget([notExecutable]),
            "nowhere": execTarget([good], workingDirectory: directory.appendingPathComponent("gone").path),
            "good": execTarget([good], workingDirectory: directory.path),
        ])

        runner.submit(delivery("a", target: "missing"))
        runner.submit(delivery("b", target: "denied"))
        runner.submit(delivery("c", target: "nowhere"))
        for name in ["missing", "denied", "nowhere"] {
            #expect(await eventually(within: 90) { runner.statistics[name]?.spawnErrors == 1 })
            let statistics = try #require(runner.statistics[name])
            #expect(statistics.started == 0 && statistics.running == false && statistics.failed == 0)
        }
        // A failure is counted under the runner's lock and logged after it: wait for the lines too.
        func errorLines() -> [String] { logs.captured.filter { $0.hasPrefix("error: command could not be started") } }
        #expect(await eventually(within: 90) { errorLines().count >= 3 })
        let errors = errorLines()
        #expect(errors.count == 3)
        #expect(errors.contains { $0.contains("target=missing") && $0.contains("errno=\(ENOENT)") })
        #expect(errors.contains { $0.contains("target=denied") && $0.contains("errno=\(EACCES)") })
        #expect(errors.contains { $0.contains("target=missing") && $0.contains("action=a") })
        #expect(errors.contains { $0.contains("target=denied") && $0.contains("action=b") })

        // touchd carries on: the same targets fail again (counted), and a good one runs.
        runner.submit(delivery("c", target: "missing"))
        runner.submit(delivery("d", target: "good"))
        #expect(await eventually(within: 90) { runner.statistics["missing"]?.spawnErrors == 2 })
        #expect(await eventually(within: 90) { runner.statistics["good"]?.succeeded == 1 })
        #expect(FileManager.default.fileExists(atPath: directory.appendingPathComponent("ran").path))
        #expect(runner.runningCount == 0)
        await runner.shutdown(graceMicroseconds: 100_000)
    }

    @Test func spawnErrorLogsAreRateLimited() async throws {
        let logs = LineSink.memory()
        // A clock that stands still: every failure falls into the same log window.
        let runner = CommandRunner(logger: testLogger(logs), output: .discarded, clock: { 1_000_000 })
        runner.configure(["missing": execTarget(["/nonexistent/touchd-test-program"])])
        for index in 0..<8 {
            runner.submit(delivery("tap-\(index)", target: "missing"))
            #expect(await eventually(within: 90) { runner.statistics["missing"]?.spawnErrors == index + 1 })
        }
        // RateLimit's default: the first 5 per window. A failure is logged after it is counted, so the fifth line may
        // still be on its way; the limit is decided under the lock, so no sixth can follow it.
        func startFailures() -> Int { logs.captured.filter { $0.contains("command could not be started") }.count }
        #expect(await eventually(within: 90) { startFailures() >= 5 })
        #expect(startFailures() == 5)
        await runner.shutdown(graceMicroseconds: 100_000)
    }

    @Test func hangingChildIsKilledWithItsWholeGroupOnTimeout() async throws {
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        // A grandchild in the same group that ignores SIGTERM, so only the SIGKILL after the grace ends it; then a
        // plain one; then the command itself hangs.
        let script = try writeScript(
            in: directory, "hang.sh",
            """
            /bin/sh -c 'trap "" TERM; echo $$ > stubborn.pid; exec sleep 1000' &
            sleep 1000 &
            echo $! > grandchild.pid
            echo $$ > child.pid
            sleep 1000
            """)
        let logs = LineSink.memory()
        let runner = CommandRunner(
            logger: testLogger(logs),
            limits: .init(maximumRunning: 16, burst: 10, interval: 100_000, killGrace: 200_000),
            output: .discarded)
        runner.configure(["hang": execTarget([script], workingDirectory: directory.path, timeoutMilliseconds: 1_500)])
        runner.submit(delivery("go", target: "hang"))

        let group = try #require(await processID(of: "hang", in: runner))
        // All three processes exist before the timeout…
        var pids: [String: Int32] = [:]
        #expect(
            await eventually(within: 90) {
                for name in ["child", "grandchild", "stubborn"] {
                    pids[name] = readPID(directory.appendingPathComponent("\(name).pid"))
                }
                return pids.count == 3
            })
        #expect(pids["child"] == group)
        // …and none after it: the group got SIGTERM, then SIGKILL.
        #expect(await eventually(within: 90) { runner.statistics["hang"]?.timedOut == 1 })
        #expect(await eventually(within: 90) { ProcessStat.liveMembers(ofGroup: group).isEmpty })
        for (name, pid) in pids { #expect(!ProcessStat.isAlive(pid), "\(name) (\(pid)) survived") }
        let statistics = try #require(runner.statistics["hang"])
        #expect(statistics.lastTermination == .signalled(SIGTERM))
        #expect(statistics.started == 1 && statistics.failed == 0 && !statistics.running)
        // Logged after it is counted: wait for the line.
        #expect(
            await eventually(within: 90) {
                logs.captured.contains {
                    $0.hasPrefix("warning: command timed out") && $0.contains("signal=SIGTERM")
                        && $0.contains("duration_ms=") && $0.contains("pid=\(group)")
                }
            })
        #expect(runner.runningCount == 0)
        await runner.shutdown(graceMicroseconds: 100_000)
    }

    @Test func exitStatusAndSignalAreReported() async throws {
        let logs = LineSink.memory()
        let runner = CommandRunner(logger: testLogger(logs), output: .discarded)
        runner.configure([
            "ok": execTarget(["/bin/sh", "-c", "exit 0"]),
            "three": execTarget(["/bin/sh", "-c", "exit 3"]),
            "usr1": execTarget(["/bin/sh", "-c", "kill -USR1 $$"]),
        ])
        for name in ["ok", "three", "usr1"] { runner.submit(delivery("tap", target: name)) }

        #expect(await eventually(within: 90) { runner.statistics["ok"]?.succeeded == 1 })
        #expect(await eventually(within: 90) { runner.statistics["three"]?.failed == 1 })
        #expect(await eventually(within: 90) { runner.statistics["usr1"]?.failed == 1 })
        #expect(runner.statistics["ok"]?.lastTermination == .exited(0))
        #expect(runner.statistics["three"]?.lastTermination == .exited(3))
        #expect(runner.statistics["usr1"]?.lastTermination == .signalled(SIGUSR1))
        // An end is counted under the runner's lock and logged after it: the last one's line may still be on its way.
        #expect(await eventually(within: 90) { logs.captured.filter { $0.contains("command f") }.count >= 3 })
        let lines = logs.captured
        #expect(lines.contains { $0.hasPrefix("debug: command finished") && $0.contains("target=ok") })
        #expect(
            lines.contains {
                $0.hasPrefix("warning: command failed") && $0.contains("target=three") && $0.contains("status=3")
                    && $0.contains("action=tap") && $0.contains("pid=") && $0.contains("duration_ms=")
            })
        #expect(
            lines.contains {
                $0.hasPrefix("warning: command failed") && $0.contains("target=usr1") && $0.contains("signal=SIGUSR1")
            })
        await runner.shutdown(graceMicroseconds: 100_000)
    }

    // MARK: - Bounds

    @Test func aBurstOfHundredTapsStaysBoundedAndEveryTapIsAccountedFor() async throws {
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let script = try writeScript(in: directory, "tap.sh", #"echo "$TOUCHD_ACTION" >> runs.log; sleep 0.2"#)
        let runner = CommandRunner(logger: testLogger(LineSink.memory()), output: .discarded)
        // Every policy, and more targets than the runner runs at once.
        var targets: [String: Configuration.ExecTarget] = [:]
        for policy in [Configuration.ExecTarget.IfRunning.ignore, .queue, .restart] {
            targets["\(policy)"] = execTarget([script], workingDirectory: directory.path, ifRunning: policy)
        }
        for index in 0..<20 { targets["many-\(index)"] = execTarget(["/bin/sleep", "0.3"]) }
        runner.configure(targets)

        // 100 taps on each policy's target in one burst, then one on each of the 20 others.
        for policy in ["ignore", "queue", "restart"] {
            runner.submit((0..<100).map { delivery("\(policy)-\($0)", target: policy) })
        }
        runner.submit((0..<20).map { delivery("many", target: "many-\($0)") })
        #expect(runner.runningCount <= 16)

        var highest = 0
        #expect(
            await eventually(within: 90) {
                highest = max(highest, runner.runningCount)
                return runner.runningCount == 0 && runner.statistics.values.allSatisfy { !$0.queued }
            })
        #expect(highest <= 16)
        let statistics = runner.statistics
        var submitted = 0
        var accounted = 0
        for (name, counts) in statistics {
            let taps = name.hasPrefix("many-") ? 1 : 100
            submitted += taps
            accounted += counts.started + counts.spawnErrors + counts.dropped
            #expect(counts.started + counts.dropped == taps, "\(name): \(counts)")
            #expect(
                counts.started == counts.succeeded + counts.failed + counts.timedOut + counts.terminated,
                "\(name): \(counts)")
        }
        #expect(submitted == 320 && accounted == submitted)
        // ignore: one run, the rest dropped while it ran.
        #expect(statistics["ignore"]?.started == 1)
        #expect(statistics["ignore"]?.droppedWhileRunning == 99)
        // queue: one run and one waiting; the rest found the queue full.
        #expect(statistics["queue"]?.started == 2)
        #expect(statistics["queue"]?.droppedQueueFull == 98)
        // restart: bounded by the rate limit's burst (10), and whatever was replaced while a run was stopping.
        let restart = try #require(statistics["restart"])
        #expect(restart.started >= 1 && restart.started <= 10)
        #expect(restart.droppedRateLimited >= 90)
        // The runner's cap: 3 targets above were running when the 20 others came, so at most 13 of them ran.
        let many = statistics.filter { $0.key.hasPrefix("many-") }.values
        #expect(many.reduce(0) { $0 + $1.started } <= 16 - 1)
        #expect(many.reduce(0) { $0 + $1.droppedOverCapacity } >= 4)
        await runner.shutdown(graceMicroseconds: 100_000)
    }

    @Test func rateLimitAllowsABurstThenOneRunPerInterval() async throws {
        let clock = ManualClock()
        let runner = CommandRunner(
            logger: testLogger(LineSink.memory()), limits: .standard, output: .discarded, clock: { clock.now })
        runner.configure(["cmd": execTarget(["/bin/true"])])
        // One tap at a time, each after the previous run ended: only the rate limit can drop them.
        for index in 0..<15 {
            runner.submit(delivery("tap-\(index)"))
            #expect(await eventually(within: 90) { runner.runningCount == 0 })
        }
        #expect(runner.statistics["cmd"]?.started == 10)
        #expect(runner.statistics["cmd"]?.droppedRateLimited == 5)
        // One interval (100 ms) later, one more token.
        clock.advance(by: 100_000)
        runner.submit(delivery("later-1"))
        #expect(await eventually(within: 90) { runner.runningCount == 0 })
        runner.submit(delivery("later-2"))
        #expect(await eventually(within: 90) { runner.runningCount == 0 })
        #expect(runner.statistics["cmd"]?.started == 11)
        #expect(runner.statistics["cmd"]?.droppedRateLimited == 6)
        await runner.shutdown(graceMicroseconds: 100_000)
    }

    @Test func tokenBucketRefillsAtItsRate() {
        var bucket = TokenBucket(burst: 3, interval: 100)
        #expect((0..<4).map { _ in bucket.take(now: 1000) } == [true, true, true, false])
        #expect(bucket.take(now: 1099) == false)
        #expect(bucket.take(now: 1100) == true)
        #expect(bucket.take(now: 1100) == false)
        // A long pause fills it up to the burst, not beyond.
        #expect((0..<4).map { _ in bucket.take(now: 100_000) } == [true, true, true, false])
    }

    // MARK: - if_running

    @Test func ifRunningIgnoreDropsTapsWhileTheCommandRuns() async throws {
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let gate = directory.appendingPathComponent("release").path
        let script = try writeScript(
            in: directory, "gated.sh",
            #"echo "$TOUCHD_ACTION" >> runs.log; while [ ! -e release ]; do sleep 0.02; done"#)
        let runner = CommandRunner(logger: testLogger(LineSink.memory()), output: .discarded)
        runner.configure(["cmd": execTarget([script], workingDirectory: directory.path, ifRunning: .ignore)])

        runner.submit(delivery("first"))
        _ = try #require(await processID(of: "cmd", in: runner))
        runner.submit(delivery("second"))
        #expect(runner.statistics["cmd"]?.droppedWhileRunning == 1)
        #expect(FileManager.default.createFile(atPath: gate, contents: nil))
        #expect(await eventually(within: 90) { runner.statistics["cmd"]?.succeeded == 1 })
        #expect(try lines(directory.appendingPathComponent("runs.log")) == ["first"])
        // Once it ended, the next tap runs.
        runner.submit(delivery("third"))
        #expect(await eventually(within: 90) { runner.statistics["cmd"]?.succeeded == 2 })
        #expect(try lines(directory.appendingPathComponent("runs.log")) == ["first", "third"])
        await runner.shutdown(graceMicroseconds: 100_000)
    }

    @Test func ifRunningQueueRunsOneMoreAfterTheCurrentRun() async throws {
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let gate = directory.appendingPathComponent("release").path
        let script = try writeScript(
            in: directory, "gated.sh",
            #"echo "$TOUCHD_ACTION" >> runs.log; while [ ! -e release ]; do sleep 0.02; done"#)
        let runner = CommandRunner(logger: testLogger(LineSink.memory()), output: .discarded)
        runner.configure(["cmd": execTarget([script], workingDirectory: directory.path, ifRunning: .queue)])

        runner.submit(delivery("first"))
        _ = try #require(await processID(of: "cmd", in: runner))
        runner.submit([delivery("second"), delivery("third"), delivery("fourth")])
        let waiting = try #require(runner.statistics["cmd"])
        #expect(waiting.queued && waiting.droppedQueueFull == 2 && waiting.started == 1)
        #expect(FileManager.default.createFile(atPath: gate, contents: nil))
        #expect(await eventually(within: 90) { runner.statistics["cmd"]?.succeeded == 2 })
        #expect(try lines(directory.appendingPathComponent("runs.log")) == ["first", "second"])
        let done = try #require(runner.statistics["cmd"])
        #expect(!done.queued && !done.running && done.started == 2)
        await runner.shutdown(graceMicroseconds: 100_000)
    }

    @Test func ifRunningRestartStopsTheRunningGroupThenStartsAgain() async throws {
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let script = try writeScript(
            in: directory, "long.sh", #"echo "$TOUCHD_ACTION" >> runs.log; sleep 1000 & sleep 1000"#)
        let logs = LineSink.memory()
        let runner = CommandRunner(logger: testLogger(logs), output: .discarded)
        runner.configure(["cmd": execTarget([script], workingDirectory: directory.path, ifRunning: .restart)])

        runner.submit(delivery("first"))
        let first = try #require(await processID(of: "cmd", in: runner))
        // Restart only once the first run is under way, or SIGTERM could end it before it logs anything.
        #expect(
            await eventually(within: 90) { (try? lines(directory.appendingPathComponent("runs.log"))) == ["first"] })
        runner.submit(delivery("second"))
        #expect(await eventually(within: 90) { runner.statistics["cmd"]?.terminated == 1 })
        #expect(await eventually(within: 90) { ProcessStat.liveMembers(ofGroup: first).isEmpty })
        let second = try #require(await processID(of: "cmd", in: runner))
        #expect(second != first)
        #expect(
            await eventually(within: 90) {
                (try? lines(directory.appendingPathComponent("runs.log"))) == ["first", "second"]
            })
        let statistics = try #require(runner.statistics["cmd"])
        #expect(statistics.started == 2 && statistics.lastTermination == .signalled(SIGTERM))
        #expect(statistics.failed == 0 && statistics.timedOut == 0)
        #expect(
            await eventually(within: 90) {
                logs.captured.contains { $0.contains("command stopped for a restart") && $0.contains("pid=\(first)") }
            })

        await runner.shutdown(graceMicroseconds: 100_000)
        #expect(runner.statistics["cmd"]?.terminated == 2)
        #expect(await eventually(within: 90) { ProcessStat.liveMembers(ofGroup: second).isEmpty })
    }

    // MARK: - Reload, stop, reaping

    @Test func reloadLeavesRunningChildrenAloneAndStopEndsThem() async throws {
        let runner = CommandRunner(logger: testLogger(LineSink.memory()), output: .discarded)
        runner.configure([
            "kept": execTarget(["/bin/sleep", "1000"]), "removed": execTarget(["/bin/sleep", "1000"]),
            "changed": execTarget(["/bin/sleep", "1000"], ifRunning: .queue),
        ])
        for name in ["kept", "removed", "changed"] { runner.submit(delivery("tap", target: name)) }
        var pids: [Int32] = []
        for name in ["kept", "removed", "changed"] { pids.append(try #require(await processID(of: name, in: runner))) }
        runner.submit(delivery("waiting", target: "changed"))
        #expect(runner.statistics["changed"]?.queued == true)

        runner.configure([
            "kept": execTarget(["/bin/sleep", "1000"]),
            "changed": execTarget(["/bin/sleep", "2000"], ifRunning: .queue),
        ])
        // Nothing was killed; the run waiting for the changed target was dropped; the removed one gets nothing.
        #expect(pids.allSatisfy { ProcessStat.isAlive($0) })
        #expect(runner.runningCount == 3)
        #expect(runner.statistics["changed"]?.droppedUnavailable == 1)
        #expect(runner.statistics["changed"]?.queued == false)
        runner.submit(delivery("tap", target: "removed"))
        #expect(runner.unknownTargetDeliveries == 1)

        await runner.shutdown(graceMicroseconds: 200_000)
        #expect(runner.runningCount == 0)
        for pid in pids { #expect(!ProcessStat.isAlive(pid)) }
        for name in ["kept", "removed", "changed"] { #expect(runner.statistics[name]?.terminated == 1) }
        // After stop, taps are dropped and counted.
        runner.submit(delivery("late", target: "kept"))
        #expect(runner.statistics["kept"]?.droppedUnavailable == 1)
        #expect(runner.runningCount == 0)
    }

    @Test func stopKillsChildrenThatIgnoreSigterm() async throws {
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let script = try writeScript(in: directory, "stubborn.sh", #"trap "" TERM; echo ready > ready; sleep 1000"#)
        let runner = CommandRunner(logger: testLogger(LineSink.memory()), output: .discarded)
        runner.configure(["cmd": execTarget([script], workingDirectory: directory.path)])
        runner.submit(delivery("go"))
        let pid = try #require(await processID(of: "cmd", in: runner))
        #expect(
            await eventually(within: 90) {
                FileManager.default.fileExists(atPath: directory.appendingPathComponent("ready").path)
            })

        // Blocking form, as the input thread calls it; on a thread of its own so no task of the pool waits.
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread {
                runner.stop(graceMicroseconds: 200_000)
                continuation.resume()
            }
        }
        #expect(runner.statistics["cmd"]?.terminated == 1)
        #expect(runner.statistics["cmd"]?.lastTermination == .signalled(SIGKILL))
        // The command itself is reaped when stop returns; the sleep it started got the same SIGKILL, which a loaded
        // machine may take a moment to carry out.
        #expect(await eventually(within: 90) { ProcessStat.liveMembers(ofGroup: pid).isEmpty })
    }

    @Test func noZombiesAfterManyRuns() async throws {
        let runner = CommandRunner(
            logger: testLogger(LineSink.memory()),
            limits: .init(maximumRunning: 16, burst: 1_000, interval: 1, killGrace: 100_000), output: .discarded)
        var targets: [String: Configuration.ExecTarget] = [:]
        for index in 0..<16 { targets["t\(index)"] = execTarget(["/bin/true"]) }
        runner.configure(targets)
        for round in 0..<25 {
            runner.submit((0..<16).map { delivery("round-\(round)", target: "t\($0)") })
            #expect(await eventually(within: 90) { runner.runningCount == 0 })
        }
        let statistics = runner.statistics.values
        #expect(statistics.reduce(0) { $0 + $1.succeeded } == 400)
        #expect(statistics.reduce(0) { $0 + $1.dropped + $1.spawnErrors + $1.failed } == 0)
        #expect(ProcessStat.zombieChildren().isEmpty)
        await runner.shutdown(graceMicroseconds: 100_000)
    }

    /// The command thread sleeps without a timeout once its children are gone: no periodic timer, no
    /// thread pool. Counts its context switches over a second after a command ran; a timer would show at least one.
    @Test func theCommandThreadNeverWakesOnceItsChildrenAreGone() async throws {
        let runner = CommandRunner(logger: testLogger(LineSink.memory()), output: .discarded)
        runner.configure(["cmd": execTarget(["/bin/true"])])
        runner.submit(delivery("go"))
        #expect(await eventually(within: 90) { runner.statistics["cmd"]?.succeeded == 1 })
        let thread = try #require(runner.supervisorThreadID)
        // Whatever the end of the run set going settles first (the thread returns to poll at once).
        #expect(await eventually(within: 90) { contextSwitches(thread: thread) != nil })
        usleep(100_000)
        let before = try #require(contextSwitches(thread: thread))
        usleep(1_000_000)
        let after = try #require(contextSwitches(thread: thread))
        #expect(after == before, "the command thread woke \(after - before) times while idle")
        await runner.shutdown(graceMicroseconds: 100_000)
    }

    // MARK: - Signals

    /// Signals sent to touchd after the first command still reach the signalfd: the command thread blocks them, and
    /// SignalChannel forwards one that lands on a thread that does not (swift-subprocess's monitor thread did not)
    /// instead of letting the default action end the process. Runs in a process of its own: it installs handlers and
    /// sends itself SIGHUP and SIGTERM.
    @Test func straySignalsReachTheSignalfdAfterACommandRan() async {
        await #expect(processExitsWith: .success) {
            let result = runOnDedicatedThread(name: "signal-test") {
                guard let signals = SignalChannel() else { return 10 }
                signals.receiveOnCurrentThread()
                let runner = CommandRunner(logger: testLogger(LineSink.memory()), output: .discarded)
                runner.configure(["cmd": execTarget(["/bin/sleep", "1000"])])
                runner.submit(delivery("go"))
                // The command thread exists once a command runs.
                var waited = 0
                while runner.statistics["cmd"]?.processID == nil {
                    usleep(10_000)
                    waited += 1
                    if waited > 2_000 { return 11 }
                }
                var received: [Int32] = []
                for signal in [SIGHUP, SIGTERM] {
                    kill(getpid(), signal)
                    var polls = 0
                    while !received.contains(signal) {
                        received += signals.drain()
                        usleep(10_000)
                        polls += 1
                        if polls > 2_000 { return 12 }
                    }
                }
                runner.stop(graceMicroseconds: 100_000)
                return received == [SIGHUP, SIGTERM] ? 0 : 13
            }
            exit(result)
        }
    }
}

// MARK: - Helpers

private func testLogger(_ sink: LineSink) -> Logger {
    Logger(label: "touchd.test") { _ in JournalLogHandler(logLevel: .debug, style: .terminal, sink: sink) }
}

private func execTarget(
    _ argv: [String], shell: Bool = false, environment: [String: String] = [:], workingDirectory: String? = nil,
    timeoutMilliseconds: UInt64 = 60_000, ifRunning: Configuration.ExecTarget.IfRunning = .ignore
) -> Configuration.ExecTarget {
    Configuration.ExecTarget(
        argv: argv, shell: shell, environment: environment, workingDirectory: workingDirectory,
        timeout: timeoutMilliseconds * 1000, ifRunning: ifRunning)
}

private func delivery(_ action: String, target: String = "cmd") -> ActionDelivery {
    ActionDelivery(
        action: action, target: target, control: "pay", event: "touchUpInside", timeMicroseconds: 1, generation: 1)
}

/// An executable `/bin/sh` script in `directory`.
private func writeScript(in directory: URL, _ name: String, _ body: String) throws -> String {
    let path = directory.appendingPathComponent(name).path
    try "#!/bin/sh\n\(body)\n".write(toFile: path, atomically: true, encoding: .utf8)
    try #require(chmod(path, 0o755) == 0)
    return path
}

private func lines(_ url: URL) throws -> [String] {
    try String(contentsOf: url, encoding: .utf8).split(separator: "\n").map(String.init)
}

private func readPID(_ url: URL) -> Int32? {
    guard let text = try? String(contentsOf: url, encoding: .utf8), text.hasSuffix("\n") else { return nil }
    return Int32(text.dropLast())
}

/// The process id of `target`'s running command, once it runs (within 20 seconds).
private func processID(of target: String, in runner: CommandRunner) async -> Int32? {
    var pid: Int32?
    _ = await eventually(within: 90) {
        pid = runner.statistics[target]?.processID
        return pid != nil
    }
    return pid
}

/// A thread of this process's voluntary plus nonvoluntary context switches, from `/proc/self/task/TID/status`.
private func contextSwitches(thread: Int32) -> Int? {
    guard let text = try? String(contentsOfFile: "/proc/self/task/\(thread)/status", encoding: .utf8) else {
        return nil
    }
    var total = 0
    var found = 0
    for line in text.split(separator: "\n")
    where line.hasPrefix("voluntary_ctxt_switches:") || line.hasPrefix("nonvoluntary_ctxt_switches:") {
        guard let count = line.split(separator: ":").last.flatMap({ Int($0.trimmingCharacters(in: .whitespaces)) })
        else { return nil }
        total += count
        found += 1
    }
    return found == 2 ? total : nil
}

/// The environment a process was started with.
private func environment(of pid: Int32) throws -> [String: String] {
    let data = try Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/environ"))
    var result: [String: String] = [:]
    for entry in data.split(separator: 0) {
        let text = String(decoding: entry, as: UTF8.self)
        guard let equals = text.firstIndex(of: "=") else { continue }
        result[String(text[..<equals])] = String(text[text.index(after: equals)...])
    }
    return result
}

/// This process's resident memory, from `/proc/self/statm` (its second field, in pages).
private func residentBytes() -> Int {
    let text = (try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8)) ?? ""
    let pages = text.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}

/// The file offset of a process's descriptor, from its `/proc/PID/fdinfo` (`pos:`); nil if it cannot be read.
private func fileOffset(pid: Int32, descriptor: Int32) -> Int? {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/fdinfo/\(descriptor)", encoding: .utf8) else {
        return nil
    }
    return text.split(separator: "\n").first { $0.hasPrefix("pos:") }.flatMap {
        Int($0.dropFirst(4).trimmingCharacters(in: .whitespaces))
    }
}

/// The fields of `/proc/PID/stat` the tests look at.
private struct ProcessStat {
    var state: Character
    var parent: Int32
    var group: Int32
    var session: Int32

    init?(pid: Int32) {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        // After the command name (which may hold spaces and parentheses): state ppid pgrp session …
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 3, let state = fields[0].first, let parent = Int32(fields[1]),
            let group = Int32(fields[2]), let session = Int32(fields[3])
        else { return nil }
        self.state = state
        self.parent = parent
        self.group = group
        self.session = session
    }

    /// Running or sleeping: neither gone nor a zombie waiting for whoever inherited it.
    static func isAlive(_ pid: Int32) -> Bool {
        guard let stat = ProcessStat(pid: pid) else { return false }
        return stat.state != "Z" && stat.state != "X"
    }

    static func all() -> [(pid: Int32, stat: ProcessStat)] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { name in
            guard let pid = Int32(name), let stat = ProcessStat(pid: pid) else { return nil }
            return (pid, stat)
        }
    }

    /// Processes of the group that are alive (zombies excluded: whoever inherited them reaps them, and a zombie
    /// runs nothing).
    static func liveMembers(ofGroup group: Int32) -> [Int32] {
        all().filter { $0.stat.group == group && $0.stat.state != "Z" && $0.stat.state != "X" }.map(\.pid)
    }

    /// This process's children that exited and were not reaped.
    static func zombieChildren() -> [Int32] {
        let me = getpid()
        return all().filter { $0.stat.parent == me && $0.stat.state == "Z" }.map(\.pid)
    }
}

extension CommandRunner {
    /// ``stop(graceMicroseconds:)`` from a test's task: the blocking stop runs on a thread of its own, so no thread of
    /// the pool waits.
    fileprivate func shutdown(graceMicroseconds: UInt64) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread {
                self.stop(graceMicroseconds: graceMicroseconds)
                continuation.resume()
            }
        }
    }
}
