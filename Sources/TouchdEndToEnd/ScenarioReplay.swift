import Foundation
import Glibc

/// The engine issue's check that `touchd simulate` and `touchd run` cannot disagree: the same kernel input, recorded
/// with `libinput record` while touchd handles it, replayed through `touchd simulate` with the same configuration,
/// must give the same actions in the same order as touchd sent to its socket target.
extension Scenario {
    /// Where the recording goes.
    var recordingPath: String { scratch.file("replay.yaml") }

    /// Records a tap, a drag out of `a` and back, a lift outside, two fingers on two controls and the corner long
    /// press with `libinput record`, then compares `touchd simulate`'s action lines with the socket messages.
    func recordAndReplay() throws(Abort) {
        guard let touchd = options.touchd, let node = device?.devnode else { throw Abort("no touchscreen in use") }
        var failures: [String] = []
        let recorder: Daemon
        do throws(DriverError) {
            recorder = try Daemon(
                executable: "/usr/bin/libinput", arguments: ["record", "--output-file", recordingPath, node],
                environment: [:], removing: Self.scrubbedEnvironment, echoPrefix: options.verbose ? "record| " : nil,
                published: false)
        } catch {
            report.record(.replayMatchesRun, "cannot start libinput record: \(error)")
            return
        }
        defer { recorder.killAndReap() }
        // libinput record writes its header once it has opened the device: from then on it records.
        let started = poll(until: monotonicNow() + 10_000_000) { () -> Bool? in
            let size = (try? FileManager.default.attributesOfItem(atPath: recordingPath)[.size] as? Int) ?? 0
            return size > 0 ? true : nil
        }
        guard started != nil else {
            report.record(.replayMatchesRun, "libinput record wrote nothing within 10 s: \(recorder.output.all)")
            return
        }
        sleep(microseconds: 200_000)
        respectRepeatWindow()
        let cursor = target.inbox.count
        // Not where the last touch before the recording was (the replug's tap at 200,200): the kernel would send no
        // position, and a recording cannot know where the slot was (simulate says so and leaves such a touch out).
        var frames: [[TouchChange]] = [[.down(slot: 0, x: 220, y: 180)], [.up(slot: 0)]]
        frames += [[.down(slot: 0, x: 150, y: 150)]]
        frames += stride(from: 175, through: 500, by: 25).map { [TouchChange.move(slot: 0, x: 150, y: $0)] }
        frames += stride(from: 475, through: 150, by: -25).map { [TouchChange.move(slot: 0, x: 150, y: $0)] }
        frames += [[.up(slot: 0)]]
        frames += [[.down(slot: 0, x: 250, y: 250)], [.move(slot: 0, x: 250, y: 600)], [.up(slot: 0)]]
        frames += [[.down(slot: 0, x: 200, y: 200), .down(slot: 1, x: 700, y: 200)], [.up(slot: 1)], [.up(slot: 0)]]
        for (index, frame) in frames.enumerated() {
            if index > 0 { sleep(microseconds: 30_000) }
            try write(frame)
        }
        let corner: [TouchChange] = [
            .down(slot: 0, x: 50, y: 850), .down(slot: 1, x: 100, y: 900), .down(slot: 2, x: 150, y: 950),
        ]
        sleep(microseconds: 400_000)
        try write(corner)
        sleep(microseconds: Microseconds(TestConfig.longPressMilliseconds * 1000 + 300_000))
        try write([.up(slot: 0), .up(slot: 1), .up(slot: 2)])
        quiet(from: cursor)
        let sent = target.inbox.since(cursor).filter { $0.target == TestConfig.targetName }.map {
            "\($0.control ?? "?"):\($0.event ?? "?"):\($0.action ?? "?")"
        }
        recorder.send(SIGINT)
        if recorder.waitForExit(until: monotonicNow() + 10_000_000) == nil {
            failures.append("libinput record did not stop within 10 s of SIGINT")
        }
        let simulated = Tool.run(
            [touchd, "simulate", "--config", configPath, recordingPath], limit: 60_000_000, verbose: options.verbose)
        if !simulated.succeeded { failures.append("touchd simulate failed: \(simulated.summary)") }
        let replayed = simulated.output.compactMap { line -> String? in
            guard line.hasPrefix("{\"type\":\"action\""), let data = line.data(using: .utf8),
                let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any],
                object["target"] as? String == TestConfig.targetName
            else { return nil }
            return "\(object["control"] as? String ?? "?"):\(object["event"] as? String ?? "?"):"
                + "\(object["action"] as? String ?? "?")"
        }
        if sent.isEmpty { failures.append("touchd sent no action while the recording ran") }
        if replayed != sent {
            // The start of the recording's events, to see what libinput record caught.
            let text = (try? String(contentsOfFile: recordingPath, encoding: .utf8)) ?? ""
            let lines = text.split(separator: "\n")
            let start = lines.firstIndex { $0.contains("events:") } ?? 0
            Console.line("replay| " + lines[start..<min(lines.count, start + 30)].joined(separator: "\nreplay| "))
            Console.line(
                "replay| simulate said: " + simulated.output.filter { !$0.hasPrefix("{") }.joined(separator: " | "))
        }
        if replayed != sent {
            failures.append(
                "simulate's actions differ from what touchd sent: sent \(sent.count) [\(sent.joined(separator: " "))], "
                    + "simulate \(replayed.count) [\(replayed.joined(separator: " "))]")
        }
        report.record(.replayMatchesRun, failures.isEmpty ? nil : failures.joined(separator: "; "))
        report.note("record and replay: \(sent.count) actions, the same from touchd run and touchd simulate")
        try alive()
    }
}
