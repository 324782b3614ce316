import Foundation
import Glibc

/// Explore by touch through real touches, part of `touchd-e2e --speech`: touchd in filter mode with `[accessibility]`
/// on a uinput panel, `libinput debug-events` on the seat standing in for the compositor, and speech-dispatcher (the
/// one ``SpeechRun`` started, playing into the loopback it records) reached through an ``SSIPProxy`` that stamps
/// every SSIP line.
///
/// Geometry (a 1000×1000 output): control `a`, a button of touchd's (x 100…299, y 100…299), whose touchUpInside
/// goes to the socket target; element `e` the application draws (x 600…799, y 100…299, activated at its centre,
/// (700, 200)); the start gesture, one finger held 800 ms in the bottom-left corner (x 0…99, y 900…999); empty
/// space at (500, 600).
///
/// Each exploring sample touches `a` or `e` (alternately, so each speaks), lifts after 80 ms, and 700 ms after the
/// touch-down taps empty space: that touch's `CANCEL` stops the label while it is being said, and nothing else
/// speaks before the next sample. The figures come from the proxy's stamps (touch-down → `SPEAK`, `CANCEL` → `703`)
/// and from the capture (touch-down → first audio energy, `CANCEL` → silence), in ``analyse(_:clock:)``.
final class SpeechTouches {
    let options: Options
    let touchd: String
    private let scratch: ScratchDirectory
    private let proxy: SSIPProxy
    private let target: TargetListener
    private let notify: NotifyListener
    private var daemon: Daemon?
    private var panel: VirtualTouchscreen?
    private var jack: VirtualJack?
    private var events: Daemon?
    private var twinSysname: String?
    private(set) var results: [(name: String, failure: String?)] = []
    private(set) var figures: [String] = []

    static let samples = 20
    /// The contract's bound from a CANCEL to silence (µs).
    static let stopBound: UInt64 = 100_000
    static let introduction = "Speech on."
    static let farewell = "Speech off."
    static let labelA = "Pay with card or with your phone"
    static let labelE = "Day ticket, eight euros, valid until midnight"
    static let panelName = "touchd-e2e speech panel"

    /// One exploring sample: when its touch-down and its empty-space touch-down reached the kernel.
    struct Sample {
        var item: String
        var touchDown: Microseconds
        var emptyDown: Microseconds
        var end: Microseconds
    }

    private(set) var explored: [Sample] = []

    init(options: Options, touchd: String, scratch: ScratchDirectory, speechSocket: String) throws(DriverError) {
        self.options = options
        self.touchd = touchd
        self.scratch = scratch
        proxy = try SSIPProxy(path: scratch.file("ssip-proxy.sock"), upstream: speechSocket)
        target = try TargetListener(path: scratch.file("target.sock"), verbose: options.verbose)
        notify = try NotifyListener(path: scratch.file("notify.sock"), verbose: options.verbose)
    }

    var controlSocket: String { scratch.file("control.sock") }

    var config: String {
        """
        # Written by touchd-e2e --speech.
        [output]
        width = 1000
        height = 1000

        [filter]
        enabled = true

        [tracking]
        stuck_contact_timeout_ms = 0

        [control_socket]
        socket = "\(controlSocket)"

        [accessibility]
        enabled = true
        start_gesture = "speech-corner"
        speech_socket = "\(proxy.path)"
        introduction = "\(Self.introduction)"
        farewell = "\(Self.farewell)"
        exit_after_idle_s = 0
        start_on_headphones = true

        [targets.e2e]
        socket = "\(target.path)"
        responds_to = ["a"]

        [[control]]
        id = "a"
        frame = { x = 100, y = 100, width = 200, height = 200 }
        label = "\(Self.labelA)"
        actions = [{ events = ["touchUpInside"], target = "e2e", action = "a" }]

        [[element]]
        id = "e"
        frame = { x = 600, y = 100, width = 200, height = 200 }
        label = "\(Self.labelE)"

        [[gesture]]
        id = "speech-corner"
        kind = "long_press"
        minimum_duration_ms = 800
        frame = { x = 0, y = 900, width = 100, height = 100 }
        cancels_touches = true
        """
    }

    // MARK: - The sequence

