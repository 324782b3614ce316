import Foundation
import Glibc
import Synchronization

/// Explore by touch's speech with a real server (`touchd-e2e --speech`): speech-dispatcher 0.11 with its espeak-ng
/// module on a socket of its own, playing into ALSA's loopback card (snd-aloop: what is played on device 0 is
/// captured on device 1), captured by `arecord` and measured here (5 ms windows of the capture) and with `sox`.
/// touchd's own SSIP client speaks through `touchd speak --json`, which reports each step's CLOCK_MONOTONIC time.
///
/// The capture's clock is tied to the monotonic one by watching the WAV file grow: every look at its size bounds the
/// time its first frame was captured from above (frames written so far lag the capture, never lead it), and the
/// lowest bound is taken, within one 10 ms ALSA period.
///
/// Checks: a first utterance is heard (speech energy between its request and the next); a second is canceled
/// 600 ms after speech began, and the audio stops within 100 ms of the CANCEL leaving touchd. Reports request →
/// SPEAK, request → first audio energy (the aim: 300 ms in the emulated guest) and CANCEL → silence. Then the same
/// server speaks for touchd in filter mode, through real touches (``SpeechTouches``), into the same capture.
final class SpeechRun {
    let options: Options
    let touchd: String
    private let scratch: ScratchDirectory
    private var server: Daemon?
    private var touches: SpeechTouches?
    private var results: [(name: String, failure: String?)] = []
    private var figures: [String] = []

    static let rate = 48_000
    static let window = 240  // 5 ms
    /// RMS of a 5 ms window (16-bit, both channels) above which it holds speech; digital silence is 0 on a loopback.
    static let threshold = 300.0

    init(options: Options, touchd: String) throws(DriverError) {
        self.options = options
        self.touchd = touchd
        scratch = try ScratchDirectory()
    }

    func run() -> Int32 {
        do throws(DriverError) {
            try setUp()
            try measure()
        } catch {
            results.append(("sequence", "stopped: \(error)"))
        }
        touches?.stop()
        results += touches?.results ?? []
        let failed = results.filter { $0.failure != nil }
        if !failed.isEmpty {
            touches?.printTails()
            server?.printTail(40)
            if let log = try? String(contentsOfFile: scratch.file("log/speech-dispatcher.log"), encoding: .utf8) {
                for line in log.split(separator: "\n").suffix(30) { Console.line("speechd-log| \(line)") }
            }
        }
        server?.killAndReap()
        if options.speechdTrace {
            figures += SpeechdTrace.report(
                server: scratch.file("log/speech-dispatcher.log"), outputModule: scratch.file("log/output-module.log"),
                module: scratch.file("log/espeak-ng.log"))
        }
        for figure in figures { Console.line("speech: \(figure)") }
        for figure in touches?.figures ?? [] { Console.line(figure) }
        for (name, failure) in results { Console.line(failure.map { "FAIL \(name): \($0)" } ?? "PASS \(name)") }
        Console.line("speech: \(results.count - failed.count)/\(results.count) checks passed")
        if !options.verbose { removeScratch() }
        return failed.isEmpty ? 0 : 1
    }

    private func removeScratch() {
        for sub in ["conf/modules", "conf/clients", "conf", "log"] {
            if let names = try? FileManager.default.contentsOfDirectory(atPath: scratch.file(sub)) {
                for name in names { unlink(scratch.file(sub + "/" + name)) }
            }
        }
        for sub in ["conf/modules", "conf/clients", "conf", "log"] { rmdir(scratch.file(sub)) }
        scratch.remove()
    }

