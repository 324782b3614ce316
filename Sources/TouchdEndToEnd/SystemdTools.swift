import Foundation
import Glibc

/// What a tool (systemctl, journalctl, install, …) printed and how it ended.
struct ToolResult {
    let command: [String]
    /// nil when it did not end within its limit (it was killed) or could not be started.
    let status: ExitStatus?
    /// Standard output and standard error, interleaved as written, line by line.
    let output: [String]

    var succeeded: Bool { status == .exited(0) }

    /// `systemctl start touchd.service: exit status 1: Job for … failed.` for failure texts.
    var summary: String {
        let outcome = status.map(\.description) ?? "did not finish"
        let text = output.suffix(5).joined(separator: " | ")
        return "\(command.joined(separator: " ")): \(outcome)" + (text.isEmpty ? "" : ": \(text)")
    }
}

/// Runs the system's tools (for the systemd checks, and udevadm in the scenario), each with a time limit, with
/// touchd's service-manager variables removed from their environment. A tool is never published as the child to
/// SIGKILL: in the scenario that is touchd.
enum Tool {
    /// Runs `argv` (`argv[0]` an absolute path) and waits for it, at most `limit`.
    static func run(_ argv: [String], limit: Microseconds = 60_000_000, verbose: Bool) -> ToolResult {
        precondition(argv.first?.hasPrefix("/") == true, "tools are run by absolute path")
        if verbose { Console.line("run| \(argv.joined(separator: " "))") }
        let process: Daemon
        do {
            process = try Daemon(
                executable: argv[0], arguments: Array(argv.dropFirst()), environment: ["SYSTEMD_PAGER": "cat"],
                removing: Scenario.scrubbedEnvironment, echoPrefix: verbose ? "run| " : nil, published: false)
        } catch {
            return ToolResult(command: argv, status: nil, output: [error.description])
        }
        let deadline = monotonicNow() + limit
        let status = process.waitForExit(until: deadline)
        if status == nil { process.killAndReap() }
        process.waitForOutputEnd(until: monotonicNow() + 5_000_000)
        return ToolResult(command: argv, status: status, output: process.output.all)
    }

    static let systemctl = "/usr/bin/systemctl"
    static let journalctl = "/usr/bin/journalctl"
    static let udevadm = "/usr/bin/udevadm"
}

/// `systemctl show UNIT -p NAME…`, parsed.
struct UnitProperties {
    let values: [String: String]

    subscript(_ name: String) -> String? { values[name] }

    /// A property as a whole number (`NRestarts`, `MainPID`); nil when absent or not a number.
    func number(_ name: String) -> UInt64? { values[name].flatMap { UInt64($0) } }

    /// `ActiveState=active SubState=running …`, for failure texts.
    var summary: String {
        values.keys.sorted().map { "\($0)=\(values[$0]!)" }.joined(separator: " ")
    }

    /// Reads `names` of `unit`; nil (with the tool's result) when systemctl failed.
    static func read(_ unit: String, _ names: [String], verbose: Bool) -> Result<UnitProperties, ToolFailure> {
        let result = Tool.run([Tool.systemctl, "show", unit] + names.flatMap { ["-p", $0] }, verbose: verbose)
        guard result.succeeded else { return .failure(ToolFailure(result: result)) }
        var values: [String: String] = [:]
        for line in result.output {
            guard let equals = line.firstIndex(of: "=") else { continue }
            values[String(line[..<equals])] = String(line[line.index(after: equals)...])
        }
        return .success(UnitProperties(values: values))
    }
}

/// A tool that failed, as an error.
struct ToolFailure: Error, CustomStringConvertible {
    let result: ToolResult
    var description: String { result.summary }
}

/// One journal entry from `journalctl -o json`: its fields that have text values (binary or repeated fields are
/// left out).
struct JournalEntry {
    let fields: [String: String]

    subscript(_ name: String) -> String? { fields[name] }

    var message: String { fields["MESSAGE"] ?? "" }

    /// The fields, sorted, without journald's own (`_PID`, `__CURSOR`, …), for failure texts.
    var summary: String {
        fields.keys.filter { !$0.hasPrefix("_") }.sorted().map { "\($0)=\(fields[$0]!)" }.joined(separator: " ")
    }

    /// Parses one line of `journalctl -o json`; nil when it is not a JSON object.
    init?(jsonLine line: String) {
        guard let data = line.data(using: .utf8),
            let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
        else { return nil }
        var fields: [String: String] = [:]
        for (key, value) in object {
            if let text = value as? String { fields[key] = text }
        }
        self.fields = fields
    }

    /// The entries of `unit` in this boot.
    static func read(unit: String, verbose: Bool) -> Result<[JournalEntry], ToolFailure> {
        let result = Tool.run(
            [Tool.journalctl, "--boot", "--unit", unit, "--output", "json", "--no-pager"], verbose: false)
        guard result.succeeded else { return .failure(ToolFailure(result: result)) }
        let entries = result.output.compactMap(JournalEntry.init(jsonLine:))
        if verbose { Console.line("run| journalctl --unit \(unit): \(entries.count) entries") }
        return .success(entries)
    }
}
