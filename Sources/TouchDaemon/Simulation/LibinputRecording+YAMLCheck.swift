/// A check of a recording's YAML before Yams sees it. `libinput record` writes no anchors, aliases, tags or block
/// scalars, but YAML allows them, and aliases expand: nine lines that nest aliases nine deep make Yams build 9^9
/// strings ("billion laughs"), gigabytes from a file of a few hundred bytes, and aliases used as mapping keys make
/// even Yams' tree (which shares aliased nodes) hash them over and over. Yams offers no event API to see an alias
/// before it is expanded, so this scanner finds them in the text, as libyaml's scanner (the one Yams runs) would.
///
/// It follows libyaml's token rules for comments, quoted scalars, plain scalars, flow collections and indicators,
/// so an `&` or `*` inside a comment, a quoted string or the middle of a plain scalar (`AT&T`) is not taken for an
/// anchor or alias. The one thing it cannot know without building libyaml's indentation stack is whether a line
/// continues the plain scalar that ended the line before; there it follows both readings, so whatever libyaml
/// decides, an anchor or alias it would see is found. Block scalars (`|`, `>`) are refused outright, for the same
/// reason: where they end depends on that stack.
extension LibinputRecording {
    /// Flow collections (`[…]`, `{…}`) nested deeper than this are refused; libinput writes two levels.
    static let maximumFlowNesting = 32
    /// How many readings of the text the scanner follows at once; real recordings need one or two.
    static let maximumReadings = 16

    /// Where the scanner is at the end of a line, in one reading of the text.
    private struct Reading: Equatable {
        enum Mode: Equatable {
            case tokens
            case singleQuoted
            case doubleQuoted
        }
        var mode: Mode
        var flowLevel: Int
        /// The line ended inside a plain scalar, which libyaml continues on the next line when that line is
        /// indented enough (something only its indentation stack knows).
        var plainMayContinue: Bool
    }

    /// Why the scanner refused the text.
    private enum Finding: Error {
        case anchor, alias, blockScalar, tooDeep, tooAmbiguous
    }

    /// The first anchor, alias or other construct that `libinput record` never writes and that could make Yams
    /// expand the text, as a problem naming its line; nil when the text holds none.
    static func yamlProblem(in text: String) -> Problem? {
        var text = text
        return text.withUTF8 { bytes -> Problem? in
            var readings = [Reading(mode: .tokens, flowLevel: 0, plainMayContinue: false)]
            var start = 0
            var line = 1
            while true {
                var end = start
                while end < bytes.count, breakLength(bytes, at: end) == 0 { end += 1 }
                var next: [Reading] = []
                for reading in readings {
                    let outcomes: [Reading]
                    do throws(Finding) {
                        outcomes = try scan(bytes, from: start, to: end, reading)
                    } catch {
                        return problem(error, line: line)
                    }
                    for outcome in outcomes where !next.contains(outcome) { next.append(outcome) }
                }
                guard next.count <= maximumReadings else { return problem(.tooAmbiguous, line: line) }
                readings = next
                guard end < bytes.count else { return nil }
                start = end + breakLength(bytes, at: end)
                line += 1
            }
        }
    }

    private static func problem(_ finding: Finding, line: Int) -> Problem {
        let what: String
        switch finding {
        case .anchor: what = "YAML anchors (&) are not allowed in a libinput recording"
        case .alias: what = "YAML aliases (*) are not allowed in a libinput recording"
        case .blockScalar: what = "YAML block scalars (| and >) are not allowed in a libinput recording"
        case .tooDeep: what = "flow collections ([ ] and { }) nest deeper than \(maximumFlowNesting) levels"
        case .tooAmbiguous: what = "the YAML is too irregular to check for aliases"
        }
        return Problem(message: "\(what) (line \(line))")
    }

    /// The length of the line break at `index` (libyaml's: LF, CR, CR LF, NEL, LS, PS), 0 if there is none.
    private static func breakLength(_ bytes: UnsafeBufferPointer<UInt8>, at index: Int) -> Int {
        switch bytes[index] {
        case 0x0A: return 1
        case 0x0D: return index + 1 < bytes.count && bytes[index + 1] == 0x0A ? 2 : 1
        case 0xC2: return index + 1 < bytes.count && bytes[index + 1] == 0x85 ? 2 : 0
        case 0xE2:
            return index + 2 < bytes.count && bytes[index + 1] == 0x80
                && (bytes[index + 2] == 0xA8 || bytes[index + 2] == 0xA9) ? 3 : 0
        default: return 0
        }
    }

    private static func isBlank(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 }

    /// The readings a line leaves: one, or two when the line may continue the previous line's plain scalar.
    private static func scan(
        _ bytes: UnsafeBufferPointer<UInt8>, from start: Int, to end: Int, _ reading: Reading
    ) throws(Finding) -> [Reading] {
        guard reading.mode == .tokens, reading.plainMayContinue else {
            return [try scanTokens(bytes, line: start, from: start, to: end, reading, inPlain: false)]
        }
        var first = start
        while first < end, isBlank(bytes[first]) { first += 1 }
        // A blank line keeps the plain scalar open in one reading and ends it in the other; the open one covers both.
        if first == end { return [reading] }
        // As a new token.
        var outcomes = [try scanTokens(bytes, line: start, from: start, to: end, reading, inPlain: false)]
        // As more of the plain scalar, unless libyaml would end it here: a comment, or a document marker.
        let marker =
            first == start && end - start >= 3 && (bytes[start] == 0x2D || bytes[start] == 0x2E)
            && bytes[start + 1] == bytes[start] && bytes[start + 2] == bytes[start]
            && (end - start == 3 || isBlank(bytes[start + 3]))
        if bytes[first] != 0x23, !marker {
            let continued = try scanTokens(bytes, line: start, from: first, to: end, reading, inPlain: true)
            if continued != outcomes[0] { outcomes.append(continued) }
        }
        return outcomes
    }

