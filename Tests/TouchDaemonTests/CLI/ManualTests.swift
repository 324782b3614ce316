import ArgumentParser
import Foundation
import Testing

@testable import TouchDaemon

/// touchd(1) and the shell completions come from the command-line definitions, so every command
/// and option is in them; checked on the roff text, without a roff formatter.
@Suite("touchd generate-manual and completions")
struct ManualTests {
    /// Every displayed command below `command`, with its path (`touchd ctl state`).
    static func commands(_ command: any ParsableCommand.Type, path: [String]) -> [(String, any ParsableCommand.Type)] {
        let configuration = command.configuration
        let name = command._commandName
        let here = path + [name]
        guard configuration.shouldDisplay else { return [] }
        return [(here.joined(separator: " "), command)]
            + configuration.subcommands.flatMap { commands($0, path: here) }
    }

    @Test("the page has a section for every command, every option of each, and no hidden command")
    func everyCommandAndOption() throws {
        let run = try TouchdProcess.run(["generate-manual"])
        #expect(run.status == 0)
        #expect(run.standardError == "")
        let page = run.standardOutput
        let lines = page.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines.contains(".TH TOUCHD 1 \"\" \"touchd \(Touchd.version)\" \"touchd manual\""))
        for heading in ["NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "EXIT STATUS", "FILES", "SEE ALSO"] {
            #expect(lines.contains(".SH \(heading)"), "no section \(heading)")
        }
        let sections = lines.filter { $0.hasPrefix(".SS ") }
        let expected = Touchd.configuration.subcommands.flatMap { Self.commands($0, path: ["touchd"]) }
        #expect(sections == expected.map { ".SS \"\(Manual.escape($0.0))\"" })
        #expect(sections.contains(".SS \"touchd render\"") && sections.contains(".SS \"touchd ctl monitor\""))
        #expect(!page.contains("generate\\-manual"))
        // Each section lists its command's options, spelled as roff needs them (\- for each hyphen).
        let dump = try JSONDecoder().decode(Manual.Dump.self, from: Data(Touchd._dumpHelp().utf8))
        func check(_ command: Manual.Command, path: [String]) {
            let name = (path + [command.commandName]).joined(separator: " ")
            guard command.shouldDisplay != false, command.commandName != "help" else { return }
            if path.count > 0 {
                let start = lines.firstIndex(of: ".SS \"\(Manual.escape(name))\"") ?? lines.count
                let end =
                    lines[(start + 1)...].firstIndex { $0.hasPrefix(".SS ") || $0.hasPrefix(".SH ") } ?? lines.count
                let body = lines[start..<end].joined(separator: "\n")
                for argument in command.arguments ?? [] where argument.shouldDisplay != false {
                    for spelling in argument.names ?? [] where spelling.kind == "long" {
                        guard !["help", "version"].contains(spelling.name) else { continue }
                        #expect(
                            body.contains("\\fB\\-\\-\(Manual.escape(spelling.name))\\fR"),
                            "\(name): --\(spelling.name)")
                    }
                }
            }
            for subcommand in command.subcommands ?? [] { check(subcommand, path: path + [command.commandName]) }
        }
        check(dump.command, path: [])
    }

    @Test("text is made safe for roff: backslashes, hyphens and control characters at a line's start")
    func escaping() {
        #expect(Manual.escape("a-b \\n") == "a\\-b \\en")
        #expect(Manual.escape(".TH evil\n'x\nfine") == "\\&.TH evil\n\\&'x\nfine")
    }

    @Test("a dump of another version is refused with a precise error, never a wrong page")
    func unknownDump() {
        #expect(
            Manual.page(fromDump: "{\"serializationVersion\":1,\"command\":{\"commandName\":\"touchd\"}}", version: "1")
                == .failure(Manual.Failure(message: "the command-line description has version 1, not 0")))
        #expect(throws: Never.self) {
            if case .success = Manual.page(fromDump: "not json", version: "1") { Issue.record("accepted") }
        }
    }

    @Test("completion scripts for bash, zsh and fish name every subcommand", arguments: ["bash", "zsh", "fish"])
    func completions(_ shell: String) throws {
        let run = try TouchdProcess.run(["--generate-completion-script", shell])
        #expect(run.status == 0)
        for name in ["run", "check", "simulate", "render", "calibrate", "ctl", "monitor"] {
            #expect(run.standardOutput.contains(name), "\(shell): \(name)")
        }
        #expect(!run.standardOutput.contains("generate-manual"))
    }

    /// A flag and its `--no-` inversion get one entry, their text said once, not the same text under
    /// each name; EXIT STATUS names every code the commands use (render's 65 and 66, run's 78 without /dev/uinput).
    @Test("an inverted flag is one entry, and EXIT STATUS has render's and run's codes")
    func invertedFlagAndExitStatuses() throws {
        let page = try Manual.page(fromDump: Touchd._dumpHelp(), version: "1").get()
        let help = "Send each touch's messages under SCHED_IDLE"
        #expect(page.components(separatedBy: help).count == 2, "the --yield-on-send text is not said once")
        #expect(page.contains("\\fB\\-\\-yield\\-on\\-send\\fR, \\fB\\-\\-no\\-yield\\-on\\-send\\fR\n\(help)"))
        #expect(page.contains("Default: \\-\\-no\\-yield\\-on\\-send."))
        let status = try #require(
            page.components(separatedBy: ".SH EXIT STATUS").last?.components(separatedBy: ".SH ").first)
        #expect(status.contains(".B 66\nrender: the \\-\\-background file cannot be opened or read."))
        #expect(status.contains("calibrate: the fit is refused (an error above \\-\\-max-error-px"))
        #expect(status.contains("render: the \\-\\-background file is not an image"))
        #expect(status.contains("/dev/uinput"))
    }
}