    /// The loopback card, a configuration of speech-dispatcher's own (ALSA output to the loopback, espeak-ng only) and
    /// the server on `speechd.sock`.
    private func setUp() throws(DriverError) {
        for step in [["/sbin/modprobe", "snd-aloop"], ["/usr/bin/udevadm", "settle", "--timeout=20"]] {
            let result = Tool.run(step, verbose: options.verbose)
            guard result.succeeded else { throw DriverError(result.summary) }
        }
        guard access("/dev/snd", F_OK) == 0 else { throw DriverError("no /dev/snd after loading snd-aloop") }
        for directory in ["conf", "conf/modules", "conf/clients", "log"] {
            guard mkdir(scratch.file(directory), 0o755) == 0 else {
                throw DriverError("mkdir \(directory): \(describe(errno: errno))")
            }
        }
        var configuration = """
            # Written by touchd-e2e --speech: ALSA's loopback card, espeak-ng only.
            AudioOutputMethod "alsa"
            AudioALSADevice "plughw:Loopback,0,0"
            AddModule "espeak-ng" "\(try moduleLauncher())" "espeak-ng.conf"
            DefaultModule espeak-ng
            DefaultLanguage "en"
            # How much audio the server queues ahead of playback, in samples. A CANCEL while the module still
            # synthesizes lets what is queued play on until the module confirms it stopped.
            MaxQueueSize \(options.speechQueueSamples)
            LogLevel 4
            """
        if options.speechdTrace {
            configuration += "\nCustomLogFile \"output_module\" \"\(scratch.file("log/output-module.log"))\"\n"
        }
        // The module hands the audio to the server in chunks (Debian's default: 300 ms; its espeak-ng makes anything
        // below 49 ms 49 ms), and the server plays what it queued until it reads the module's 703 after a CANCEL:
        // small chunks and MaxQueueSize 0, as docs/speech-server.md recommends, keep a canceled word short.
        let module = (try? String(contentsOfFile: "/etc/speech-dispatcher/modules/espeak-ng.conf", encoding: .utf8))
            .map { text in
                text.split(separator: "\n", omittingEmptySubsequences: false)
                    .map {
                        $0.hasPrefix("EspeakAudioChunkSize")
                            ? "EspeakAudioChunkSize \(options.espeakChunkMilliseconds)" : String($0)
                    }
                    .joined(separator: "\n") + (options.speechdTrace ? "\nDebug 1\n" : "")
            }
        guard
            FileManager.default.createFile(
                atPath: scratch.file("conf/speechd.conf"), contents: Data(configuration.utf8)),
            FileManager.default.createFile(
                atPath: scratch.file("conf/modules/espeak-ng.conf"), contents: Data((module ?? "").utf8))
        else { throw DriverError("cannot write speech-dispatcher's configuration in \(scratch.path)") }
    }

    /// The module speech-dispatcher runs for espeak-ng: the launcher the project ships (packaging/speech/sd_espeak-ng,
    /// installed as /usr/lib/touchd/sd_espeak-ng), written to the scratch directory with the touchd under test and
    /// `--module-pipe-bytes`; with 0, Debian's module itself.
    private func moduleLauncher() throws(DriverError) -> String {
        guard options.modulePipeBytes > 0 else { return "sd_espeak-ng" }
        let repository = (options.units as NSString).deletingLastPathComponent
        let shipped = (repository.isEmpty ? "" : repository + "/") + "packaging/speech/sd_espeak-ng"
        guard let text = try? String(contentsOfFile: shipped, encoding: .utf8) else {
            throw DriverError("cannot read the module launcher \(shipped)")
        }
        guard let executable = realpath(touchd, nil) else {
            throw DriverError("touchd \(touchd): \(describe(errno: errno))")
        }
        defer { free(executable) }
        let shippedCommand = "exec /usr/bin/touchd speech-module "
        guard text.contains(shippedCommand) else {
            throw DriverError("\(shipped) no longer runs '\(shippedCommand)'")
        }
        let launcher = text.replacingOccurrences(
            of: shippedCommand,
            with: "exec \(String(cString: executable)) speech-module --pipe-bytes \(options.modulePipeBytes) ")
        let path = scratch.file("conf/sd_espeak-ng")
        guard FileManager.default.createFile(atPath: path, contents: Data(launcher.utf8)), chmod(path, 0o755) == 0
        else {
            throw DriverError("cannot write the module launcher \(path)")
        }
        return path
    }

    /// The name of the check on `touchd speak`'s CANCEL. With `--cancel-reported` the 100 ms bound is printed rather
    /// than judged, and the name says so: the check still fails when no CANCEL was sent or nothing was playing.
    static func cancelCheck(reported: Bool) -> String {
        reported
            ? "CANCEL stops the audio (within 100 ms: reported above, not judged)"
            : "CANCEL stops the audio within 100 ms"
    }