    /// With the server up: the start gesture, exploring, double taps, leaving. The capture runs meanwhile.
    func runWithServer() throws(Abort) {
        try setUp()
        try checkTouchesFlow("before speech mode")
        try enterByGesture()
        try explore()
        try doubleTapElement()
        try doubleTapControl()
        try leaveByControlSocket()
        try checkTouchesFlow("after speech mode")
        try checkHeadphones()
    }

    /// After ``SpeechRun`` stopped the server: the start gesture leaves touches flowing, and the log says why.
    func runWithoutServer() throws(Abort) {
        let unavailable = poll(until: monotonicNow() + 10_000_000) {
            daemon?.output.all.contains { $0.contains("speech server unavailable") } == true ? true : nil
        }
        record("touchd notices the server stopped", unavailable != nil ? nil : "no 'speech server unavailable' logged")
        let cursor = daemon?.output.count ?? 0
        try hold(50, 950, microseconds: 1_200_000)
        let logged = poll(until: monotonicNow() + 3_000_000) {
            daemon?.output.since(cursor).first { $0.contains("speech mode not started") }
        }
        record(
            "without a server the start gesture logs why speech mode did not start",
            logged != nil ? nil : "no 'speech mode not started' line: \(daemon?.tail(5) ?? [])")
        try checkTouchesFlow("with the server stopped")
    }

    func stop() {
        events?.killAndReap()
        daemon?.killAndReap()
        panel?.destroy()
        jack?.destroy()
        proxy.stop()
        target.stop()
        notify.stop()
    }

    func printTails() {
        daemon?.printTail(60)
        for line in events?.tail(40) ?? [] { Console.line("events| \(line)") }
        for line in proxy.lines.all.suffix(40) {
            Console.line("ssip| \(line.direction == .sent ? ">" : "<") \(line.arrival) \(line.text)")
        }
    }

    private func record(_ name: String, _ failure: String?) { results.append((name, failure)) }

    private func attempt<T>(_ body: () throws(DriverError) -> T) throws(Abort) -> T {
        do {
            return try body()
        } catch {
            throw Abort(reason: error.description)
        }
    }

    private func setUp() throws(Abort) {
        panel = try attempt { () throws(DriverError) in
            try VirtualTouchscreen(name: Self.panelName, verbose: options.verbose)
        }
        // Before touchd starts: it looks for jacks only then.
        jack = try attempt { () throws(DriverError) in try VirtualJack(name: "touchd-e2e headphone jack") }
        sleep(microseconds: 500_000)  // udev tags it before touchd looks
        let path = scratch.file("speech.toml")
        try attempt { () throws(DriverError) in try writeFile(path, config) }
        let cursor = notify.inbox.count
        daemon = try attempt { () throws(DriverError) in
            try Daemon(
                executable: touchd, arguments: ["run", "--config", path],
                environment: ["NOTIFY_SOCKET": notify.path], removing: Scenario.scrubbedEnvironment,
                echoPrefix: options.verbose ? "touchd| " : nil)
        }
        let ready = poll(until: monotonicNow() + Limits.readiness) {
            notify.inbox.first(from: cursor) { $0.value("STATUS")?.contains("filtering 1") == true }
        }
        guard ready != nil else { throw Abort(reason: "touchd did not filter the panel: \(daemon?.tail(20) ?? [])") }
        let connected = poll(until: monotonicNow() + 20_000_000) {
            daemon?.output.all.contains { $0.contains("speech server connected") } == true ? true : nil
        }
        guard connected != nil else {
            throw Abort(reason: "touchd did not connect to the speech server: \(daemon?.tail(20) ?? [])")
        }
        events = try attempt { () throws(DriverError) in
            try Daemon(
                executable: "/usr/bin/stdbuf", arguments: ["-oL", "/usr/bin/libinput", "debug-events"],
                environment: [:], removing: Scenario.scrubbedEnvironment,
                echoPrefix: options.verbose ? "events| " : nil, published: false)
        }
        let panelSysname = panel?.devnode.map { String($0.split(separator: "/").last ?? "") } ?? "?"
        twinSysname = poll(until: monotonicNow() + 10_000_000) { () -> String? in
            events?.output.all.last {
                $0.contains("DEVICE_ADDED") && $0.contains(Self.panelName + " ") && !$0.contains(panelSysname + " ")
            }.flatMap { raw in raw.split(separator: " ").first.map { String($0.drop { $0 == "-" }) } }
        }
        guard twinSysname != nil else { throw Abort(reason: "libinput debug-events shows no twin of the panel") }
        sleep(microseconds: 300_000)
    }

