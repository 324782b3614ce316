import Foundation
import Testing

@testable import TouchDaemon

/// The built `touchd` executable, run as a user runs it: exit statuses, stdout and stderr of the
/// command-line contract (README and docs/configuration.md).
@Suite("touchd executable")
struct CheckCommandTests {
    @Test("check on the example: exit 0 and a summary on stdout")
    func checkValid() throws {
        // A copy with a known mode: a checkout made under umask 002 is group-writable, which check warns about.
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("kiosk.toml").path
        try FileManager.default.copyItem(atPath: TestSupport.kioskConfig, toPath: path)
        #expect(chmod(path, 0o644) == 0)
        let run = try TouchdProcess.run(["check", "--config", path])
        #expect(run.status == 0)
        // The example's click sound needs alsa-utils, which a build machine may well not have (C13: a warning).
        let aplay = "/usr/bin/aplay"
        #expect(
            run.standardError
                == (ExecutableProgram.warnings(for: aplay).isEmpty
                    ? ""
                    : "\(path):30:9: warning: targets.click.exec[0]: '\(aplay)' does not exist; the target's commands "
                        + "fail until it is installed\n"))
        #expect(
            run.standardOutput == """
                \(path): ok
                  output 1920×1080, rotation 0°, seat seat0
                  2 screens, 3 groups, 6 controls (4 buttons, 1 toggle, 1 slider), 1 gesture
                  3 targets (2 socket, 1 exec), 10 actions
                  idle after 120 seconds without a touch: screen attract, 2 idle actions, the wake touch reaches nobody

                """)
    }

    @Test("check on a broken file: exit 78 and PATH:LINE:COLUMN: error: MESSAGE lines on stderr")
    func checkBroken() throws {
        let url = TestSupport.resourceDirectory("BrokenConfigs").appendingPathComponent("multiple-problems.toml")
        let expected = TestSupport.expectations(in: [UInt8](try Data(contentsOf: url)))
            .map { $0.replacingOccurrences(of: "PATH", with: url.path, options: .anchored) }
        let run = try TouchdProcess.run(["check", "--config", url.path])
        #expect(run.status == 78)
        #expect(run.standardOutput == "")
        #expect(run.errorLines == expected)
        #expect(run.errorLines.count == 9)
        for line in run.errorLines {
            #expect(line.hasPrefix(url.path + ":"))
            #expect(line.dropFirst(url.path.count).wholeMatch(of: /:[1-9][0-9]*:[1-9][0-9]*: error: \S.*/) != nil)
        }
    }

    @Test("check without a position: PATH: error: KEY.PATH: MESSAGE")
    func checkWithoutPosition() throws {
        let url = TestSupport.resourceDirectory("BrokenConfigs").appendingPathComponent("missing-output.toml")
        let run = try TouchdProcess.run(["check", "--config", url.path])
        #expect(run.status == 78)
        #expect(
            run.errorLines == [
                "\(url.path): error: output: missing required table [output] (the screen size in pixels)"
            ])
    }

    @Test("simulate prints what the library computes, and refuses a bad script with exit 65")
    func simulate() throws {
        let script = TestSupport.packageRoot.appendingPathComponent("examples/checkout.touch").path
        let run = try TouchdProcess.run(["simulate", "--config", TestSupport.kioskConfig, script])
        #expect(run.status == 0)
        #expect(run.standardError == "")
        #expect(
            run.standardOutput.split(separator: "\n").map(String.init) == (try GoldenTests.simulate(script: script)))

        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let bad = directory.appendingPathComponent("bad.touch").path
        try Data("0 down 0 10 10\n# a comment\n5 up 0 10 10\n".utf8).write(to: URL(fileURLWithPath: bad))
        let failed = try TouchdProcess.run(["simulate", "--config", TestSupport.kioskConfig, bad])
        #expect(failed.status == 65)
        #expect(failed.standardOutput == "")
        #expect(failed.errorLines == ["\(bad):3:8: error: up takes no coordinates"])
    }

    @Test("simulate - reads the script from standard input: the same lines as from the file")
    func simulateStandardInput() throws {
        let config = TestSupport.packageRoot.appendingPathComponent("config/ticket-machine.toml").path
        let script = TestSupport.packageRoot.appendingPathComponent("examples/ticket-machine.touch")
        let run = try TouchdProcess.run(
            ["simulate", "--config", config, "-"], standardInput: try Data(contentsOf: script))
        #expect(run.status == 0)
        #expect(run.standardError == "")
        #expect(
            run.standardOutput.split(separator: "\n").map(String.init)
                == (try GoldenTests.golden("ticket-machine.jsonl")))
    }

    @Test("simulate reports every script problem at once with line:column, and a touch outside the output as a warning")
    func simulateAllProblems() throws {
        let config = TestSupport.packageRoot.appendingPathComponent("config/ticket-machine.toml").path
        let script = "0 down 0 5000 10\n10 screen tikets\n20 up 0 1\n"
        let failed = try TouchdProcess.run(["simulate", "--config", config, "-"], standardInput: Data(script.utf8))
        #expect(failed.status == 65)
        #expect(failed.standardOutput == "")
        #expect(
            failed.errorLines == [
                "<stdin>:1:10: warning: down at (5000, 10) is outside the output (1080×1920): no touchscreen reports a "
                    + "touch there",
                "<stdin>:2:11: error: no screen called 'tikets' (did you mean 'tickets'?)",
                "<stdin>:3:9: error: up takes no coordinates",
            ])
        // A valid script with a touch outside: played, with the warning on stderr and the JSON lines on stdout.
        let warned = try TouchdProcess.run(
            ["simulate", "--config", config, "-"], standardInput: Data("0 down 0 5000 10\n10 up 0\n".utf8))
        #expect(warned.status == 0)
        #expect(warned.errorLines.count == 1 && warned.errorLines[0].hasPrefix("<stdin>:1:10: warning: "))
    }
}