    /// speech-dispatcher on `speechd.sock`. After arecord has opened the loopback's capture side: the side opened
    /// first fixes the cable's format (48 kHz stereo here) and the other converts to it (plughw), never the reverse,
    /// which snd-aloop refuses.
    private func startServer() throws(DriverError) {
        let socket = scratch.file("speechd.sock")
        server = try Daemon(
            executable: "/usr/bin/speech-dispatcher",
            arguments: [
                "-s", "-t", "0", "-c", "unix_socket", "-S", socket, "-C", scratch.file("conf"), "-L",
                scratch.file("log"), "-l", "4",
            ],
            environment: [:], echoPrefix: options.verbose ? "speechd| " : nil, published: false)
        // It lists every espeak-ng voice before it listens: a minute or more on a loaded host under emulation.
        let deadline = monotonicNow() + 150_000_000
        while access(socket, F_OK) != 0 {
            guard monotonicNow() < deadline else { throw DriverError("speech-dispatcher made no socket in 150 s") }
            sleep(microseconds: 20_000)
        }
    }

    /// What `touchd speak --json` reported.
    struct Spoken {
        var values: [String: UInt64]
        subscript(_ key: String) -> UInt64? { values[key] }
    }

    private func speak(_ text: String, cancelAfter: Int? = nil) throws(DriverError) -> Spoken {
        var argv = [touchd, "speak", "--json", "--socket", scratch.file("speechd.sock"), "--timeout-ms", "30000"]
        if let cancelAfter { argv += ["--cancel-after-ms", "\(cancelAfter)"] }
        argv.append(text)
        let result = Tool.run(argv, limit: 60_000_000, verbose: options.verbose)
        guard let line = result.output.first(where: { $0.hasPrefix("{\"type\":\"speak\"") }),
            let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        else { throw DriverError("touchd speak printed no report: \(result.summary)") }
        var values: [String: UInt64] = [:]
        for (key, value) in object {
            if let number = value as? NSNumber, key.hasSuffix("_us") { values[key] = number.uint64Value }
        }
        if !result.succeeded { results.append(("touchd speak \"\(text.prefix(20))…\"", result.summary)) }
        return Spoken(values: values)
    }

    private func measure() throws(DriverError) {
        let capture = scratch.file("capture.wav")
        let recorder = try Daemon(
            executable: "/usr/bin/arecord",
            arguments: [
                "-q", "-D", "plughw:Loopback,1,0", "-f", "S16_LE", "-r", "\(Self.rate)", "-c", "2", capture,
            ],
            environment: [:], echoPrefix: options.verbose ? "arecord| " : nil, published: false)
        defer { recorder.killAndReap() }
        try waitForFirstFrames(capture, recorder: recorder)
        let clock = CaptureClock(path: capture, rate: Self.rate)
        clock.start()
        defer { clock.stop() }
        let stalls = StallWatch()
        stalls.start()
        defer { stalls.stop() }
        sleep(microseconds: 300_000)
        try startServer()
        // Cold: the first utterance after the server started (the module and the sound device open).
        figures.append(
            "espeak-ng module: EspeakAudioChunkSize \(options.espeakChunkMilliseconds) ms, output pipe "
                + (options.modulePipeBytes == 0
                    ? "Linux's default (started directly)" : "\(options.modulePipeBytes) bytes (touchd speech-module)")
                + "; speech-dispatcher: MaxQueueSize \(options.speechQueueSamples) samples")
        let cold = try speak("Speech mode.")
        if let requested = cold["requested_us"], let begin = cold["begin_us"] {
            figures.append("cold start: request → 701 BEGIN \(milliseconds(begin - requested)) ms")
        }
        sleep(microseconds: 300_000)

        let heard = try speak("Pay with card. Double tap to activate.")
        sleep(microseconds: 500_000)
        let canceled = try speak(
            "This is a long announcement that a new touch interrupts before it ends, as explore by touch does.",
            cancelAfter: 600)
        sleep(microseconds: 800_000)
        // Through touches: touchd in filter mode with [accessibility], speaking through the same server.
        let touchesStart = monotonicNow()
        let touches = try SpeechTouches(
            options: options, touchd: touchd, scratch: scratch, speechSocket: scratch.file("speechd.sock"))
        self.touches = touches
        do throws(Abort) {
            try touches.runWithServer()
        } catch {
            results.append(("explore by touch", "stopped: \(error.reason)"))
        }
        sleep(microseconds: 300_000)
        _ = recorder.send(SIGINT)
        if recorder.waitForExit(until: monotonicNow() + 10_000_000) == nil {
            throw DriverError("arecord did not stop on SIGINT")
        }
        clock.stop()
        stalls.stop()
        figures.append(stalls.summary())
        let overruns = recorder.output.all.filter { $0.contains("overrun") }.count
        figures.append("arecord overruns: \(overruns) (frames lost; the capture clock is re-anchored locally)")
        guard let samples = Self.windows(ofWAV: capture) else { throw DriverError("no capture in \(capture)") }
        analyse(
            samples, clock: clock, heard: heard, canceled: canceled, capture: capture, end: touchesStart,
            stalls: stalls)
        reportServerLog()
        touches.analyse(samples, clock: clock, stalls: stalls, threshold: Self.threshold, window: Self.window)
        // Rule 3: the server stops; the start gesture leaves touches flowing and the log says why.
        server?.killAndReap()
        do throws(Abort) {
            try touches.runWithoutServer()
        } catch {
            results.append(("explore by touch without a server", "stopped: \(error.reason)"))
        }
    }

