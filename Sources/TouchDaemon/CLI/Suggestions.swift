import ArgumentParser
import Foundation

extension Touchd {
    /// argument-parser's `main`, with touchd's did-you-mean (``suggestions(for:in:)``) for an unknown verb or option:
    /// argument-parser offers none for a verb (`touchd ctl status` was only an "unexpected argument") and picks an
    /// unrelated option for an abbreviation (`--prom` got `--json`, not `--prometheus`).
    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        do {
            var command = try parseAsRoot(arguments)
            try command.run()
        } catch {
            if let message = CommandLineSuggestions.message(fullMessage(for: error), arguments: arguments) {
                printError(message)
                Foundation.exit(exitCode(for: error).rawValue)
            }
            exit(withError: error)
        }
    }
}

/// The did-you-mean of the command line, worked out from argument-parser's description of the commands (the dump
/// `touchd generate-manual` reads too).
enum CommandLineSuggestions {
    /// argument-parser's error `message` for `arguments` with its first line improved, or nil to leave it as it is.
    static func message(_ message: String, arguments: [String]) -> String? {
        var lines = message.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard let first = lines.first,
            let dump = try? JSONDecoder().decode(Manual.Dump.self, from: Data(Touchd._dumpHelp().utf8))
        else { return nil }
        let (command, verbPosition) = Self.command(dump.command, arguments: arguments)
        if let match = first.wholeMatch(of: /Error: Unexpected argument '(.*)'/) {
            let word = String(match.1)
            let verbs = (command.subcommands ?? []).filter { $0.shouldDisplay != false && $0.commandName != "help" }
            guard verbPosition.map({ arguments[$0] == word }) == true, !verbs.isEmpty else { return nil }
            let hint = didYouMean(word, in: verbs.map(\.commandName), limit: 2)
            guard !hint.isEmpty else { return nil }
            lines[0] = "Error: '\(word)' is not a verb of \(commandPath(dump.command, arguments: arguments))\(hint)"
        } else if let match = first.wholeMatch(of: /Error: Unknown option '(--[^']*)'(\. Did you mean .*)?/) {
            let word = String(match.1)
            let options = (command.arguments ?? []).flatMap { argument in
                (argument.names ?? []).filter { $0.kind == "long" }.map { "--" + $0.name }
            }
            let hint = didYouMean(word, in: options, limit: 2)
            guard !hint.isEmpty else { return nil }
            lines[0] = "Error: Unknown option '\(word)'\(hint)"
        } else {
            return nil
        }
        return lines.joined(separator: "\n").trimmingCharacters(in: .newlines)
    }

    /// The deepest command the arguments name (options and their values skipped), and the index of the first
    /// argument that is not a verb of it, if any.
    private static func command(_ root: Manual.Command, arguments: [String]) -> (Manual.Command, Int?) {
        var command = root
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            if argument.hasPrefix("-") {
                let name = argument.drop { $0 == "-" }
                let takesValue =
                    !argument.contains("=")
                    && (command.arguments ?? []).contains { option in
                        option.kind == "option" && (option.names ?? []).contains { $0.name == name }
                    }
                index += takesValue ? 2 : 1
                continue
            }
            guard let next = command.subcommands?.first(where: { $0.commandName == argument }) else {
                return (command, index)
            }
            command = next
            index += 1
        }
        return (command, nil)
    }

    /// `touchd ctl`: the names of the commands the arguments go through.
    private static func commandPath(_ root: Manual.Command, arguments: [String]) -> String {
        var names = [root.commandName]
        var command = root
        for argument in arguments where !argument.hasPrefix("-") {
            guard let next = command.subcommands?.first(where: { $0.commandName == argument }) else { break }
            names.append(next.commandName)
            command = next
        }
        return names.joined(separator: " ")
    }
}
