import Foundation

/// What speech-dispatcher 0.11 did after each CANCEL, from its logs (`touchd-e2e --speech --speechd-trace`).
///
/// The server plays the audio that its espeak-ng module sends (705 messages on the module's stdout). On a CANCEL it
/// either stops playback at once, when it has already read the module's 702 END ("module is already done, stop
/// speak_queue directly" in output.c's output_stop), or it discards what it reads from the module from then on, sends
/// the module STOP and plays on what it queued until it reads the module's 703 ("stopping speak_queue"). It reads the
/// module's pipe unbuffered (module.c: `setvbuf(stream_out, NULL, _IONBF, …)`), one read(2) per byte, so every chunk
/// the module sent before its 703 costs the server a read per byte before it sees the 703.
///
/// The trace needs `CustomLogFile "output_module"` in speechd.conf (the server's output thread logs each chunk it
/// discards) and `Debug 1` in the module's configuration (the module logs `module_stop()` when it reads STOP).
enum SpeechdTrace {
    struct Entry {
        var time: Double
        var text: Substring
    }

    /// The lines of a log with their time of day in seconds, to the microsecond: the server writes
    /// `[Wed Dec  2 14:28:34 2026 : 702182] speechd: …`, the module ` Wed Dec  2 14:28:24 2026 [946135]: …`.
    static func entries(ofLog path: String) -> [Entry] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { line in time(of: line).map { Entry(time: $0, text: line) } }
    }

    static func time(of line: Substring) -> Double? {
        let words = line.prefix(64).split { $0 == " " || $0 == "[" || $0 == "]" }
        guard let clock = words.firstIndex(where: { $0.count == 8 && $0.filter { $0 == ":" }.count == 2 }) else {
            return nil
        }
        let parts = words[clock].split(separator: ":").compactMap { Int($0) }
        // After the clock: the year, then the microseconds (a word of digits, perhaps with a colon after it).
        let digits = words[(clock + 1)...].map { $0.filter { $0 != ":" } }.filter { !$0.isEmpty && Int($0) != nil }
        guard parts.count == 3, digits.count >= 2, let micros = Int(digits[1]) else { return nil }
        return Double(parts[0] * 3600 + parts[1] * 60 + parts[2]) + Double(micros) / 1_000_000
    }

    /// One line per CANCEL and a summary, from the server's log, the output-module log and the module's log.
    static func report(server: String, outputModule: String, module: String) -> [String] {
        let serverLog = entries(ofLog: server)
        let discarded = entries(ofLog: outputModule).filter { $0.text.contains("Discarding audio") }.map(\.time)
        let stops = entries(ofLog: module).filter { $0.text.contains("module_stop()") }.map(\.time)
        guard !serverLog.isEmpty else { return ["trace: no timed lines in \(server)"] }
        var lines: [String] = []
        var toStop: [Double] = []
        var toModule: [Double] = []
        var chunks: [Int] = []
        for (index, entry) in serverLog.enumerated() {
            let direct = entry.text.contains("module is already done, stop speak_queue directly")
            guard direct || entry.text.contains("stopping speak_queue") else { continue }
            let stopped = serverLog[(index + 1)...].first { $0.text.contains("speak_queue Stop or pause") }?.time
            let stop = stopped.map { String(format: "%.0f ms", ($0 - entry.time) * 1000) } ?? "never"
            if direct {
                lines.append("trace: CANCEL after the module's END: playback stopped at once (stop thread +\(stop))")
                continue
            }
            let read = stops.first { $0 >= entry.time && $0 <= (stopped ?? .infinity) }
            let count = discarded.filter { $0 >= entry.time && $0 <= (stopped ?? .infinity) }.count
            if let stopped { toStop.append((stopped - entry.time) * 1000) }
            if let read { toModule.append((read - entry.time) * 1000) }
            chunks.append(count)
            lines.append(
                "trace: CANCEL while the module synthesized: the module read STOP "
                    + (read.map { String(format: "+%.0f ms", ($0 - entry.time) * 1000) } ?? "(not logged)")
                    + "; the server read and discarded \(count) chunks of its audio, then stopped playback +\(stop)")
        }
        func median(_ values: [Double]) -> String {
            let sorted = values.sorted()
            guard !sorted.isEmpty else { return "-" }
            let middle = sorted.count / 2
            let value = sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
            return String(format: "%.0f ms", value)
        }
        if !toStop.isEmpty {
            lines.append(
                "trace: while synthesizing (\(toStop.count)): the module read STOP after a median \(median(toModule)); "
                    + "the server stopped playback after a median \(median(toStop)) ("
                    + String(format: "%.0f–%.0f ms", toStop.min() ?? 0, toStop.max() ?? 0)
                    + "), having discarded a median "
                    + "\(chunks.sorted()[chunks.count / 2]) chunks")
        }
        return lines
    }
}