    // MARK: - Touches

    @discardableResult
    private func write(_ frame: [TouchChange]) throws(Abort) -> FrameTiming {
        guard let panel else { throw Abort(reason: "no panel") }
        return try attempt { () throws(DriverError) in try panel.write(frame) }
    }

    @discardableResult
    private func tap(_ x: Int, _ y: Int, holding: Microseconds = 60_000) throws(Abort) -> FrameTiming {
        let down = try write([.down(slot: 0, x: x, y: y)])
        sleep(microseconds: holding)
        try write([.up(slot: 0)])
        return down
    }

    private func hold(_ x: Int, _ y: Int, microseconds: Microseconds) throws(Abort) {
        try write([.down(slot: 0, x: x, y: y)])
        sleep(microseconds: microseconds)
        try write([.up(slot: 0)])
    }

    /// A touch on the twin as debug-events printed it: its type and its position in percent of the output.
    struct TwinTouch {
        var type: String
        var x: Double?
        var y: Double?
    }

    private func twinTouches(from cursor: Int) -> [TwinTouch] {
        guard let events, let twin = twinSysname else { return [] }
        return events.output.since(cursor).compactMap { raw -> TwinTouch? in
            let fields = raw.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard fields.count >= 2, fields[0].drop(while: { $0 == "-" }) == twin, fields[1].hasPrefix("TOUCH_")
            else { return nil }
            var touch = TwinTouch(type: String(fields[1]))
            // "… 0 (0) 70.00/20.00 (70.00/20.00mm)": the first pair after the seat slot, in percent.
            if let close = raw.range(of: ") ") {
                let rest = raw[close.upperBound...]
                let pair = rest.prefix { $0 != "(" }.filter { $0 != " " && $0 != "\t" }
                let parts = pair.split(separator: "/")
                if parts.count == 2 {
                    touch.x = Double(parts[0])
                    touch.y = Double(parts[1])
                }
            }
            return touch
        }
    }

    private var eventCursor: Int { events?.output.count ?? 0 }

    /// A tap on `a` outside speech mode: the application gets its down and up through the twin, and the socket
    /// target the action.
    private func checkTouchesFlow(_ when: String) throws(Abort) {
        let cursor = eventCursor
        let messages = target.inbox.count
        try tap(200, 200)
        let flowed = poll(until: monotonicNow() + 3_000_000) { () -> Bool? in
            let touches = twinTouches(from: cursor)
            return touches.contains { $0.type == "TOUCH_UP" } ? true : nil
        }
        let action = poll(until: monotonicNow() + 3_000_000) {
            target.inbox.first(from: messages) { $0.raw.contains("\"action\":\"a\"") }
        }
        var problems: [String] = []
        if flowed == nil { problems.append("the application (debug-events) saw no touch on the twin") }
        if action == nil { problems.append("the socket target got no action a") }
        record(
            "\(when): a tap reaches the application and a's target",
            problems.isEmpty ? nil : problems.joined(separator: "; "))
        sleep(microseconds: 400_000)
    }

    /// The first line touchd sent from `cursor` on that satisfies `condition`, waiting up to `within`.
    private func sent(
        from cursor: Int, within: Microseconds = 3_000_000, _ condition: @escaping (String) -> Bool
    ) -> SSIPLine? {
        poll(until: monotonicNow() + within) {
            proxy.lines.first(from: cursor) { $0.direction == .sent && condition($0.text) }?.element
        }
    }

    private func waitForEnd(from cursor: Int, within: Microseconds = 5_000_000) {
        _ = poll(until: monotonicNow() + within) {
            proxy.lines.first(from: cursor) { $0.direction == .received && $0.text.hasPrefix("702") }
        }
    }

    private func enterByGesture() throws(Abort) {
        let cursor = proxy.lines.count
        try hold(50, 950, microseconds: 1_200_000)
        let spoken = sent(from: cursor) { $0 == Self.introduction }
        record(
            "the start gesture speaks the introduction (SPEAK at the server)",
            spoken != nil ? nil : "no introduction went to the server: \(proxy.lines.since(cursor).map(\.text))")
        waitForEnd(from: cursor)
        sleep(microseconds: 300_000)
    }

