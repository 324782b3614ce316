import Foundation
import Glibc
import Logging
import Testing

@testable import TouchDaemon

/// Native journal entries: field names, the wire format, MESSAGE_ID, and the fallback to `<N>` lines.
struct JournalFieldTests {
    @Test(
        "metadata keys become TOUCHD_ fields",
        arguments: [
            ("device.name", "TOUCHD_DEVICE_NAME"),
            ("control.id", "TOUCHD_CONTROL_ID"),
            ("grace_ms", "TOUCHD_GRACE_MS"),
            ("device-size.mm", "TOUCHD_DEVICE_SIZE_MM"),
            ("errno", "TOUCHD_ERRNO"),
            ("x y=ü", "TOUCHD_X_Y___"),
            ("", "TOUCHD_"),
        ])
    func fieldNames(key: String, name: String) {
        #expect(JournalLogHandler.fieldName(forMetadataKey: key) == name)
    }

    @Test func fieldNamesAreCutAtSixtyFourCharacters() {
        let name = JournalLogHandler.fieldName(forMetadataKey: String(repeating: "k", count: 100))
        #expect(name.count == 64)
        #expect(name.hasPrefix("TOUCHD_KKK"))
    }

    @Test func plainValuesAreKeyEqualsValueLines() {
        let bytes = JournalLogHandler.encode([("MESSAGE", "hello"), ("PRIORITY", "6")])
        #expect(bytes == Array("MESSAGE=hello\nPRIORITY=6\n".utf8))
    }

    /// A value with a newline goes as `NAME\n`, its length in 64-bit little-endian, the bytes and `\n`.
    @Test func valuesWithNewlinesUseTheBinaryForm() {
        let bytes = JournalLogHandler.encode([("MESSAGE", "two\nlines"), ("PRIORITY", "3")])
        var expected = Array("MESSAGE\n".utf8)
        expected += [9, 0, 0, 0, 0, 0, 0, 0]
        expected += Array("two\nlines\n".utf8)
        expected += Array("PRIORITY=3\n".utf8)
        #expect(bytes == expected)
        #expect(Self.decode(bytes) == ["MESSAGE": ["two\nlines"], "PRIORITY": ["3"]])
    }

