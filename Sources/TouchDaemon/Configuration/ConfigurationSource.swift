import Glibc

/// Reading a configuration file without trusting it: regular files only, at most
/// ``maximumSize`` bytes, valid UTF-8 without NUL bytes. The TOML parser bounds everything else
/// (nesting, key parts and lengths, depth) itself.
enum ConfigurationSource {
    static let maximumSize = 1 << 20

    /// The file's text, or the reason it cannot be used: not a regular file, larger than `limit`
    /// bytes, not UTF-8 or holding NUL bytes. `examine` sees the status of the regular file opened (fstat of the
    /// descriptor that is read, so a check of its owner and mode is about these bytes, not whatever the path names a
    /// moment earlier or later), before it is read.
    static func read(
        path: String, limit: Int = maximumSize, examine: (stat) -> Void = { _ in }
    ) -> Result<String, ConfigurationProblem> {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)
        guard descriptor >= 0 else {
            return .failure(ConfigurationProblem("cannot open: \(String(cString: strerror(errno)))"))
        }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            return .failure(ConfigurationProblem("cannot stat: \(String(cString: strerror(errno)))"))
        }
        guard (status.st_mode & S_IFMT) == S_IFREG else {
            return .failure(ConfigurationProblem("not a regular file"))
        }
        examine(status)
        guard status.st_size <= limit else {
            return .failure(ConfigurationProblem("file is \(status.st_size) bytes; the limit is \(limit)"))
        }
        // Read with a limit even though fstat said the size: the file may grow while we read.
        return read(descriptor: descriptor, limit: limit)
    }

    /// Everything `descriptor` gives until its end (a file, or standard input: a pipe, a terminal), as text; at most
    /// `limit` bytes, valid UTF-8 without NUL bytes. The descriptor stays open.
    static func read(descriptor: Int32, limit: Int) -> Result<String, ConfigurationProblem> {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while bytes.count <= limit {
            let read = buffer.withUnsafeMutableBytes { buffer in
                Result { () throws(SystemCallError) in
                    try systemCall("read") { Glibc.read(descriptor, buffer.baseAddress, buffer.count) }
                }
            }
            let count: Int
            switch read {
            case .success(let value): count = value
            case .failure(let error):
                return .failure(ConfigurationProblem("cannot read: \(String(cString: strerror(error.errno)))"))
            }
            if count == 0 { break }
            bytes.append(contentsOf: buffer[0..<count])
        }
        guard bytes.count <= limit else {
            return .failure(ConfigurationProblem("file is larger than \(limit) bytes"))
        }
        return text(from: bytes)
    }

    /// Validates raw bytes as text: UTF-8 and no NUL.
    static func text(from bytes: [UInt8]) -> Result<String, ConfigurationProblem> {
        guard let text = String(validating: bytes, as: UTF8.self) else {
            let offset = firstInvalidUTF8Offset(bytes)
            let (line, column) = position(ofByte: offset, in: bytes)
            return .failure(ConfigurationProblem(line: line, column: column, "invalid UTF-8"))
        }
        if let nul = bytes.firstIndex(of: 0) {
            let (line, column) = position(ofByte: nul, in: bytes)
            return .failure(ConfigurationProblem(line: line, column: column, "NUL byte in the file"))
        }
        return .success(text)
    }

    /// The offset of the first byte of the first sequence that is not valid UTF-8 (a stray
    /// continuation byte, a byte that never starts a sequence, an overlong form, a surrogate, a
    /// truncated sequence).
    private static func firstInvalidUTF8Offset(_ bytes: [UInt8]) -> Int {
        var parser = Unicode.UTF8.ForwardParser()
        var iterator = bytes.makeIterator()
        var offset = 0
        while true {
            switch parser.parseScalar(from: &iterator) {
            case .valid(let scalar): offset += scalar.count
            case .error: return offset
            case .emptyInput: return Swift.max(0, bytes.count - 1)
            }
        }
    }

    private static func position(ofByte offset: Int, in bytes: [UInt8]) -> (Int, Int) {
        var line = 1
        var column = 1
        for byte in bytes[0..<Swift.min(offset, bytes.count)] {
            if byte == UInt8(ascii: "\n") {
                line += 1
                column = 1
            } else if (byte & 0xC0) != 0x80 {
                column += 1
            }
        }
        return (line, column)
    }
}
