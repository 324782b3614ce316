import Foundation
import Glibc
import Testing

@testable import TouchDaemon

/// Configurations written by an attacker or a careless integrator (the hostile-input issue, items 6 and 7): socket
/// paths the kernel would cut short, hints that name programs that do not exist, cycles that printed megabytes, files
/// others can change (C5) and command programs anyone can replace (C13).
@Suite("Configuration: hostile input")
struct HostileConfigurationTests {
    static let output = "[output]\nwidth = 1920\nheight = 1080\n"

    /// The warning lines of a load that must succeed, with the path replaced by `PATH`.
    static func warningLines(
        _ result: Result<Configuration, ConfigurationError>, path: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) -> [String] {
        switch result {
        case .success(let configuration):
            return configuration.warnings.map { "PATH" + $0.formatted(path: path).dropFirst(path.count) }
        case .failure(let error):
            Issue.record("the configuration was rejected: \(error)", sourceLocation: sourceLocation)
            return []
        }
    }

    // MARK: - Socket paths

    /// A socket target in a directory every local user can write to can be bound first by anyone, who then receives
    /// every action touchd sends with its position: a warning at the key, with the fix.
    @Test("a socket target in a shared writable directory is a warning naming the directory and the fix")
    func socketTargetInSharedDirectory() throws {
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let sticky = directory.appendingPathComponent("sticky").path
        let open = directory.appendingPathComponent("open").path
        let own = directory.appendingPathComponent("own").path
        for (folder, mode) in [(sticky, 0o1777), (open, 0o777), (own, 0o750)] {
            #expect(mkdir(folder, 0o700) == 0 && chmod(folder, mode_t(mode)) == 0)
        }
        let paths = [
            "/tmp/kiosk.sock", "/var/tmp/kiosk.sock", "/dev/shm/kiosk.sock", "/tmp/kiosk-touchd-missing/touch.sock",
            sticky + "/k.sock", open + "/k.sock", own + "/k.sock", "/run/kiosk/touch.sock",
        ]
        var text = Self.output
        for (index, path) in paths.enumerated() {
            text += "\n[targets.t\(index)]\nsocket = \"\(path)\"\nresponds_to = [\"a\"]\n"
        }
        let warnings = Self.warningLines(ConfigurationLoader.load(text: text, path: "p.toml"), path: "p.toml")
        func warning(_ index: Int, _ path: String, under shared: String) -> String {
            "PATH:\(6 + 4 * index):1: warning: targets.t\(index).socket: '\(path)' is under \(shared), a directory "
                + "every local user can write to: another user can create the socket (or its directory) there first, "
                + "or again after the kiosk application stops, and receive every action touchd sends, with its "
                + "position; put it in a directory only the kiosk's user can write, such as /run/kiosk"
        }
        #expect(
            warnings == [
                warning(0, paths[0], under: "/tmp"), warning(1, paths[1], under: "/var/tmp"),
                warning(2, paths[2], under: "/dev/shm"), warning(3, paths[3], under: "/tmp"),
                warning(4, paths[4], under: sticky), warning(5, paths[5], under: open),
            ])

