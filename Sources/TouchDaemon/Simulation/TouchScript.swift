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

    static func parse(_ text: String) -> Result<[Frame], Problem> {
        var frames: [Frame] = []
        var lastTime: UInt64 = 0
        // "\r\n" is one Character, so splitting on "\n" alone would read a CRLF script as one line.
        let lines = text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" })
        for (offset, rawLine) in lines.enumerated() {
            let line = offset + 1
            let content = rawLine.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            let fields = content.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" })
            if fields.isEmpty { continue }
            guard fields.count >= 3 else {
                return .failure(Problem(line: line, message: "expected TIME_MS down|move|up|cancel CONTACT [X Y]"))
            }
            guard let time = UInt64(fields[0]), time <= maximumTime else {
                return .failure(
                    Problem(line: line, message: "'\(fields[0])' is not a time in milliseconds (0…\(maximumTime))"))
            }
            guard time >= lastTime else {
                return .failure(
                    Problem(line: line, message: "time \(time) ms is earlier than the previous line's \(lastTime) ms"))
            }
            guard let contact = Int(fields[2]), (0...maximumContact).contains(contact) else {
                return .failure(
                    Problem(line: line, message: "'\(fields[2])' is not a contact number (0…\(maximumContact))"))
            }
            let phase: ContactSample.Phase
            switch fields[1] {
            case "down": phase = .began
            case "move": phase = .moved
            case "up": phase = .ended
            case "cancel": phase = .cancelled
            default:
                return .failure(Problem(line: line, message: "'\(fields[1])' is not one of down, move, up, cancel"))
            }
            var location: Point?
            switch phase {
            case .began, .moved:
                guard fields.count == 5, let x = Double(fields[3]), let y = Double(fields[4]), x.isFinite, y.isFinite
                else {
                    return .failure(Problem(line: line, message: "\(fields[1]) needs finite X and Y pixel coordinates"))
                }
                location = Point(x: x, y: y)
            case .ended, .cancelled:
                guard fields.count == 3 else {
                    return .failure(Problem(line: line, message: "\(fields[1]) takes no coordinates"))
                }
            }
            let sample = ContactSample(contact: contact, phase: phase, location: location)
            let instant = Instant.milliseconds(time)
            if let last = frames.last, last.time == instant, time == lastTime {
                frames[frames.count - 1].samples.append(sample)
            } else {
                frames.append(Frame(time: instant, samples: [sample]))
            }
            lastTime = time
        }
        return .success(frames)
    }
}