    /// Waits for arecord's first frames (it starts slowly under emulation).
    private func waitForFirstFrames(_ path: String, recorder: Daemon) throws(DriverError) {
        let deadline = monotonicNow() + 20_000_000
        var info = stat()
        while stat(path, &info) != 0 || info.st_size <= 44 {
            guard monotonicNow() < deadline, recorder.waitForExit(until: monotonicNow()) == nil else {
                throw DriverError("arecord wrote nothing to \(path): \(recorder.tail(3).joined(separator: " | "))")
            }
            usleep(2000)
        }
    }

    /// The RMS of each 5 ms window of a 16-bit stereo WAV's data chunk.
    static func windows(ofWAV path: String) -> [Double]? {
        guard let data = FileManager.default.contents(atPath: path), data.count > 44 else { return nil }
        let bytes = [UInt8](data)
        // The data chunk: after "data" and its 4-byte size (arecord writes it at 36, but look for it).
        var offset = 12
        var dataStart: Int?
        while offset + 8 <= bytes.count {
            let id = String(decoding: bytes[offset..<offset + 4], as: UTF8.self)
            let size =
                Int(bytes[offset + 4]) | Int(bytes[offset + 5]) << 8 | Int(bytes[offset + 6]) << 16
                | Int(bytes[offset + 7]) << 24
            if id == "data" {
                dataStart = offset + 8
                break
            }
            offset += 8 + size
        }
        guard let start = dataStart else { return nil }
        var result: [Double] = []
        var index = start
        let windowBytes = window * 4
        while index + windowBytes <= bytes.count {
            var sum = 0.0
            var sample = index
            while sample < index + windowBytes {
                let value = Double(Int16(bitPattern: UInt16(bytes[sample]) | UInt16(bytes[sample + 1]) << 8))
                sum += value * value
                sample += 2
            }
            result.append((sum / Double(window * 2)).squareRoot())
            index += windowBytes
        }
        return result
    }

    /// What speech-dispatcher's log says about the sound device and about each stop: whether the module had
    /// finished synthesizing (the queue stops at once) or not (queued audio plays on until the module confirms).
    private func reportServerLog() {
        guard let log = try? String(contentsOfFile: scratch.file("log/speech-dispatcher.log"), encoding: .utf8) else {
            figures.append("no speech-dispatcher.log")
            return
        }
        let lines = log.split(separator: "\n")
        figures.append(Self.loopbackPlayback())
        let direct = lines.filter { $0.contains("module is already done, stop speak_queue directly") }.count
        let flushed = lines.filter { $0.contains("stopping speak_queue") }.count
        figures.append(
            "speechd stops: \(direct) with synthesis done (queue stopped at once), \(flushed) while synthesizing "
                + "(queued audio plays until the module confirms)")
    }

