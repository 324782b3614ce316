import Glibc
import TOML

/// Where `touchd ctl` finds the control socket: `--socket PATH`; else `[control_socket] socket` of `--config PATH`;
/// else of `/etc/touchd/touchd.toml` when that file is readable; else `/run/touchd/control.sock`.
///
/// Only that one key is read, so a configuration with other problems (an unknown key, a broken control, even a TOML
/// syntax error elsewhere) still names its socket: ctl is what an operator reaches for when something is wrong.
enum ControlSocketLocator {
    static let defaultConfiguration = "/etc/touchd/touchd.toml"
    static let defaultSocket = Configuration.ControlSocket().path

    /// Why no socket path could be found.
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// The socket to connect to. `readable` says whether the default configuration can be read.
    static func socket(
        socket: String?, configuration: String?, readable: (String) -> Bool = { access($0, R_OK) == 0 }
    ) -> Result<String, Failure> {
        if let socket { return .success(socket) }
        let path: String
        if let configuration {
            path = configuration
        } else if readable(defaultConfiguration) {
            path = defaultConfiguration
        } else {
            return .success(defaultSocket)
        }
        switch ConfigurationSource.read(path: path) {
        case .failure(let problem):
            return .failure(
                Failure(description: "\(problem.formatted(path: path)) (give the socket with --socket PATH)"))
        case .success(let text):
            return Self.socket(inConfiguration: text, path: path)
        }
    }

    /// `[control_socket] socket` of a configuration's text, or the default when it has none.
    static func socket(inConfiguration text: String, path: String) -> Result<String, Failure> {
        let found: (value: TOMLValue, position: TOMLPosition?)?
        if let root = try? TOMLParser.parse(text) {
            if let table = root["control_socket"]?.table, let value = table["socket"] {
                found = (value, table.position(of: "socket"))
            } else {
                found = nil
            }
        } else {
            // Not TOML as a whole: the line that sets the key can still be read on its own.
            found = scan(text)
        }
        guard let found else { return .success(defaultSocket) }
        let position = found.position.map { "\(path):\($0.line):\($0.column)" } ?? path
        guard let socket = found.value.string else {
            return .failure(Failure(description: "\(position): control_socket.socket must be a string"))
        }
        if let problem = SocketPath.problem(socket) {
            return .failure(Failure(description: "\(position): control_socket.socket: \(problem)"))
        }
        return .success(socket)
    }

    /// The value of `socket = "…"` under a `[control_socket]` header (or `control_socket.socket = "…"` before any
    /// header), read line by line from a file the TOML parser refused; nil when there is none.
    static func scan(_ text: String) -> (value: TOMLValue, position: TOMLPosition?)? {
        var table = ""
        var number = 0
        for rawLine in text.split(separator: "\n", omittingEmptySubsequences: false) {
            number += 1
            let line = rawLine.drop { $0 == " " || $0 == "\t" }
            if line.hasPrefix("[") {
                let name = line.dropFirst().prefix { $0 != "]" }
                table = line.hasPrefix("[[") ? "[[]]" : name.filter { $0 != " " && $0 != "\t" && $0 != "\"" }
                continue
            }
            let key: String
            switch table {
            case "control_socket": key = "socket"
            case "": key = "control_socket.socket"
            default: continue
            }
            guard line.hasPrefix(key) else { continue }
            let rest = line.dropFirst(key.count).drop { $0 == " " || $0 == "\t" }
            guard rest.first == "=" else { continue }
            // Parsed on its own, the assignment's value gets the TOML parser's checks (quotes, escapes).
            guard let value = try? TOMLParser.parse("v" + rest)["v"] else { continue }
            let column = rawLine.count - line.count + 1
            return (value, TOMLPosition(line: number, column: column))
        }
        return nil
    }
}