    @Test func anEntryCarriesPriorityIdentifierMessageIDAndMetadata() {
        var metadata: Logger.Metadata = ["device.name": "ILITEK Multi-Touch", "generation": "2"]
        metadata.merge(MessageID.deviceAdded.metadata) { $1 }
        let fields = JournalLogHandler.journalFields(
            level: .info, message: "touchscreen added", metadata: metadata,
            code: .init(file: "TouchDaemon/Daemon.swift", line: 162, function: "run(signals:)"))
        #expect(
            fields.map(\.name) == [
                "MESSAGE", "PRIORITY", "SYSLOG_IDENTIFIER", "MESSAGE_ID", "TOUCHD_DEVICE_NAME", "TOUCHD_GENERATION",
                "CODE_FILE", "CODE_LINE", "CODE_FUNC",
            ])
        let values = Dictionary(fields.map { ($0.name, $0.value) }) { first, _ in first }
        // The text is the line's, without the message id: the journal shows it as its own field.
        #expect(values["MESSAGE"] == #"touchscreen added device.name="ILITEK Multi-Touch" generation=2"#)
        #expect(values["PRIORITY"] == "6")
        #expect(values["SYSLOG_IDENTIFIER"] == "touchd")
        #expect(values["MESSAGE_ID"] == "9a16739d14bc45708216bd37b8d234a0")
        #expect(values["TOUCHD_DEVICE_NAME"] == "ILITEK Multi-Touch")
        #expect(values["CODE_LINE"] == "162")
    }

    /// The id may come as any metadata value that prints as one.
    @Test func aMessageIDMayBeAnyMetadataValue() {
        let fields = JournalLogHandler.journalFields(
            level: .info, message: "m", metadata: ["message_id": .stringConvertible(MessageID.shutdown)], code: nil)
        #expect(fields.contains { $0.name == "MESSAGE_ID" && $0.value == "1cb89e33dfe14c62810b99c60230c317" })
    }

    /// A `message_id` that is not 32 lowercase hex digits is not a MESSAGE_ID; it is kept as an ordinary field.
    @Test func aMalformedMessageIDStaysAnOrdinaryField() {
        let fields = JournalLogHandler.journalFields(
            level: .warning, message: "m", metadata: ["message_id": "not-an-id"], code: nil)
        #expect(!fields.contains { $0.name == "MESSAGE_ID" })
        #expect(fields.contains { $0.name == "TOUCHD_MESSAGE_ID" && $0.value == "not-an-id" })
    }

    @Test func messageIDsAreJournalIDs() {
        #expect(MessageID.allCases.count == 20)
        // Ids are never reused.
        #expect(Set(MessageID.allCases.map(\.rawValue)).count == MessageID.allCases.count)
        for id in MessageID.allCases {
            #expect(JournalLogHandler.isMessageID(id.rawValue), "\(id)")
        }
        #expect(!JournalLogHandler.isMessageID("00A5B5B882484B83ABEC02E11CDD8738"))
        #expect(!JournalLogHandler.isMessageID("00a5b5b8-8248-4b83-abec-02e11cdd8738"))
    }

    /// Lines on standard error leave the message id out of the text.
    @Test func linesLeaveTheMessageIDOut() {
        var metadata = MessageID.actionFailed.metadata
        metadata["target"] = "click"
        #expect(
            JournalLogHandler.format(level: .warning, message: "command failed", metadata: metadata, style: .journal)
                == "<4>command failed target=click")
    }

    /// A device named `ESC]0;…BEL` retitled the terminal that showed touchd's log: the text of a line and
    /// of the journal's MESSAGE shows control characters as escapes; the TOUCHD_ field keeps the name as it is.
    @Test func controlCharactersInTheTextAreEscaped() {
        let name = "\u{1B}]0;owned\u{07}\u{9B}\u{202E}"
        let metadata: Logger.Metadata = ["device.name": "\(name)"]
        for style in [JournalLogHandler.Style.terminal, .journal] {
            let line = JournalLogHandler.format(
                level: .info, message: "touchscreen added \u{1B}[2J", metadata: metadata, style: style)
            #expect(line.hasSuffix(#"touchscreen added \x1b[2J device.name=\x1b]0;owned\x07\u009b\u202e"#))
        }
        let fields = JournalLogHandler.journalFields(
            level: .info, message: "two\nlines\u{07}", metadata: metadata, code: nil)
        let values = Dictionary(fields.map { ($0.name, $0.value) }) { first, _ in first }
        #expect(values["MESSAGE"] == #"two"# + "\n" + #"lines\x07 device.name=\x1b]0;owned\x07\u009b\u202e"#)
        #expect(values["TOUCHD_DEVICE_NAME"] == name)
    }

    /// Through a real datagram socket standing in for journald: one datagram per message, in the native format.
    @Test func theHandlerSendsOneDatagramPerMessage() throws {
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let journald = try DatagramReceiver(path: directory.appendingPathComponent("journal").path)
        let socket = try #require(JournalSocket(path: journald.path))
        let lines = LineSink.memory()
        let logger = Logger(label: "test") { _ in
            JournalLogHandler(logLevel: .info, style: .journal, sink: lines, journal: socket)
        }
        logger.debug("below the level")
        logger.error(
            "spawn failed\nsecond line", metadata: MessageID.actionFailed.metadata.merging(["pid": "42"]) { $1 })
        let datagram = try #require(journald.receive())
        let fields = Self.decode(datagram)
        #expect(fields["MESSAGE"] == ["spawn failed\nsecond line pid=42"])
        #expect(fields["PRIORITY"] == ["3"])
        #expect(fields["SYSLOG_IDENTIFIER"] == ["touchd"])
        #expect(fields["MESSAGE_ID"] == [MessageID.actionFailed.rawValue])
        #expect(fields["TOUCHD_PID"] == ["42"])
        #expect(fields["CODE_FUNC"]?.first?.isEmpty == false)
        #expect(lines.captured.isEmpty)
        #expect(journald.receive(milliseconds: 0) == nil, "the debug message must not be sent")
    }

    /// When the journal socket cannot take the entry (here: nobody listens), the message becomes a `<N>` line.
    @Test func aFailedSendFallsBackToALine() throws {
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let socket = try #require(JournalSocket(path: directory.appendingPathComponent("absent").path))
        let lines = LineSink.memory()
        let logger = Logger(label: "test") { _ in
            JournalLogHandler(logLevel: .info, style: .journal, sink: lines, journal: socket)
        }
        logger.warning(
            "socket target unreachable", metadata: ["target": "kiosk", "message_id": "\(MessageID.actionFailed)"])
        #expect(lines.captured == ["<4>socket target unreachable target=kiosk"])
    }

    /// A memory sink or the terminal style never goes to the journal, whatever the environment says.
    @Test func onlyStandardErrorInJournalStyleGoesNative() {
        #expect(JournalLogHandler(logLevel: .info, style: .journal, sink: .memory()).journal == nil)
        #expect(JournalLogHandler(logLevel: .info, style: .terminal).journal == nil)
    }

    @Test func journalStreamMustNameStandardError() {
        var status = stat()
        #expect(fstat(2, &status) == 0)
        #expect(JournalSocket.standardErrorIs(journalStream: "\(status.st_dev):\(status.st_ino)"))
        #expect(!JournalSocket.standardErrorIs(journalStream: "\(status.st_dev):\(status.st_ino &+ 1)"))
        #expect(!JournalSocket.standardErrorIs(journalStream: "garbage"))
        #expect(!JournalSocket.standardErrorIs(journalStream: "1:2:3"))
        #expect(!JournalSocket.standardErrorIs(journalStream: ""))
    }

    // MARK: - Helpers

    /// Parses the native format back into fields (a field may repeat).
    static func decode(_ bytes: [UInt8]) -> [String: [String]] {
        var fields: [String: [String]] = [:]
        var index = 0
        while index < bytes.count {
            guard let end = bytes[index...].firstIndex(where: { $0 == UInt8(ascii: "=") || $0 == UInt8(ascii: "\n") })
            else { break }
            let name = String(decoding: bytes[index..<end], as: UTF8.self)
            if bytes[end] == UInt8(ascii: "=") {
                let newline = bytes[(end + 1)...].firstIndex(of: UInt8(ascii: "\n")) ?? bytes.count
                fields[name, default: []].append(String(decoding: bytes[(end + 1)..<newline], as: UTF8.self))
                index = newline + 1
            } else {
                guard end + 9 <= bytes.count else { break }
                var length: UInt64 = 0
                for (shift, byte) in bytes[(end + 1)..<(end + 9)].enumerated() {
                    length |= UInt64(byte) << (8 * UInt64(shift))
                }
                let start = end + 9
                guard let count = Int(exactly: length), start + count < bytes.count else { break }
                fields[name, default: []].append(String(decoding: bytes[start..<(start + count)], as: UTF8.self))
                index = start + count + 1
            }
        }
        return fields
    }
}