    /// The server's side of the loopback as the kernel has it (after plughw's conversion to the cable's 48 kHz
    /// stereo). speech-dispatcher 0.11.4 does not pass its log level to its ALSA backend, so alsa.c's own "Buffer
    /// size" and "Period size" lines never reach its log. After each chunk the server waits until two periods are left
    /// in the device before it writes the next (alsa.c: alsa_drain_overlap), and the device plays on what it holds
    /// until the server drops it.
    static func loopbackPlayback() -> String {
        guard let text = try? String(contentsOfFile: "/proc/asound/Loopback/pcm0p/sub0/hw_params", encoding: .utf8)
        else { return "loopback playback: no /proc/asound/Loopback/pcm0p/sub0/hw_params" }
        var fields: [String: Int] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: ":", maxSplits: 1)
            guard parts.count == 2, let word = parts[1].split(separator: " ").first, let value = Int(word) else {
                continue
            }
            fields[String(parts[0])] = value
        }
        guard let rate = fields["rate"], let period = fields["period_size"], let buffer = fields["buffer_size"],
            rate > 0
        else { return "loopback playback: \(text.split(separator: "\n").joined(separator: ", "))" }
        return String(
            format: "loopback playback (speech-dispatcher's device): %d Hz, period %d frames (%.1f ms), buffer %d "
                + "frames (%.0f ms); between chunks the server leaves 2 periods (%.1f ms) in it", rate, period,
            Double(period) * 1000 / Double(rate), buffer, Double(buffer) * 1000 / Double(rate),
            Double(2 * period) * 1000 / Double(rate))
    }

    private func analyse(
        _ windows: [Double], clock: CaptureClock, heard: Spoken, canceled: Spoken, capture: String, end: Microseconds,
        stalls: StallWatch
    ) {
        func index(_ time: UInt64) -> Int { clock.frame(at: time) / Self.window }
        func time(_ index: Int) -> UInt64 { clock.time(ofFrame: index * Self.window) }
        let start = clock.time(ofFrame: 0)
        let loud = windows.map { $0 > Self.threshold }

        // The first utterance: heard between its request and the second's.
        guard let requested = heard["requested_us"], let next = canceled["requested_us"] else {
            results.append(("utterance heard", "touchd speak reported no request time"))
            return
        }
        let span = index(requested)..<min(index(next), loud.count)
        let loudWindows = span.isEmpty ? 0 : loud[span].filter { $0 }.count
        results.append(
            (
                "utterance heard (speech energy in the capture)",
                loudWindows >= 40 ? nil : "\(loudWindows) windows of 5 ms above RMS \(Int(Self.threshold))"
            ))
        if let sent = heard["speak_sent_us"] {
            figures.append("request → SSIP SPEAK \(milliseconds(sent - requested)) ms (touchd's client)")
        }
        if let onset = span.first(where: { loud[$0] }) {
            figures.append("request → first audio energy \(milliseconds(time(onset) - requested)) ms (aim ≤ 300)")
            if let begin = heard["begin_us"] {
                figures.append("701 BEGIN → first audio energy \(signedMilliseconds(time(onset), begin)) ms")
            }
        }
        // The second: canceled while speaking; the audio stops within 100 ms of the CANCEL.
        guard let cancel = canceled["cancel_sent_us"] else {
            results.append((Self.cancelCheck(reported: options.cancelReported), "no CANCEL was sent (no 701 BEGIN?)"))
            return
        }
        let before = max(0, index(cancel) - 60)..<min(index(cancel), loud.count)
        let speakingAtCancel = !before.isEmpty && loud[before].contains(true)
        let after = min(index(cancel), loud.count)..<min(index(end), loud.count)
        let last = after.last(where: { loud[$0] })
        let silenceAt = last.map { time($0 + 1) } ?? cancel
        let stopMillis = signedMilliseconds(silenceAt, cancel)
        figures.append("CANCEL → silence \(stopMillis) ms")
        if let acknowledged = canceled["canceled_us"] {
            figures.append("CANCEL → 703 CANCELED \(milliseconds(acknowledged - cancel)) ms")
        }
        var failure: String?
        if !speakingAtCancel {
            failure = "no speech in the 300 ms before the CANCEL: nothing to stop"
        } else if silenceAt > cancel + SpeechTouches.stopBound {
            let still = stalls.stoodStill(from: cancel, to: silenceAt)
            let late = "audio went on \(stopMillis) ms after the CANCEL"
            if StallWatch.judge(stop: silenceAt - cancel, stoodStill: still, bound: SpeechTouches.stopBound)
                == .guestStoodStill
            {
                figures.append(
                    "\(late), past 100 ms only by the time the guest stood still (\(milliseconds(still)) ms of it on a "
                        + "vCPU): not judged late")
            } else if options.cancelReported {
                figures.append(
                    "REPORTED (--cancel-reported, not failed): CANCEL stops the audio within 100 ms: \(late)")
            } else {
                failure = late
            }
        }
        results.append((Self.cancelCheck(reported: options.cancelReported), failure))
        // sox's view of the same capture: the whole, and from 100 ms after the CANCEL on.
        let offset = Double(cancel + 100_000 - min(start, cancel)) / 1_000_000
        for (label, arguments) in [
            ("whole capture", [capture, "-n", "stat"]),
            ("from CANCEL + 100 ms", [capture, "-n", "trim", String(format: "%.3f", offset), "stat"]),
        ] {
            let sox = Tool.run(["/usr/bin/sox"] + arguments, verbose: options.verbose)
            let rms = sox.output.first { $0.hasPrefix("RMS     amplitude") }?.split(separator: ":").last
            let maximum = sox.output.first { $0.hasPrefix("Maximum amplitude") }?.split(separator: ":").last
            figures.append(
                "sox \(label): RMS \(rms.map { $0.trimmingCharacters(in: .whitespaces) } ?? "?"), maximum "
                    + "\(maximum.map { $0.trimmingCharacters(in: .whitespaces) } ?? "?")")
        }
    }

    private func milliseconds(_ micros: UInt64) -> String { String(format: "%.1f", Double(micros) / 1000) }

    private func signedMilliseconds(_ a: UInt64, _ b: UInt64) -> String {
        a >= b ? milliseconds(a - b) : "-" + milliseconds(b - a)
    }
}