    private func explore() throws(Abort) {
        let cursor = eventCursor
        let ssip = proxy.lines.count
        for index in 0..<Self.samples {
            let onA = index % 2 == 0
            let down = try tap(onA ? 200 : 700, 200, holding: 80_000)
            sleep(until: down.beforeReport + 700_000)
            let empty = try tap(500, 600)
            sleep(until: down.beforeReport + 1_500_000)
            explored.append(
                Sample(
                    item: onA ? "a" : "e", touchDown: down.beforeReport, emptyDown: empty.beforeReport,
                    end: monotonicNow()))
        }
        let lines = proxy.lines.since(ssip).filter { $0.direction == .sent }.map(\.text)
        var missing: [String] = []
        for label in [Self.labelA, Self.labelE] where !lines.contains(where: { $0.hasPrefix(label) }) {
            missing.append(label)
        }
        record(
            "exploring onto the control and the element speaks each label (SPEAK at the server)",
            missing.isEmpty ? nil : "never sent: \(missing)")
        let touches = twinTouches(from: cursor)
        record(
            "the application sees no touch while exploring",
            touches.isEmpty ? nil : "debug-events saw \(touches.count) touch events on the twin")
    }

    /// Explores onto `x, y` and waits for the announcement's end.
    private func focus(_ x: Int, _ y: Int) throws(Abort) {
        let cursor = proxy.lines.count
        try tap(x, y, holding: 80_000)
        waitForEnd(from: cursor)
        sleep(microseconds: 200_000)
    }

    private func doubleTap(_ x: Int, _ y: Int) throws(Abort) {
        try tap(x, y)
        sleep(microseconds: 100_000)
        try tap(x, y)
    }

    private func doubleTapElement() throws(Abort) {
        try focus(700, 200)
        let cursor = eventCursor
        try doubleTap(500, 600)
        sleep(microseconds: 1_000_000)
        let touches = twinTouches(from: cursor)
        let downs = touches.filter { $0.type == "TOUCH_DOWN" }
        let ups = touches.filter { $0.type == "TOUCH_UP" }
        var failure: String?
        if downs.count != 1 || ups.count != 1 {
            failure = "the twin gave \(downs.count) downs and \(ups.count) ups: \(touches.map(\.type))"
        } else if let x = downs[0].x, let y = downs[0].y, abs(x - 70) > 1 || abs(y - 20) > 1 {
            failure = "the down was at \(x)%/\(y)%, not at the activation point (70%/20%)"
        } else if downs[0].x == nil {
            failure = "debug-events printed no position for the down"
        }
        record("a double tap anywhere activates the element: one down/up at its activation point", failure)
    }

    private func doubleTapControl() throws(Abort) {
        try focus(200, 200)
        let cursor = eventCursor
        let messages = target.inbox.count
        try doubleTap(500, 600)
        let action = poll(until: monotonicNow() + 3_000_000) {
            target.inbox.first(from: messages) { $0.raw.contains("\"action\":\"a\"") }
        }
        sleep(microseconds: 300_000)
        let actions = target.inbox.since(messages).filter { $0.raw.contains("\"action\":\"a\"") }.count
        let touches = twinTouches(from: cursor)
        var problems: [String] = []
        if action == nil || actions != 1 { problems.append("the socket target got \(actions) actions a") }
        // `a` reaches the application outside speech mode; its activation is a tap through touchd's tracking, which
        // forwards it like any tap on `a` (to_app is true): at most one down and up.
        if touches.filter({ $0.type == "TOUCH_DOWN" }).count > 1 {
            problems.append("the twin gave \(touches.map(\.type))")
        }
        record(
            "a double tap anywhere activates the control: its action reaches the socket target once",
            problems.isEmpty ? nil : problems.joined(separator: "; "))
    }

    private func leaveByControlSocket() throws(Abort) {
        let cursor = proxy.lines.count
        let result = Tool.run([touchd, "ctl", "speech", "off", "--socket", controlSocket], verbose: options.verbose)
        let farewell = sent(from: cursor) { $0 == Self.farewell }
        record(
            "touchd ctl speech off leaves speech mode with the farewell",
            result.succeeded && farewell != nil ? nil : "\(result.summary); farewell sent: \(farewell != nil)")
        waitForEnd(from: cursor)
    }