        // touchd check prints it (and touchd run logs it) like every other warning.
        let config = directory.appendingPathComponent("touchd.toml").path
        try Data((Self.output + "\n[targets.kiosk]\nsocket = \"/tmp/kiosk.sock\"\nresponds_to = [\"a\"]\n").utf8)
            .write(to: URL(fileURLWithPath: config))
        let checked = try TouchdProcess.run(["check", "--config", config])
        #expect(checked.status == 0)
        #expect(checked.errorLines.count == 1)
        let expected = "\(config):6:1: warning: targets.kiosk.socket: '/tmp/kiosk.sock' is under /tmp"
        #expect(checked.errorLines.first?.hasPrefix(expected) == true)
    }

    @Test(
        "a socket path the kernel cannot bind as written is refused with the reason",
        arguments: [
            (
                "/run/kiosk\0/touch.sock",
                "the path holds a NUL byte (after 10 bytes); a socket path cannot contain NUL, and the kernel would "
                    + "cut it short there"
            ),
            (
                "\0touchd",
                "the path holds a NUL byte (after 0 bytes); a socket path cannot contain NUL, and the kernel would cut it short there"
            ),
            ("/run/kiosk/", "'/run/kiosk/' ends with '/': name the socket file, not a directory"),
            ("/" + String(repeating: "s", count: 107), "the path is 108 bytes; a Unix socket path holds at most 107"),
            (
                "run/touch.sock",
                "'run/touch.sock' is not an absolute path (abstract and relative socket names are refused)"
            ),
        ])
    func impossibleSocketPaths(_ path: String, _ message: String) {
        #expect(SocketPath.problem(path) == message)
    }

    @Test("a socket path of 107 bytes is the longest accepted")
    func longestSocketPath() {
        #expect(SocketPath.problem("/" + String(repeating: "s", count: 106)) == nil)
        #expect(SocketPath.problem("/run/kiosk/touch.sock") == nil)
    }

    @Test("a trailing slash is refused at load, for a target and for the control socket")
    func trailingSlash() {
        let text =
            Self.output + """
                [control_socket]
                socket = "/run/touchd/"

                [targets.kiosk]
                socket = "/run/kiosk/"
                responds_to = ["pay"]
                """
        #expect(
            TestSupport.problemLines(ConfigurationLoader.load(text: text, path: "x.toml")) == [
                "PATH:5:1: error: control_socket.socket: '/run/touchd/' ends with '/': name the socket file, not a "
                    + "directory",
                "PATH:8:1: error: targets.kiosk.socket: '/run/kiosk/' ends with '/': name the socket file, not a "
                    + "directory",
            ])
    }

    /// A NUL written as an escape reaches the decoder (TOMLKit cut strings at the first NUL, so `run` bound the
    /// truncated path) and is refused there.
    @Test("a \\u0000 escape in a socket path is refused at load")
    func nulEscapeInSocketPath() {
        let text =
            Self.output + """
                [control_socket]
                socket = "/run/touchd/control\\u0000.sock"

                [targets.kiosk]
                socket = "/run/kiosk\\u0000/touch.sock"
                responds_to = ["pay"]
                """
        let lines = TestSupport.problemLines(ConfigurationLoader.load(text: text, path: "x.toml"))
        #expect(lines.count == 2)
        #expect(lines.allSatisfy { $0.contains("NUL") }, "\(lines)")
    }

    // MARK: - Relative programs

    @Test("the hint for a relative program names an existing program, never a name glued onto a directory")
    func relativeProgramSuggestion() {
        let installed: Set = ["/usr/bin/true", "/usr/sbin/nologin", "/bin/true"]
        let exists = { installed.contains($0) }
        #expect(ExecutableProgram.suggestion(for: "bin/true", isExecutable: exists) == "/usr/bin/true")
        #expect(ExecutableProgram.suggestion(for: "true", isExecutable: exists) == "/usr/bin/true")
        #expect(ExecutableProgram.suggestion(for: "./nologin", isExecutable: exists) == "/usr/sbin/nologin")
        #expect(ExecutableProgram.suggestion(for: "aplay", isExecutable: exists) == nil)
        #expect(ExecutableProgram.suggestion(for: "bin/", isExecutable: { _ in true }) == nil)
        #expect(ExecutableProgram.suggestion(for: "..", isExecutable: { _ in true }) == nil)
        #expect(ExecutableProgram.suggestion(for: "", isExecutable: { _ in true }) == nil)
    }

    @Test("exec = [\"bin/true\"] suggests where true really is")
    func binTrue() throws {
        let real = try #require(ExecutableProgram.suggestion(for: "true"), "no true in the standard directories")
        #expect(real.hasSuffix("/true"))
        #expect(ExecutableProgram.isExecutableFile(real))
        let text = Self.output + "\n[targets.t]\nexec = [\"bin/true\"]\nresponds_to = [\"x\"]\n"
        let lines = TestSupport.problemLines(ConfigurationLoader.load(text: text, path: "x.toml"))
        #expect(
            lines == [
                "PATH:6:9: error: targets.t.exec[0]: 'bin/true' is not an absolute path; touchd does not search PATH "
                    + "(did you mean '\(real)'?)"
            ])
        #expect(!lines.joined().contains("bin/bin/true"))
    }

    // MARK: - Cycles

    @Test("a ring of 1,000 groups is one short line, from the loader and from touchd check")
    func thousandGroupCycle() throws {
        var text = Self.output
        for index in 0..<1_000 {
            text += "\n[[group]]\nid = \"g\(index)\"\nparent = \"g\((index + 1) % 1_000)\"\n"
        }
        let expected =
            "PATH:7:1: error: group[0].parent: parent cycle of 1000 groups: g0 → g1 → g2 → g3 → … → g999 → g0"
        #expect(TestSupport.problemLines(ConfigurationLoader.load(text: text, path: "ring.toml")) == [expected])

        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("ring.toml").path
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        let run = try TouchdProcess.run(["check", "--config", path])
        #expect(run.status == ExitStatus.configuration)
        #expect(run.standardOutput == "")
        // It was 1,000 lines and 9 MB.
        #expect(run.errorLines == [expected.replacingOccurrences(of: "PATH", with: path)])
        #expect(run.standardError.utf8.count < 200 + path.utf8.count)
    }

    @Test("one cycle per knot, at its first declared member; tails into a cycle are not members")
    func cyclesPerKnot() {
        // a ⇄ b ⇄ c is one knot; d leads into it; e → e; f → g → h → f is a second ring.
        let edges: [(id: String, next: [String])] = [
            ("a", ["b"]), ("b", ["a", "c"]), ("c", ["b"]), ("d", ["a"]), ("e", ["e"]), ("f", ["g"]), ("g", ["h"]),
            ("h", ["f", "unknown"]),
        ]
        let cycles = DependencyCycles.find(edges)
        #expect(
            cycles == [
                DependencyCycles.Cycle(members: ["a", "b"], others: ["c"]),
                DependencyCycles.Cycle(members: ["e"], others: []),
                DependencyCycles.Cycle(members: ["f", "g", "h"], others: []),
            ])
        #expect(
            cycles.map { $0.describe(key: "requires_failure_of", kind: "gesture") } == [
                "requires_failure_of cycle: a → b → a; 1 more gesture is on cycles with it: c",
                "requires_failure_of cycle: e → e",
                "requires_failure_of cycle: f → g → h → f",
            ])
    }

    @Test("a knot of 256 gestures, each waiting for all the others, is one bounded line")
    func completeGestureKnot() {
        let ids = (0..<256).map { "r\($0)" }
        var text = Self.output
        for id in ids {
            let others = ids.filter { $0 != id }.map { "\"\($0)\"" }.joined(separator: ", ")
            text += "\n[[gesture]]\nid = \"\(id)\"\nkind = \"tap\"\nrequires_failure_of = [\(others)]\n"
        }
        let lines = TestSupport.problemLines(ConfigurationLoader.load(text: text, path: "knot.toml"))
        #expect(
            lines == [
                "PATH:8:1: error: gesture[0].requires_failure_of: requires_failure_of cycle: r0 → r1 → r0; 254 more "
                    + "gestures are on cycles with it: r2, r3, r4, …"
            ])
    }

    @Test("touchd check prints at most 100 problems, then how many more")
    func problemLinesAreCapped() throws {
        var text = Self.output
        for index in 0..<1_000 { text += "\n[[group]]\nid = \"g\(index)\"\nparent = \"missing\"\n" }
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("many.toml").path
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        let run = try TouchdProcess.run(["check", "--config", path])
        #expect(run.status == ExitStatus.configuration)
        #expect(run.errorLines.count == 101)
        #expect(run.errorLines.first == "\(path):7:1: error: group[0].parent: unknown group 'missing'")
        #expect(run.errorLines.last == "\(path): error: 900 more problems not shown")
    }

    // MARK: - C13: command programs

    @Test("C13: a missing, non-executable or non-file program, or one anyone can replace, is a warning")
    func programWarnings() throws {
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let open = directory.appendingPathComponent("open")
        let sticky = directory.appendingPathComponent("sticky")
        for folder in [open, sticky] {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
        }
        // chmod, not the creation mode: the umask would take the bits away.
        #expect(chmod(open.path, 0o777) == 0)
        #expect(chmod(sticky.path, 0o1777) == 0)
        let script = Data("#!/bin/sh\n".utf8)
        let replaceable = open.appendingPathComponent("click").path
        let inSticky = sticky.appendingPathComponent("click").path
        let plain = directory.appendingPathComponent("plain").path
        let writable = directory.appendingPathComponent("writable").path
        let good = directory.appendingPathComponent("good").path
        for (path, mode) in [(replaceable, 0o755), (inSticky, 0o755), (plain, 0o644), (writable, 0o777), (good, 0o755)]
        {
            try script.write(to: URL(fileURLWithPath: path))
            #expect(chmod(path, mode_t(mode)) == 0)
        }
        let missing = directory.appendingPathComponent("not-installed").path
        let targets = [
            ("a", replaceable), ("b", inSticky), ("c", plain), ("d", writable), ("e", good), ("f", missing),
            ("g", directory.path),
        ]
        var text = Self.output
        for (name, program) in targets {
            text += "\n[targets.\(name)]\nexec = [\"\(program)\", \"--flag\"]\nresponds_to = [\"x\"]\n"
        }
        // A shell target's program is /bin/sh; its command line is not looked into.
        text += "\n[targets.s]\nexec = [\"\(missing) --flag\"]\nshell = true\nresponds_to = [\"x\"]\n"
        let warnings = Self.warningLines(ConfigurationLoader.load(text: text, path: "p.toml"), path: "p.toml")
        #expect(
            warnings == [
                "PATH:6:9: warning: targets.a.exec[0]: '\(replaceable)' is under \(open.path), which anyone can write "
                    + "to (mode 0777, no sticky bit): anyone could replace the program; chmod o-w \(open.path), or "
                    + "install the program where only root can write",
                "PATH:14:9: warning: targets.c.exec[0]: '\(plain)' is not executable (mode 0644); chmod +x it, or run "
                    + "it through its interpreter",
                "PATH:18:9: warning: targets.d.exec[0]: '\(writable)' is writable by anyone (mode 0777): anyone could "
                    + "change what touchd runs; chmod o-w it",
                "PATH:26:9: warning: targets.f.exec[0]: '\(missing)' does not exist; the target's commands fail until "
                    + "it is installed",
                "PATH:30:9: warning: targets.g.exec[0]: '\(directory.path)' is a directory, not a program",
            ])
    }

    @Test("C13: a link into a directory anyone can write to is followed")
    func programThroughLink() throws {
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let open = directory.appendingPathComponent("open")
        try FileManager.default.createDirectory(at: open, withIntermediateDirectories: false)
        #expect(chmod(open.path, 0o777) == 0)
        let program = open.appendingPathComponent("click").path
        try Data("#!/bin/sh\n".utf8).write(to: URL(fileURLWithPath: program))
        #expect(chmod(program, 0o755) == 0)
        let link = directory.appendingPathComponent("click").path
        #expect(symlink(program, link) == 0)
        let directories = ExecutableProgram.directories(of: link)
        #expect(directories.contains(directory.path))
        #expect(directories.contains { $0.hasSuffix("/open") })
        let warnings = ExecutableProgram.warnings(for: link)
        #expect(warnings.count == 1)
        #expect(warnings.first?.contains("which anyone can write to (mode 0777, no sticky bit)") == true)
    }

    @Test("C13: touchd check prints the warnings and still exits 0")
    func checkPrintsProgramWarnings() throws {
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let missing = directory.appendingPathComponent("not-installed").path
        let path = directory.appendingPathComponent("touchd.toml").path
        let text = Self.output + "\n[targets.click]\nexec = [\"\(missing)\"]\nresponds_to = [\"click\"]\n"
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        #expect(chmod(path, 0o644) == 0)
        let run = try TouchdProcess.run(["check", "--config", path])
        #expect(run.status == 0)
        #expect(run.standardOutput.hasPrefix("\(path): ok\n"))
        #expect(
            run.errorLines == [
                "\(path):6:9: warning: targets.click.exec[0]: '\(missing)' does not exist; the target's commands fail "
                    + "until it is installed"
            ])
        for line in run.errorLines {
            #expect(line.dropFirst(path.count).wholeMatch(of: /:[1-9][0-9]*:[1-9][0-9]*: warning: \S+: \S.*/) != nil)
        }
    }

    // MARK: - C5: who may change the configuration file

    @Test(
        "C5: the owner and mode decide, whatever user runs the tests",
        arguments: [
            // owner, mode, touchd's uid, expected message (nil: fine)
            (0, 0o100644, 0, nil),
            (0, 0o100600, 1000, nil),
            (1000, 0o100644, 1000, nil),
            (
                0, 0o100664, 0,
                "the file is writable by its group (owner uid 0, mode 0664): whoever can change it decides what touchd "
                    + "does, including the commands it runs; chmod go-w F"
            ),
            (
                0, 0o100646, 0,
                "the file is writable by others (owner uid 0, mode 0646): whoever can change it decides what touchd "
                    + "does, including the commands it runs; chmod go-w F"
            ),
            (
                1000, 0o100644, 0,
                "the file is not owned by root (owner uid 1000, mode 0644): whoever can change it decides what touchd "
                    + "does, including the commands it runs; chown root F"
            ),
            (
                1000, 0o100666, 999,
                "the file is writable by its group and others and owned by neither root nor touchd's uid 999 (owner "
                    + "uid 1000, mode 0666): whoever can change it decides what touchd does, including the commands it "
                    + "runs; chmod go-w F and chown root F"
            ),
        ] as [(Int, Int, Int, String?)])
    func permissionRules(_ owner: Int, _ mode: Int, _ user: Int, _ expected: String?) {
        #expect(
            ConfigurationFile.permissionProblem(path: "F", owner: uid_t(owner), mode: mode_t(mode), user: uid_t(user))
                == expected)
    }

    @Test("C5: a group- or world-writable file is a warning from check, and refused with --strict-permissions")
    func checkPermissions() throws {
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("touchd.toml").path
        try Data((Self.output + "\n[targets.kiosk]\nsocket = \"/run/k.sock\"\nresponds_to = [\"a\"]\n").utf8)
            .write(to: URL(fileURLWithPath: path))
        #expect(chmod(path, 0o644) == 0)
        let clean = try TouchdProcess.run(["check", "--config", path, "--strict-permissions"])
        #expect(clean.status == 0)
        #expect(clean.standardError == "")

        #expect(chmod(path, 0o666) == 0)
        let reason =
            "the file is writable by its group and others (owner uid \(geteuid()), mode 0666): whoever can change it "
            + "decides what touchd does, including the commands it runs; chmod go-w \(path)"
        let warned = try TouchdProcess.run(["check", "--config", path])
        #expect(warned.status == 0)
        #expect(warned.standardOutput.hasPrefix("\(path): ok\n"))
        #expect(warned.errorLines == ["\(path): warning: \(reason)"])

        let refused = try TouchdProcess.run(["check", "--config", path, "--strict-permissions"])
        #expect(refused.status == ExitStatus.configuration)
        #expect(refused.standardOutput == "")
        #expect(refused.errorLines == ["\(path): error: \(reason)"])

        // Giving a file away takes root; as anyone else, the file is theirs and touchd runs as them: nothing to test.
        guard geteuid() == 0 else { return }
        #expect(chmod(path, 0o644) == 0)
        #expect(chown(path, 65_534, 65_534) == 0)
        let foreign = try TouchdProcess.run(["check", "--config", path, "--strict-permissions"])
        #expect(foreign.status == ExitStatus.configuration)
        #expect(
            foreign.errorLines == [
                "\(path): error: the file is not owned by root (owner uid 65534, mode 0644): whoever can change it "
                    + "decides what touchd does, including the commands it runs; chown root \(path)"
            ])
    }

    @Test("C5: touchd run logs the warning at start and at every reload; --strict-permissions refuses to start")
    func runPermissions() throws {
        let fixture = try TouchdProcess.Fixture()
        let path = fixture.config.path
        #expect(chmod(path, 0o666) == 0)
        let warning = "warning: \(path): the file is writable by its group and others"

        let daemon = try fixture.start()
        defer { if daemon.process.isRunning { daemon.signal(SIGKILL) } }
        #expect(fixture.notify.next()?.first == "READY=1", "stderr:\n\(daemon.errorText)")
        #expect(daemon.errorText.components(separatedBy: warning).count - 1 == 1)
        daemon.signal(SIGHUP)
        #expect(fixture.notify.next()?.first == "RELOADING=1")
        #expect(fixture.notify.next()?.first == "READY=1")
        #expect(daemon.errorText.components(separatedBy: warning).count - 1 == 2)
        daemon.signal(SIGTERM)
        #expect(daemon.exitStatus() == 0)

        let strict = try TouchdProcess.start(
            config: path, notify: fixture.notify, directory: fixture.directory, extraArguments: ["--strict-permissions"]
        )
        #expect(strict.exitStatus() == ExitStatus.configuration)
        #expect(strict.errorText.contains("error: \(path): the file is writable by its group and others"))
        #expect(fixture.notify.next(within: 1)?.contains("READY=1") == false)
    }

    /// A configuration in a directory others can write to is as unsafe as a writable file: they can rename another
    /// file into its place. Every directory the lookup goes through counts; a sticky one (/tmp)
    /// does not, since only an entry's owner may rename it there.
    @Test("C5: a directory of the path that others can write to, or that another user owns, is a warning too")
    func checkDirectoryPermissions() throws {
        guard geteuid() == 0 else { return }  // giving a directory away takes root
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let open = directory.appendingPathComponent("open").path
        let inner = open + "/etc"
        #expect(mkdir(open, 0o755) == 0 && chmod(open, 0o777) == 0)
        #expect(mkdir(inner, 0o755) == 0)
        let path = inner + "/touchd.toml"
        try Data(Self.output.utf8).write(to: URL(fileURLWithPath: path))
        #expect(chmod(path, 0o644) == 0)
        let reason =
            "the directory \(open) is writable by its group and others (owner uid 0, mode 0777): whoever can change it "
            + "can put another file in the configuration's place, and so decides what touchd does, including the "
            + "commands it runs; chmod go-w \(open)"
        let warned = try TouchdProcess.run(["check", "--config", path])
        #expect(warned.status == 0)
        #expect(warned.errorLines == ["\(path): warning: \(reason)"])
        let refused = try TouchdProcess.run(["check", "--config", path, "--strict-permissions"])
        #expect(refused.status == ExitStatus.configuration)
        #expect(refused.standardOutput == "")
        #expect(refused.errorLines == ["\(path): error: \(reason)"])

        // Sticky, as /tmp is: nobody but the owner of an entry may rename or remove it.
        #expect(chmod(open, 0o1777) == 0)
        let sticky = try TouchdProcess.run(["check", "--config", path, "--strict-permissions"])
        #expect(sticky.status == 0)
        #expect(sticky.standardError == "")

        // Another user's directory: that user can replace the file whatever its mode.
        #expect(chmod(open, 0o755) == 0)
        #expect(chown(inner, 65_534, 65_534) == 0)
        let foreign = try TouchdProcess.run(["check", "--config", path, "--strict-permissions"])
        #expect(foreign.status == ExitStatus.configuration)
        #expect(
            foreign.errorLines == [
                "\(path): error: the directory \(inner) is not owned by root (owner uid 65534, mode 0755): whoever can "
                    + "change it can put another file in the configuration's place, and so decides what touchd does, "
                    + "including the commands it runs; chown root \(inner)"
            ])
    }

}
