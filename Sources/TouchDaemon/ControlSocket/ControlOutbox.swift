/// One connection's lines waiting to be written, bounded in lines and bytes (docs/control-socket.md, "Limits").
///
/// A line is a `head` that belongs to this connection (it holds the sequence number, when the line has one) and a
/// `body` that may be shared with other connections: an event's members are encoded once and every subscriber's
/// queue holds the same array storage.
///
/// Sequence numbers are assigned here, when a line is queued, so they grow by one per sequenced line in the order
/// the lines will be written.
///
/// Coalescing: a motion event whose `coalescingKey` matches a queued event that was not yet started is written
/// **in that event's place**: the queued event keeps its position and its sequence number and takes the new body.
/// The subscriber sees the latest value, at the time of the first one, and no gap in `seq`. An event that has begun
/// to be written is never touched; the new one is queued behind it. Nor is one with a line without a coalescing key
/// (a discrete event, a response) queued after it: replacing it would move the newer motion ahead of that line (a
/// drag ahead of the touchDragExit that came before it).
struct ControlOutbox {
    /// What `append` did.
    enum Outcome: Equatable {
        case queued
        /// Replaced a queued event with the same coalescing key.
        case coalesced
        /// No room (lines or bytes): nothing was queued.
        case full
    }

    struct Line {
        var head: [UInt8]
        var body: [UInt8]
        var coalescingKey: String?
        /// Nil for a line without a sequence number.
        var seq: UInt64?

        var size: Int { head.count + body.count }
    }

    let maxLines: Int
    let maxBytes: Int
    private var lines: [Line] = []
    /// Index in `lines` of the first line not yet written whole; the lines before it are written and wait to be
    /// compacted away.
    private var start = 0
    /// The ordinal (queue position since the connection began) of `lines[start]`.
    private var firstOrdinal: UInt64 = 0
    /// The ordinal of the queued event with each coalescing key.
    private var keyed: [String: UInt64] = [:]
    /// The ordinal of the last line queued without a coalescing key: keyed events before it are not replaced.
    private var barrier: UInt64?
    /// Bytes of every queued line, the one being written included (whole).
    private(set) var bytes = 0
    /// Bytes of the first line already written.
    private(set) var written = 0
    /// The next sequence number.
    private(set) var nextSeq: UInt64 = 1

    init(maxLines: Int, maxBytes: Int) {
        self.maxLines = maxLines
        self.maxBytes = maxBytes
    }

    var count: Int { lines.count - start }
    var isEmpty: Bool { count == 0 }

    /// Queues a line without a sequence number (it ends with its newline). `force` ignores the bounds: for the one
    /// line that ends a connection.
    mutating func append(plain line: [UInt8], force: Bool = false) -> Outcome {
        guard force || fits(line.count) else { return .full }
        push(Line(head: line, body: [], coalescingKey: nil, seq: nil))
        return .queued
    }

    /// Queues a sequenced line with the next sequence number (or coalesces it, see the type's comment); `body`
    /// must end with the line's newline.
    mutating func append(
        _ line: ControlProtocol.SequencedLine, coalescingKey: String? = nil, force: Bool = false
    ) -> Outcome {
        if let coalescingKey, let ordinal = keyed[coalescingKey], ordinal >= firstOrdinal,
            !(ordinal == firstOrdinal && written > 0), barrier.map({ ordinal > $0 }) ?? true
        {
            let index = start + Int(ordinal - firstOrdinal)
            bytes += line.body.count - lines[index].body.count
            lines[index].body = line.body
            return .coalesced
        }
        let head = Self.head(line, seq: nextSeq)
        guard force || fits(head.count + line.body.count) else { return .full }
        if let coalescingKey { keyed[coalescingKey] = firstOrdinal + UInt64(count) }
        push(Line(head: head, body: line.body, coalescingKey: coalescingKey, seq: nextSeq))
        nextSeq += 1
        return .queued
    }

    /// Rewrites the last queued line (keeping its sequence number) if it has not begun to be written; returns
    /// whether it did. The overflow marker uses it to report lines dropped after it was queued.
    mutating func rewriteLast(_ line: ControlProtocol.SequencedLine) -> Bool {
        guard count > 0, !(count == 1 && written > 0), let seq = lines[lines.count - 1].seq else { return false }
        let head = Self.head(line, seq: seq)
        bytes += head.count + line.body.count - lines[lines.count - 1].size
        lines[lines.count - 1].head = head
        lines[lines.count - 1].body = line.body
        return true
    }

    /// The first line and how much of it was written; nil when empty.
    var first: (line: Line, written: Int)? {
        isEmpty ? nil : (lines[start], written)
    }

    /// Records that `count` more bytes of the first line went out; removes it once whole.
    mutating func didWrite(_ count: Int) {
        guard !isEmpty else { return }
        written += count
        let line = lines[start]
        guard written >= line.size else { return }
        if let key = line.coalescingKey, keyed[key] == firstOrdinal { keyed[key] = nil }
        bytes -= line.size
        written = 0
        lines[start] = Line(head: [], body: [], coalescingKey: nil, seq: nil)
        start += 1
        firstOrdinal += 1
        if start == lines.count {
            lines.removeAll(keepingCapacity: true)
            start = 0
        } else if start >= 32 && start * 2 >= lines.count {
            lines.removeFirst(start)
            start = 0
        }
    }

    private func fits(_ size: Int) -> Bool {
        count < maxLines && bytes <= maxBytes - size
    }

    private mutating func push(_ line: Line) {
        if line.coalescingKey == nil { barrier = firstOrdinal + UInt64(count) }
        bytes += line.size
        lines.append(line)
    }

    private static func head(_ line: ControlProtocol.SequencedLine, seq: UInt64) -> [UInt8] {
        Array((line.lead + String(seq) + line.trail).utf8)
    }
}
