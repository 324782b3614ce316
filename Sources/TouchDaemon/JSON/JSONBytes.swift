/// Writes one JSON message straight into the storage of the array that will be sent, for the messages the input
/// thread builds between a touch and its socket target (issue 17): a fixed key is one copy of a static string, a
/// string with nothing to escape one copy of its UTF-8, a number its digits, with no intermediate array or string.
///
/// The caller gives an upper bound of the bytes it will write (``bound(strings:numbers:fixed:)``); every write checks
/// it, so a wrong bound stops the process at the write rather than corrupting memory, and the bound's arithmetic
/// saturates, so no input can make it wrap.
struct JSONBytes: ~Copyable {
    private let base: UnsafeMutablePointer<UInt8>
    private let capacity: Int
    private(set) var count = 0

    /// The most bytes a number takes: 20 digits and a sign for an integer; a `Double`'s shortest form is shorter.
    static let numberBound = 32

    /// An upper bound for a message of `strings` strings of `stringBytes` UTF-8 bytes in all (each quoted, every byte
    /// escaped at worst as `\u00XX`), `numbers` numbers and `fixed` bytes of keys and punctuation. Saturates.
    static func bound(stringBytes: Int, strings: Int, numbers: Int, fixed: Int) -> Int {
        let (escaped, escapedOverflow) = stringBytes.multipliedReportingOverflow(by: 6)
        let (quotes, quotesOverflow) = strings.multipliedReportingOverflow(by: 2)
        let (digits, digitsOverflow) = numbers.multipliedReportingOverflow(by: numberBound)
        guard !escapedOverflow, !quotesOverflow, !digitsOverflow else { return Int.max }
        return fixed.addingSaturating(escaped).addingSaturating(quotes).addingSaturating(digits)
    }

    /// Builds an array of at most `capacity` bytes with `body`.
    static func build(capacity: Int, _ body: (inout JSONBytes) -> Void) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: capacity) { buffer, initialized in
            var writer = JSONBytes(base: buffer.baseAddress!, capacity: buffer.count)
            body(&writer)
            initialized = writer.count
        }
    }

    /// Writes at most `capacity` bytes with `body` into `buffer` from its start and returns how many it wrote.
    /// `buffer` is made larger (never smaller) when it holds fewer than `capacity` bytes; what lies beyond the count
    /// is left over from earlier messages.
    static func write(into buffer: inout [UInt8], capacity: Int, _ body: (inout JSONBytes) -> Void) -> Int {
        if buffer.count < capacity { buffer = [UInt8](repeating: 0, count: capacity) }
        return buffer.withUnsafeMutableBufferPointer { bytes in
            var writer = JSONBytes(base: bytes.baseAddress!, capacity: capacity)
            body(&writer)
            return writer.count
        }
    }

    private init(base: UnsafeMutablePointer<UInt8>, capacity: Int) {
        self.base = base
        self.capacity = capacity
    }

    private mutating func reserve(_ length: Int) -> UnsafeMutablePointer<UInt8> {
        precondition(length <= capacity - count, "JSONBytes: the message outgrew its bound")
        defer { count += length }
        return base + count
    }

    mutating func byte(_ value: UInt8) {
        reserve(1).pointee = value
    }

    /// Text known at compile time, written as it is: keys with their quotes and punctuation, e.g. `,"target":`.
    mutating func raw(_ text: StaticString) {
        let length = text.utf8CodeUnitCount
        reserve(length).update(from: text.utf8Start, count: length)
    }

    /// Bytes written as they are (already JSON).
    mutating func raw(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let source = bytes.baseAddress else { return }
        reserve(bytes.count).update(from: source, count: bytes.count)
    }

    /// `value` as a JSON string, escaped as ``JSONLine/appendString(_:to:)-([UInt8])`` escapes it.
    mutating func string(_ value: String) {
        // In one pass for a string with nothing to escape (names, device names: every message's case): its bytes are
        // written as they are read, and only a byte that needs escaping sends it the long way, from its start.
        let utf8 = value.utf8
        let length = utf8.count
        if length <= capacity - count - 2 {
            let start = base + count
            var cursor = start + 1
            var plain = true
            for byte in utf8 {
                if JSONLine.needsEscape(byte) {
                    plain = false
                    break
                }
                cursor.pointee = byte
                cursor += 1
            }
            if plain {
                start.pointee = UInt8(ascii: "\"")
                cursor.pointee = UInt8(ascii: "\"")
                count += length + 2
                return
            }
        }
        var escaped: [UInt8] = []
        JSONLine.appendString(value, to: &escaped)
        escaped.withUnsafeBufferPointer { raw($0) }
    }

    /// `key` (its quotes, colon and the comma before it, as written) and `value`; nothing when `value` is nil.
    mutating func member(_ key: StaticString, _ value: String?) {
        guard let value else { return }
        raw(key)
        string(value)
    }

    mutating func member(_ key: StaticString, _ value: Int?) {
        guard let value else { return }
        raw(key)
        integer(value)
    }

    mutating func member(_ key: StaticString, _ value: Double?) {
        guard let value else { return }
        raw(key)
        number(value)
    }

    /// `value` in decimal.
    mutating func integer(_ value: Int) {
        // The digits from the last, 21 bytes on (a sign and 20 digits at most; the bound leaves 32 for each number),
        // then moved to where they belong: one pass, where counting the digits first was a second loop of divisions.
        precondition(capacity - count >= 21, "JSONBytes: the message outgrew its bound")
        let start = base + count
        let end = start + 21
        var cursor = end
        var magnitude = value.magnitude
        repeat {
            cursor -= 1
            cursor.pointee = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: magnitude % 10)
            magnitude /= 10
        } while magnitude > 0
        if value < 0 {
            cursor -= 1
            cursor.pointee = UInt8(ascii: "-")
        }
        let length = end - cursor
        // Forwards, byte by byte: the digits lie after their place, and a copy this short costs less than a call.
        for offset in 0..<length { start[offset] = cursor[offset] }
        count += length
    }

    /// A number as ``JSONLine`` writes it (whole numbers without a fraction, `null` when not finite).
    mutating func number(_ value: Double) {
        // JSONLine.number's rule, without making a String for the common whole number (a pixel position).
        if abs(value) < 1e15, let whole = Int(exactly: value) {
            integer(whole)
            return
        }
        var text = JSONLine.number(value)
        text.withUTF8 { raw($0) }
    }
}

extension Int {
    /// `self + other`, sticking at `Int.max` (both are never negative here).
    func addingSaturating(_ other: Int) -> Int {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? Int.max : sum
    }
}