    /// `start_on_headphones`: plugging headphones in (the jack's SW_HEADPHONE_INSERT to 1) speaks the introduction,
    /// unplugging them the farewell.
    private func checkHeadphones() throws(Abort) {
        guard let jack else { throw Abort(reason: "no jack") }
        var cursor = proxy.lines.count
        try attempt { () throws(DriverError) in try jack.set(inserted: true) }
        let introduction = sent(from: cursor) { $0 == Self.introduction }
        waitForEnd(from: cursor)
        cursor = proxy.lines.count
        try attempt { () throws(DriverError) in try jack.set(inserted: false) }
        let farewell = sent(from: cursor) { $0 == Self.farewell }
        waitForEnd(from: cursor)
        record(
            "plugging headphones in enters speech mode, unplugging them leaves it",
            introduction != nil && farewell != nil
                ? nil
                : "introduction sent: \(introduction != nil), farewell sent: \(farewell != nil); "
                    + "touchd: \(daemon?.output.all.filter { $0.contains("headphone") } ?? [])")
    }

    // MARK: - Figures

    /// The figures of the exploring samples against the capture (5 ms RMS windows, `loud` above the threshold).
    func analyse(_ windows: [Double], clock: CaptureClock, stalls: StallWatch, threshold: Double, window: Int) {
        func index(_ time: Microseconds) -> Int { clock.frame(at: time) / window }
        func time(_ index: Int) -> Microseconds { clock.time(ofFrame: index * window) }
        let loud = windows.map { $0 > threshold }
        let lines = proxy.lines.all
        var toSpeak: [Double] = []
        var toAudio: [Double] = []
        var toSilence: [Double] = []
        var toSilenceMidWord: [Double] = []
        var toCanceled: [Double] = []
        var toFirstCommand: [Double] = []
        var firstReply: [Double] = []
        var perSample: [String] = []
        var late: [String] = []
        var stoodStill: [String] = []
        var quietAtCancel = 0
        for (number, sample) in explored.enumerated() {
            var row = "#\(number + 1) \(sample.item):"
            let speak = lines.first {
                $0.direction == .sent && $0.text == "SPEAK" && $0.arrival >= sample.touchDown
                    && $0.arrival < sample.emptyDown
            }
            // What came before the SPEAK: touchd's first command after the touch-down (its CANCEL) and the
            // server's reply to it, which touchd waits for (SSIP commands go one at a time).
            if let first = lines.first(where: { $0.direction == .sent && $0.arrival >= sample.touchDown }),
                first.arrival < sample.emptyDown
            {
                toFirstCommand.append(Double(first.arrival - sample.touchDown) / 1000)
                if let reply = lines.first(where: {
                    $0.direction == .received && $0.arrival >= first.arrival && !$0.text.hasPrefix("7")
                }) {
                    firstReply.append(Double(reply.arrival - first.arrival) / 1000)
                }
            }
            if let speak {
                let value = Double(speak.arrival - sample.touchDown) / 1000
                toSpeak.append(value)
                row += String(format: " SPEAK %.1f", value)
            } else {
                row += " SPEAK none"
            }
            let span = index(sample.touchDown)..<min(index(sample.emptyDown), loud.count)
            if let onset = span.first(where: { loud[$0] }), time(onset) >= sample.touchDown {
                let value = Double(time(onset) - sample.touchDown) / 1000
                toAudio.append(value)
                row += String(format: ", audio %.1f", value)
            } else {
                row += ", audio none"
            }
            let cancel = lines.first {
                $0.direction == .sent && $0.text.hasPrefix("CANCEL") && $0.arrival >= sample.emptyDown
                    && $0.arrival < sample.end
            }
            guard let cancel else {
                perSample.append(row + ", CANCEL none")
                late.append("#\(number + 1): no CANCEL")
                continue
            }
            let cancelIndex = index(cancel.arrival)
            let before = max(0, cancelIndex - 20)..<min(cancelIndex, loud.count)
            guard !before.isEmpty, loud[before].contains(true) else {
                quietAtCancel += 1
                perSample.append(row + ", silent at CANCEL")
                continue
            }
            let after = min(cancelIndex, loud.count)..<min(index(sample.end), loud.count)
            let silence = after.last(where: { loud[$0] }).map { time($0 + 1) } ?? cancel.arrival
            let stopped = silence > cancel.arrival ? silence - cancel.arrival : 0
            let stop = Double(stopped) / 1000
            toSilence.append(stop)
            // A CANCEL that fell in a pause between words finds the audio already quiet (0 ms): the figure over the
            // samples still loud in the 10 ms before the CANCEL is the one a word cut off mid-way hears.
            let justBefore = max(0, cancelIndex - 2)..<min(cancelIndex, loud.count)
            if !justBefore.isEmpty, loud[justBefore].contains(true) { toSilenceMidWord.append(stop) }
            // Whether the guest itself stood still meanwhile (StallWatch): said beside the figure, which stays the
            // one measured; a stop past 100 ms only by that time is not touchd's nor the server's.
            let lost = stalls.lost(from: cancel.arrival, to: max(silence, cancel.arrival))
            let stalled =
                lost.anyCPU == 0
                ? ""
                : String(
                    format: " (the guest stalled %.1f ms of it on a vCPU, %.1f on every vCPU)",
                    Double(lost.anyCPU) / 1000, Double(lost.everyCPU) / 1000)
            row += String(format: ", CANCEL → silence %.1f", stop) + stalled
            let still = stalls.stoodStill(from: cancel.arrival, to: max(silence, cancel.arrival))
            switch StallWatch.judge(stop: stopped, stoodStill: still, bound: Self.stopBound) {
            case .within: break
            case .guestStoodStill:
                stoodStill.append(
                    String(
                        format: "#%d: %.1f ms, %.1f of it with a vCPU standing still", number + 1, stop,
                        Double(still) / 1000))
            case .late: late.append(String(format: "#%d: %.1f ms", number + 1, stop) + stalled)
            }
            if let canceled = lines.first(where: {
                $0.direction == .received && $0.text.hasPrefix("703") && $0.arrival >= cancel.arrival
            }) {
                let value = Double(canceled.arrival - cancel.arrival) / 1000
                toCanceled.append(value)
                row += String(format: ", → 703 %.1f", value)
            }
            perSample.append(row)
        }
        func summary(_ name: String, _ values: [Double], aim: Double?) -> String {
            guard !values.isEmpty else { return "speech-latency: \(name): no samples" }
            let sorted = values.sorted()
            let median =
                sorted.count % 2 == 1
                ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
            var text = String(
                format: "speech-latency: %@: median %.1f ms, min %.1f, max %.1f, n=%d", name, median,
                sorted.first ?? 0, sorted.last ?? 0, sorted.count)
            if let aim { text += String(format: " (aim ≤ %.0f ms: %@)", aim, median <= aim ? "met" : "NOT met") }
            return text
        }
        figures.append(summary("touch-down → SPEAK at the server", toSpeak, aim: 20))
        figures.append(summary("touch-down → touchd's first command (CANCEL) at the server", toFirstCommand, aim: nil))
        figures.append(summary("that command → the server's reply", firstReply, aim: nil))
        figures.append(summary("touch-down → first audio energy", toAudio, aim: 300))
        figures.append(summary("CANCEL → silence", toSilence, aim: 100))
        figures.append(summary("CANCEL → silence, mid-word (loud in the 10 ms before)", toSilenceMidWord, aim: 100))
        figures.append(summary("CANCEL → 703 CANCELED", toCanceled, aim: nil))
        for row in perSample { figures.append("speech-latency: sample \(row)") }
        record(
            "every exploring touch reached the server as a SPEAK and was heard",
            toSpeak.count == explored.count && toAudio.count == explored.count
                ? nil : "\(toSpeak.count) SPEAKs and \(toAudio.count) onsets for \(explored.count) touches")
        let enough = toSilence.count >= explored.count / 2
        let lateness =
            "late or missing: \(late.joined(separator: ", ")); \(quietAtCancel) samples already silent at the CANCEL"
        if !stoodStill.isEmpty {
            figures.append(
                "speech: past 100 ms after the CANCEL only by the time the guest stood still (not judged late): "
                    + stoodStill.joined(separator: ", "))
        }
        if enough, !late.isEmpty, options.cancelReported {
            figures.append(
                "speech: REPORTED (--cancel-reported, not failed): audio past 100 ms after the CANCEL: \(lateness)")
        }
        record(
            options.cancelReported
                ? "a new touch sends CANCEL and the audio stops (within 100 ms: reported above, not judged)"
                : "a new touch sends CANCEL and the audio stops within 100 ms of it",
            enough && (late.isEmpty || options.cancelReported) ? nil : lateness)
    }
}
