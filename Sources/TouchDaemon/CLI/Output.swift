import Glibc

/// Writes one line to standard error (unbuffered, so it interleaves correctly with other output).
func printError(_ line: String) {
    var bytes = Array(line.utf8)
    bytes.append(UInt8(ascii: "\n"))
    // Nowhere to report a failure to write the report.
    try? writeAll(bytes, to: STDERR_FILENO)
}