    /// Scans `bytes[start..<end]` (the rest of the line that starts at `lineStart`, without its break) as libyaml's
    /// scanner would, from `reading`, and returns where the line leaves it. `inPlain`: `start` is inside a plain
    /// scalar.
    private static func scanTokens(
        _ bytes: UnsafeBufferPointer<UInt8>, line lineStart: Int, from start: Int, to end: Int, _ reading: Reading,
        inPlain: Bool
    ) throws(Finding) -> Reading {
        var mode = reading.mode
        var flowLevel = reading.flowLevel
        var plain = inPlain
        var index = start
        /// Whether the byte after `index` ends a token (libyaml's IS_BLANKZ: a blank, a break or the end).
        func blankAfter(_ index: Int) -> Bool { index + 1 >= end || isBlank(bytes[index + 1]) }
        func isFlowIndicator(_ byte: UInt8) -> Bool {
            byte == 0x2C || byte == 0x5B || byte == 0x5D || byte == 0x7B || byte == 0x7D  // , [ ] { }
        }
        while true {
            switch mode {
            case .singleQuoted:
                // Up to the closing quote; '' is a quote inside the scalar. The scalar may go on over lines.
                while index < end {
                    if bytes[index] == 0x27 {
                        if index + 1 < end, bytes[index + 1] == 0x27 {
                            index += 2
                            continue
                        }
                        mode = .tokens
                        index += 1
                        break
                    }
                    index += 1
                }
                if mode != .tokens { return Reading(mode: mode, flowLevel: flowLevel, plainMayContinue: false) }
            case .doubleQuoted:
                // Up to the closing quote; a backslash escapes the next character (a line break too).
                while index < end {
                    if bytes[index] == 0x5C {
                        index += 2
                        continue
                    }
                    if bytes[index] == 0x22 {
                        mode = .tokens
                        index += 1
                        break
                    }
                    index += 1
                }
                if mode != .tokens { return Reading(mode: mode, flowLevel: flowLevel, plainMayContinue: false) }
            case .tokens where plain:
                // A plain scalar ends at ": " (or ":" at the end of the line), at " #" (a comment), and in a flow
                // collection at , [ ] { }; anything else, & and * included, is its text.
                while index < end {
                    let byte = bytes[index]
                    if isBlank(byte) {
                        var next = index
                        while next < end, isBlank(bytes[next]) { next += 1 }
                        if next == end { return Reading(mode: .tokens, flowLevel: flowLevel, plainMayContinue: true) }
                        if bytes[next] == 0x23 {
                            return Reading(mode: .tokens, flowLevel: flowLevel, plainMayContinue: false)
                        }
                        index = next
                        continue
                    }
                    if byte == 0x3A, blankAfter(index) || flowLevel > 0 && isFlowIndicator(bytes[index + 1]) { break }
                    if flowLevel > 0, isFlowIndicator(byte) { break }
                    index += 1
                }
                if index == end { return Reading(mode: .tokens, flowLevel: flowLevel, plainMayContinue: true) }
                plain = false
            case .tokens:
                // libyaml skips a byte order mark at the start of a line, then blanks, then a comment.
                if index == lineStart, end - index >= 3, bytes[index] == 0xEF, bytes[index + 1] == 0xBB,
                    bytes[index + 2] == 0xBF
                {
                    index += 3
                }
                while index < end, isBlank(bytes[index]) { index += 1 }
                guard index < end, bytes[index] != 0x23 else {
                    return Reading(mode: .tokens, flowLevel: flowLevel, plainMayContinue: false)
                }
                let byte = bytes[index]
                if index == lineStart, byte == 0x25 {  // a directive (%YAML, %TAG) takes the whole line
                    return Reading(mode: .tokens, flowLevel: flowLevel, plainMayContinue: false)
                }
                if index == lineStart, end - index >= 3, byte == 0x2D || byte == 0x2E, bytes[index + 1] == byte,
                    bytes[index + 2] == byte, end - index == 3 || isBlank(bytes[index + 3])
                {
                    index += 3  // --- or ...
                    continue
                }
                switch byte {
                case 0x5B, 0x7B:  // [ {
                    flowLevel += 1
                    guard flowLevel <= maximumFlowNesting else { throw .tooDeep }
                    index += 1
                case 0x5D, 0x7D:  // ] }
                    flowLevel = max(0, flowLevel - 1)
                    index += 1
                case 0x2C:  // ,
                    index += 1
                case 0x2D where blankAfter(index):  // - (block entry)
                    index += 1
                case 0x3F where flowLevel > 0 || blankAfter(index):  // ? (key)
                    index += 1
                case 0x3A where flowLevel > 0 || blankAfter(index):  // : (value)
                    index += 1
                case 0x26: throw .anchor  // &
                case 0x2A: throw .alias  // *
                case 0x7C, 0x3E: throw .blockScalar  // | >
                case 0x21:  // ! a tag: up to a blank (or a flow indicator in a flow collection)
                    index += 1
                    while index < end, !isBlank(bytes[index]), !(flowLevel > 0 && isFlowIndicator(bytes[index])) {
                        index += 1
                    }
                case 0x27:
                    mode = .singleQuoted
                    index += 1
                case 0x22:
                    mode = .doubleQuoted
                    index += 1
                default:
                    plain = true
                    index += 1
                }
            }
        }
    }
}
