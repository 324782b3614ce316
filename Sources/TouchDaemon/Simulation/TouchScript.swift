import TouchModel

/// The touch script format of DESIGN.md: one sample per line, `TIME_MS down|move|up|cancel
/// CONTACT [X Y]`, in output pixels; `#` starts a comment; blank lines are ignored. Consecutive
/// samples with the same time form one frame. Times must not go backwards.
enum TouchScript {
    struct Problem: Error, Hashable, Sendable {
        var line: Int
        var message: String
    }

    /// The largest time a script may use (about 11.5 days), so conversions never overflow.
    static let maximumTime: UInt64 = 1_000_000_000
    /// The largest contact number.
    static let maximumContact = 1_000_000
    /// The longest field quoted in a message; a longer one is cut, so that a hostile line cannot make a huge message.
    static let maximumQuotedField = 40

    /// The script's frames. Reads the text's UTF-8 bytes in place, a line at a time, and keeps no per-line arrays
    /// of strings: a script of many megabytes costs little more than its frames.
    static func parse(_ text: String) -> Result<[Frame], Problem> {
        var frames: [Frame] = []
        if let problem = forEachFrame(text, { frames.append($0) }) { return .failure(problem) }
        return .success(frames)
    }

    /// Checks the whole script without keeping its frames: the first problem, or nil.
    static func problem(in text: String) -> Problem? {
        forEachFrame(text) { _ in }
    }

    /// Hands each frame to `body` as soon as it is complete (the next line has a later time, or the text ends), so
    /// that a long script is played without holding its frames; returns the first problem, after the frames before
    /// it were handed over. Check with ``problem(in:)`` first to refuse a bad script before playing any of it.
    @discardableResult
    static func forEachFrame(_ text: String, _ body: (Frame) -> Void) -> Problem? {
        var current: Frame?
        var lastTime: UInt64 = 0
        var text = text
        let problem = text.withUTF8 { bytes -> Problem? in
            var line = 0
            var start = 0
            while start < bytes.count || (start == bytes.count && line == 0) {
                line += 1
                var end = start
                // Lines end at "\n" only; a "\r" before it (CRLF) or anywhere else counts as a blank, below.
                while end < bytes.count, bytes[end] != UInt8(ascii: "\n") { end += 1 }
                defer { start = end + 1 }
                switch parseLine(UnsafeBufferPointer(rebasing: bytes[start..<end]), line: line, after: lastTime) {
                case .failure(let problem):
                    return problem
                case .success(nil):
                    continue
                case .success(let (time, sample)?):
                    if current != nil, current?.time == .milliseconds(time) {
                        current?.samples.append(sample)
                    } else {
                        if let complete = current { body(complete) }
                        current = Frame(time: .milliseconds(time), samples: [sample])
                    }
                    lastTime = time
                }
            }
            return nil
        }
        if problem == nil, let last = current { body(last) }
        return problem
    }

    /// The sample of one line (without its "\n") and its time, nil for a blank or comment line.
    private static func parseLine(
        _ bytes: UnsafeBufferPointer<UInt8>, line: Int, after lastTime: UInt64
    ) -> Result<(UInt64, ContactSample)?, Problem> {
        // The fields before a '#': at most six are looked at (the sixth only to be named in a message).
        var fields: [String] = []
        var index = 0
        func isBlank(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0D }
        while index < bytes.count, bytes[index] != UInt8(ascii: "#"), fields.count < 6 {
            if isBlank(bytes[index]) {
                index += 1
                continue
            }
            let fieldStart = index
            while index < bytes.count, !isBlank(bytes[index]), bytes[index] != UInt8(ascii: "#") { index += 1 }
            fields.append(String(decoding: UnsafeBufferPointer(rebasing: bytes[fieldStart..<index]), as: UTF8.self))
        }
        if fields.isEmpty { return .success(nil) }
        func fail(_ message: String) -> Result<(UInt64, ContactSample)?, Problem> {
            .failure(Problem(line: line, message: message))
        }
        guard fields.count >= 3 else { return fail("expected TIME_MS down|move|up|cancel CONTACT [X Y]") }
        guard let time = UInt64(fields[0]), time <= maximumTime else {
            return fail("'\(quoted(fields[0]))' is not a time in milliseconds (0…\(maximumTime))")
        }
        guard time >= lastTime else {
            return fail("time \(time) ms is earlier than the previous line's \(lastTime) ms")
        }
        guard let contact = Int(fields[2]), (0...maximumContact).contains(contact) else {
            return fail("'\(quoted(fields[2]))' is not a contact number (0…\(maximumContact))")
        }
        let phase: ContactSample.Phase
        switch fields[1] {
        case "down": phase = .began
        case "move": phase = .moved
        case "up": phase = .ended
        case "cancel": phase = .cancelled
        default: return fail("'\(quoted(fields[1]))' is not one of down, move, up, cancel")
        }
        var location: Point?
        switch phase {
        case .began, .moved:
            guard fields.count >= 5, let x = Double(fields[3]), let y = Double(fields[4]), x.isFinite, y.isFinite else {
                return fail("\(fields[1]) needs finite X and Y pixel coordinates")
            }
            guard fields.count == 5 else { return fail("unexpected field '\(quoted(fields[5]))' after X and Y") }
            location = Point(x: x, y: y)
        case .ended, .cancelled:
            guard fields.count == 3 else { return fail("\(fields[1]) takes no coordinates") }
        }
        return .success((time, ContactSample(contact: contact, phase: phase, location: location)))
    }

    /// A field as a message shows it: cut to `maximumQuotedField` characters.
    private static func quoted(_ field: String) -> String {
        field.count <= maximumQuotedField ? field : field.prefix(maximumQuotedField) + "…"
    }
}