/// Ties a growing capture's frames to CLOCK_MONOTONIC. A thread looks at the WAV's size every 2 ms; each look at time
/// t seeing n frames says the capture's frame 0 was taken at t − n/rate or earlier, plus the frames lost so far to
/// overruns (which only grow). So the lowest such bound among the looks just after a frame was written is that
/// frame's offset, within a look's interval, even when arecord lost frames before it.
final class CaptureClock: @unchecked Sendable {
    private let path: String
    private let rate: Int
    private let looks = Mutex<[(time: UInt64, frames: Int)]>([])
    private let running = Atomic<Bool>(false)
    private let finished = Atomic<Bool>(true)

    init(path: String, rate: Int) {
        self.path = path
        self.rate = rate
    }

    func start() {
        running.store(true, ordering: .relaxed)
        finished.store(false, ordering: .relaxed)
        startThread("capture clock") { [self] in
            while running.load(ordering: .relaxed) {
                var info = stat()
                let found = stat(path, &info) == 0
                let now = monotonicNow()
                if found, info.st_size > 44 { looks.withLock { $0.append((now, Int(info.st_size - 44) / 4)) } }
                usleep(2000)
            }
            finished.store(true, ordering: .relaxed)
        }
    }

    func stop() {
        running.store(false, ordering: .relaxed)
        while !finished.load(ordering: .relaxed) { usleep(1000) }
    }

    /// The offset (monotonic time of frame 0, plus frames lost before) from the looks that saw `frame` written
    /// within the half second after it.
    private func offset(near frame: Int) -> UInt64 {
        let all = looks.withLock { $0 }
        func bound(_ look: (time: UInt64, frames: Int)) -> UInt64 {
            look.time - UInt64(look.frames) * 1_000_000 / UInt64(rate)
        }
        let near = all.filter { $0.frames >= frame && $0.frames <= frame + rate / 2 }.map(bound)
        if let best = near.min() { return best }
        let after = all.filter { $0.frames >= frame }.map(bound)
        return after.min() ?? all.map(bound).min() ?? 0
    }

    func time(ofFrame frame: Int) -> UInt64 {
        offset(near: frame) + UInt64(frame) * 1_000_000 / UInt64(rate)
    }

    /// The frame captured at `time` (monotonic): through the offset of the looks around it.
    func frame(at time: UInt64) -> Int {
        let all = looks.withLock { $0 }
        let near = all.filter { $0.time >= time && $0.time <= time + 500_000 }
            .map { $0.time - UInt64($0.frames) * 1_000_000 / UInt64(rate) }
        guard let offset = near.min() ?? all.map({ $0.time - UInt64($0.frames) * 1_000_000 / UInt64(rate) }).min(),
            time > offset
        else { return 0 }
        return Int((time - offset) * UInt64(rate) / 1_000_000)
    }
}
