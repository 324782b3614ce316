import Foundation
import Glibc

/// Sounds under the shipped unit (docs/operations.md, "Sounds and commands under the shipped unit"): with the
/// audio.conf drop-in the package ships as an example, the example configuration's click command (aplay of
/// /usr/share/sounds/touchd/click.wav, exactly as config/kiosk.toml has it) plays on the kiosk's sound card. The
/// guest's card is ALSA's loopback (snd-aloop): what is played on its device 0 is captured on its device 1.
extension SystemdUnitRun {
    func clickSoundUnderUnit() throws(Abort) {
        var problems: [String] = []
        let repository = (options.units as NSString).deletingLastPathComponent
        let sound = repository.isEmpty ? "packaging/sounds/click.wav" : repository + "/packaging/sounds/click.wav"
        let steps: [[String]] = [
            ["/sbin/modprobe", "snd-aloop"],
            ["/bin/udevadm", "settle", "--timeout=20"],
            ["/usr/bin/install", "-D", "-m", "0644", sound, UnitPaths.clickSound],
            [
                "/usr/bin/install", "-D", "-m", "0644", "\(options.units)/touchd.service.d/audio.conf.example",
                UnitPaths.audioDropIn,
            ],
            [Tool.systemctl, "daemon-reload"],
        ]
        for step in steps {
            let result = Tool.run(step, verbose: verbose)
            guard result.succeeded else {
                report.record(.clickSoundPlays, "\(step.joined(separator: " ")): \(result.summary)")
                return
            }
        }
        defer {
            unlink(UnitPaths.audioDropIn)
            _ = Tool.run([Tool.systemctl, "daemon-reload"], verbose: verbose)
        }
        device?.destroy()
        device = try attempt { () throws(DriverError) in
            try VirtualTouchscreen(name: "touchd-e2e sound", verbose: verbose)
        }
        let restart = Tool.run([Tool.systemctl, "restart", UnitPaths.service], verbose: verbose)
        if !restart.succeeded { problems.append("systemctl restart: \(restart.summary)") }
        if let failure = waitForTouchscreen() { problems.append(failure) }
        let capture = UnitPaths.scratch + "/click-capture.wav"
        unlink(capture)
        let recorder = try attempt { () throws(DriverError) in
            try Daemon(
                executable: "/usr/bin/arecord",
                arguments: [
                    "-q", "-D", "hw:Loopback,1,0", "-f", "S16_LE", "-r", "48000", "-c", "2", "-d", "4", capture,
                ],
                environment: [:], echoPrefix: verbose ? "arecord| " : nil, published: false)
        }
        sleep(microseconds: 700_000)
        try write([.down(slot: 0, x: 450, y: 450)])
        sleep(microseconds: 50_000)
        try write([.up(slot: 0)])
        let ended = recorder.waitForExit(until: monotonicNow() + 10_000_000)
        if ended != .exited(0) {
            problems.append("arecord: \(ended.map { "\($0)" } ?? "still running") \(recorder.tail(5))")
            recorder.killAndReap()
        }
        let level = Self.rootMeanSquare(ofWAV: capture)
        Console.line("click under the unit: captured RMS \(level.map { String(format: "%.0f", $0) } ?? "none")")
        if (level ?? 0) < 200 {
            problems.append(
                "no sound captured from the click (RMS \(level.map { String(format: "%.0f", $0) } ?? "none"))")
        }
        report.record(.clickSoundPlays, problems.isEmpty ? nil : problems.joined(separator: "; "))
    }

    /// The root mean square of a 16-bit PCM WAV's samples (its data after the 44-byte header), or nil.
    static func rootMeanSquare(ofWAV path: String) -> Double? {
        guard let data = FileManager.default.contents(atPath: path), data.count > 44 else { return nil }
        let samples = data.dropFirst(44)
        var sum = 0.0
        var count = 0
        var index = samples.startIndex
        while index + 1 < samples.endIndex {
            let value = Int16(bitPattern: UInt16(samples[index]) | UInt16(samples[index + 1]) << 8)
            sum += Double(value) * Double(value)
            count += 1
            index += 2
        }
        return count > 0 ? (sum / Double(count)).squareRoot() : nil
    }
}
