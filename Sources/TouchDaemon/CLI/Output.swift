import Glibc

/// Writes one line to standard error (unbuffered, so it interleaves correctly with other output). Control characters
/// in it, which may come from a device's name, a configuration's value or a control-socket server, are written as
/// visible escapes (``TerminalText``); newlines stay, for messages of several lines.
func printError(_ line: String) {
    var bytes = Array(TerminalText.escaped(line, keepingNewlines: true).utf8)
    bytes.append(UInt8(ascii: "\n"))
    // Nowhere to report a failure to write the report.
    try? writeAll(bytes, to: STDERR_FILENO)
}

/// Writes one line of text that may hold untrusted characters to standard output, with every control character
/// escaped (``TerminalText``): `touchd ctl`'s human-readable output, which shows what the server sent.
func printUntrusted(_ line: String) {
    print(TerminalText.escaped(line))
}
