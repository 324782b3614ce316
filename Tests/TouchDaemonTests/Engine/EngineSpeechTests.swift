import Testing
import TouchModel

@testable import TouchDaemon

/// Explore by touch in the engine, rule by rule of the contract (docs/accessibility.md), with its timings: the exact
/// speech commands and their times, what the application receives, and what the controls do. The SSIP client's wire
/// is tested on its own; the engine's speech ends at ``Effect/speech(_:at:)``.
@Suite("Engine: speech mode (explore by touch)")
struct EngineSpeechTests {
    /// Main screen, in reading order: ok (0), pin (1, private segmented), vol (2, slider), sw (3, toggle, right
    /// beside vol), print (4, disabled), buy (5, an element). Swipes need 40 px (10 mm at 4 px/mm) in 150 ms.
    static let configuration = """
        [output]
        width = 1000
        height = 1000

        [filter]
        enabled = true

        [accessibility]
        enabled = true
        start_gesture = "start"
        exit_after_idle_s = 60
        pixels_per_mm = 4
        passthrough = [{ x = 0, y = 800, width = 400, height = 100 }]

        [targets.t]
        socket = "/run/t.sock"
        responds_to = ["ok", "pin", "vol", "sw", "back"]

        [[screen]]
        id = "main"
        groups = ["g-main"]
        title = "Main"
        lang = "en"

        [[screen]]
        id = "other"
        groups = ["g-other"]
        title = "Andere"
        lang = "de"

        [[group]]
        id = "g-main"
        to_app = false

        [[group]]
        id = "g-other"
        to_app = false

        [[control]]
        id = "ok"
        parent = "g-main"
        frame = { x = 100, y = 100, width = 200, height = 100 }
        label = "OK"
        hint = "Confirms"
        actions = [{ events = ["touchUpInside"], target = "t", action = "ok" }]

        [[control]]
        id = "pin"
        kind = "segmented"
        segments = 4
        value = 2
        parent = "g-main"
        frame = { x = 600, y = 100, width = 200, height = 100 }
        label = "PIN digits"
        private = true
        actions = [{ events = ["valueChanged"], target = "t", action = "pin" }]

        [[control]]
        id = "vol"
        kind = "slider"
        min = 0
        max = 10
        step = 1
        value = 5
        parent = "g-main"
        frame = { x = 100, y = 300, width = 400, height = 100 }
        label = "Volume"
        actions = [{ events = ["valueChanged"], target = "t", action = "vol" }]

        [[control]]
        id = "sw"
        kind = "toggle"
        parent = "g-main"
        frame = { x = 500, y = 300, width = 200, height = 100 }
        label = "Sound"
        actions = [{ events = ["valueChanged"], target = "t", action = "sw" }]

        [[control]]
        id = "print"
        enabled = false
        parent = "g-main"
        frame = { x = 100, y = 500, width = 200, height = 100 }
        label = "Print"

        [[control]]
        id = "back"
        parent = "g-other"
        frame = { x = 100, y = 100, width = 200, height = 100 }
        label = "Zurück"
        actions = [{ events = ["touchUpInside"], target = "t", action = "back" }]

        [[gesture]]
        id = "start"
        kind = "long_press"
        minimum_duration_ms = 3000
        frame = { x = 900, y = 900, width = 100, height = 100 }
        cancels_touches = true

        [[element]]
        id = "buy"
        screen = "main"
        frame = { x = 600, y = 500, width = 300, height = 100 }
        label = "Buy"
        hint = "Pay by card"
        role = "link"
        """

    static let intro = AccessibilityKeys.defaultIntroduction

    /// Feeds the engine frames in output pixels at exact times (as `touchd simulate` does), firing each deadline at
    /// its own time, and keeps every effect.
    struct Driver {
        var engine: Engine
        var effects: [Effect] = []

        /// `reportsEnds`: the server tells when each utterance ends, as speech-dispatcher does for `touchd run`.
        init(_ text: String = EngineSpeechTests.configuration, available: Bool = true, reportsEnds: Bool = false) throws
        {
            let configuration = try EngineHarness.load(text)
            engine = Engine(configuration: configuration, scene: try configuration.makeScene(), observesOutput: true)
            if available { effects += engine.speechAvailability(true, reportsEnds: reportsEnds, now: 0) }
        }

        /// The server finished the utterance marked `mark` at `milliseconds`.
        mutating func ended(_ mark: UInt64?, at milliseconds: UInt64) {
            run(until: milliseconds)
            guard let mark else { return }
            effects += engine.speechEnded(mark: mark, now: milliseconds * 1000)
        }

        /// Fires what falls due up to `milliseconds`.
        mutating func run(until milliseconds: UInt64) {
            while let due = engine.nextDeadline, due.microseconds <= milliseconds * 1000 {
                effects += engine.advance(to: due.microseconds)
            }
        }

        mutating func at(_ milliseconds: UInt64, _ samples: ContactSample...) {
            run(until: milliseconds)
            effects += engine.handle(frame: Frame(time: .milliseconds(milliseconds), samples: samples))
        }

        mutating func tap(_ milliseconds: UInt64, _ x: Double, _ y: Double, contact: ContactID = 0) {
            at(milliseconds, .began(contact, at: Point(x: x, y: y)))
            at(milliseconds + 60, .ended(contact))
        }

        /// A one-finger swipe: 100 px in 50 ms from (x, y).
        mutating func swipe(_ milliseconds: UInt64, dx: Double, dy: Double, from x: Double = 400, _ y: Double = 700) {
            at(milliseconds, .began(0, at: Point(x: x, y: y)))
            at(milliseconds + 50, .moved(0, to: Point(x: x + dx, y: y + dy)))
            at(milliseconds + 100, .ended(0))
        }

        /// Speech mode on at `milliseconds`, as the control socket asks for it; what it said is forgotten.
        mutating func enter(at milliseconds: UInt64 = 0) {
            run(until: milliseconds)
            _ = engine.requestSpeechMode(true, at: .milliseconds(milliseconds), into: &effects)
            effects = []
        }

        /// The effects so far, forgotten.
        mutating func take() -> [Effect] {
            defer { effects = [] }
            return effects
        }
    }

    // MARK: - Reading effects

    /// `MS cancel`, `MS text/en: words`, `MS mode on`…
    static func spoken(_ effects: [Effect]) -> [String] {
        effects.compactMap { effect in
            switch effect {
            case .speech(let command, let time):
                let ms = time.microseconds / 1000
                switch command {
                case .speak(let utterance):
                    return "\(ms) \(utterance.priority.rawValue)\(utterance.language.map { "/\($0)" } ?? ""): "
                        + utterance.text
                case .cancel: return "\(ms) cancel"
                case .pause: return "\(ms) pause"
                case .resume: return "\(ms) resume"
                case .soundIcon(let icon): return "\(ms) sound \(icon)"
                }
            case .speechMode(let on, let time): return "\(time.microseconds / 1000) mode \(on ? "on" : "off")"
            default: return nil
            }
        }
    }

    /// What the application receives (filter mode): `MS down X,Y`, `MS up`.
    static func app(_ effects: [Effect]) -> [String] {
        effects.flatMap { effect -> [String] in
            guard case .output(let output, _) = effect else { return [] }
            return output.entries.compactMap { entry in
                guard case .app(let record) = entry else { return nil }
                let place = record.location.map {
                    " \(EngineSpeechTests.number($0.x)),\(EngineSpeechTests.number($0.y))"
                }
                return "\(record.time.microseconds / 1000) \(record.phase.rawValue)\(place ?? "")"
            }
        }
    }

    static func number(_ value: Double) -> String { Configuration.number(value) }

    /// The end marks of the utterances in `effects`, in order (nil for an unmarked one).
    static func marks(_ effects: [Effect]) -> [UInt64?] {
        effects.compactMap { effect in
            guard case .speech(.speak(let utterance), _) = effect else { return nil }
            return .some(utterance.endMark)
        }
    }

    static func logs(_ effects: [Effect]) -> [(message: String, id: String?)] {
        effects.compactMap { effect in
            guard case .log(_, let message, let metadata) = effect else { return nil }
            return (message, metadata[MessageID.metadataKey].map { "\($0)" })
        }
    }

    // MARK: - Entering and leaving (rules 1–3)

    @Test("rule 1: the start gesture (3 s in the corner) starts speech mode with the introduction, at once")
    func startGesture() throws {
        var driver = try Driver()
        driver.at(0, .began(9, at: Point(x: 950, y: 950)))
        driver.at(3100, .ended(9))
        let effects = driver.take()
        #expect(Self.spoken(effects) == ["3000 mode on", "3000 cancel", "3000 important/en: \(Self.intro)"])
        // The application had the touch until the gesture took it: it ends there, and its lift reaches nobody.
        #expect(Self.app(effects) == ["0 down 950,950", "3000 cancel"])
        #expect(
            Self.logs(effects).contains { $0.id == "\(MessageID.speechMode)" && $0.message == "speech mode started" })
        #expect(driver.engine.speech.sessions == 1)
    }

    @Test("rule 2: the same gesture ends it, with its announcement, and touches reach the app again")
    func gestureEnds() throws {
        var driver = try Driver()
        driver.enter()
        driver.at(1000, .began(0, at: Point(x: 950, y: 950)))
        driver.at(4500, .ended(0))
        let effects = driver.take()
        #expect(
            Self.spoken(effects) == ["1000 cancel", "4000 cancel", "4000 important/en: Speech off.", "4000 mode off"])
        #expect(Self.app(effects).isEmpty)
        // Normal again: the element's place gets the application's tap, the control's its action.
        driver.tap(5000, 750, 550)
        driver.tap(5200, 200, 150)
        let after = driver.take()
        #expect(Self.app(after) == ["5000 down 750,550", "5060 up"])
        #expect(EngineHarness.deliveries(after) == ["ok:touchUpInside"])
        #expect(Self.spoken(after).isEmpty)
    }

    @Test("rule 2: after exit_after_idle_s without a touch it ends by itself; a finger down holds it")
    func idleExit() throws {
        var driver = try Driver()
        driver.enter()
        driver.at(10_000, .began(0, at: Point(x: 400, y: 700)))
        // Down for two minutes: no idle while a finger is on the glass.
        driver.at(130_000, .ended(0))
        driver.run(until: 189_999)
        #expect(Self.spoken(driver.take()) == ["10000 cancel"])
        driver.run(until: 190_000)
        #expect(Self.spoken(driver.take()) == ["190000 cancel", "190000 important/en: Speech off.", "190000 mode off"])
        #expect(driver.engine.nextDeadline == nil)
    }

    @Test("rule 2: a touch in a passthrough region counts as activity too")
    func passthroughIsActivity() throws {
        var driver = try Driver()
        driver.enter()
        driver.at(1000, .began(1, at: Point(x: 100, y: 850)))
        driver.at(90_000, .ended(1))  // a signature of 89 s
        driver.run(until: 149_999)
        #expect(Self.spoken(driver.take()).isEmpty)
        driver.run(until: 150_000)
        #expect(Self.spoken(driver.take()).last == "150000 mode off")
    }

    @Test("rule 3: without a speech server the gesture does not start the mode, touches flow, and the log says why")
    func unavailable() throws {
        var driver = try Driver(available: false)
        driver.at(0, .began(9, at: Point(x: 950, y: 950)))
        driver.at(3100, .ended(9))
        let effects = driver.take()
        #expect(Self.spoken(effects).isEmpty)
        #expect(Self.logs(effects).contains { $0.id == "\(MessageID.speechUnavailable)" })
        #expect(driver.engine.speech.failures == 1)
        driver.tap(4000, 750, 550)
        #expect(Self.app(driver.take()) == ["4000 down 750,550", "4060 up"])
        // Nor does the control socket start it.
        var effectsOfRequest: [Effect] = []
        let refusal = driver.engine.requestSpeechMode(true, at: .milliseconds(5000), into: &effectsOfRequest)
        #expect(refusal == "the speech server cannot speak")
        #expect(!driver.engine.speech.isOn)
    }

    @Test("rule 3: the server going away ends the mode at once, silently, and the next touch reaches the app")
    func serverLost() throws {
        var driver = try Driver()
        driver.enter()
        driver.at(1000, .began(0, at: Point(x: 400, y: 700)))
        let lost = driver.engine.speechAvailability(false, now: 1_100_000)
        #expect(Self.spoken(lost) == ["1100 mode off"])
        #expect(Self.logs(lost).contains { $0.id == "\(MessageID.speechUnavailable)" })
        // The finger that was exploring stays away from the app until it lifts; the next touch is the app's.
        driver.at(1200, .moved(0, to: Point(x: 750, y: 550)))
        driver.at(1300, .ended(0))
        #expect(Self.app(driver.take()).isEmpty)
        driver.tap(2000, 750, 550)
        #expect(Self.app(driver.take()) == ["2000 down 750,550", "2060 up"])
    }

    // MARK: - Exploring (rules 4–8)

    @Test("rule 4: no touch reaches the app or the controls in speech mode, except passthrough regions")
    func nothingReachesTheApp() throws {
        var driver = try Driver()
        driver.enter()
        driver.tap(1000, 750, 550)  // the element
        driver.tap(2000, 200, 150)  // the OK control
        var effects = driver.take()
        #expect(Self.app(effects).isEmpty)
        #expect(EngineHarness.deliveries(effects).isEmpty)
        driver.at(3000, .began(1, at: Point(x: 100, y: 850)))
        driver.at(3050, .moved(1, to: Point(x: 150, y: 860)))
        driver.at(3100, .ended(1))
        effects = driver.take()
        #expect(Self.app(effects) == ["3000 down 100,850", "3050 move 150,860", "3100 up"])
        // The passthrough touch interrupts nothing (the OK hint, due at 2400, went out before it).
        #expect(Self.spoken(effects) == ["2400 message/en: Confirms"])
    }

    @Test("rule 5: landing on an item speaks it at once after a cancel; within it nothing; the focus stays on lift")
    func landingSpeaks() throws {
        var driver = try Driver()
        driver.enter()
        driver.at(1000, .began(0, at: Point(x: 200, y: 350)))
        driver.at(1300, .moved(0, to: Point(x: 300, y: 360)))
        driver.at(1600, .moved(0, to: Point(x: 600, y: 350)))
        driver.at(1900, .ended(0))
        #expect(
            Self.spoken(driver.take()) == [
                "1000 cancel", "1000 text/en: Volume, 5, slider", "1600 text/en: Sound, switch, off",
            ])
        #expect(driver.engine.speech.explorer?.focus == 3)
    }

    @Test("rule 5: a finger on a border does not chatter: 6 px of hysteresis each way")
    func hysteresis() throws {
        var driver = try Driver()
        driver.enter()
        driver.at(1000, .began(0, at: Point(x: 490, y: 350)))  // vol
        driver.at(1300, .moved(0, to: Point(x: 505, y: 350)))  // in sw, within vol's 6 px
        driver.at(1400, .moved(0, to: Point(x: 507, y: 350)))  // beyond: sw
        driver.at(1500, .moved(0, to: Point(x: 495, y: 350)))  // in vol, within sw's 6 px
        driver.at(1600, .moved(0, to: Point(x: 493, y: 350)))  // beyond: vol
        driver.at(1700, .ended(0))
        #expect(
            Self.spoken(driver.take()) == [
                "1000 cancel", "1000 text/en: Volume, 5, slider", "1400 text/en: Sound, switch, off",
                "1600 text/en: Volume, 5, slider",
            ])
    }

    @Test("rule 6: empty space changes nothing; rule 8: lifting never activates")
    func emptySpaceAndLift() throws {
        var driver = try Driver()
        driver.enter()
        driver.at(1000, .began(0, at: Point(x: 200, y: 150)))
        driver.at(1300, .moved(0, to: Point(x: 400, y: 700)))
        driver.at(1600, .ended(0))
        driver.tap(3000, 450, 700)
        let effects = driver.take()
        #expect(
            Self.spoken(effects) == [
                "1000 cancel", "1000 text/en: OK, button", "1400 message/en: Confirms", "3000 cancel",
            ])
        #expect(EngineHarness.deliveries(effects).isEmpty)
        #expect(Self.app(effects).isEmpty)
        #expect(driver.engine.speech.explorer?.focus == 0)
    }

    @Test("rule 7: label, value, role, state; disabled is dimmed; an element says its role")
    func whatIsSpoken() throws {
        var driver = try Driver()
        driver.enter()
        for (index, point) in [(200.0, 150.0), (300, 350), (600, 350), (200, 550), (750, 550)].enumerated() {
            driver.tap(UInt64(1000 * (index + 1)), point.0, point.1)
        }
        let texts = Self.spoken(driver.take()).filter { $0.contains("text/") }
        #expect(
            texts == [
                "1000 text/en: OK, button", "2000 text/en: Volume, 5, slider", "3000 text/en: Sound, switch, off",
                "4000 text/en: Print, button, dimmed", "5000 text/en: Buy, link",
            ])
    }

    @Test("rule 7: the hint follows after 400 ms of quiet, only if the focus stayed and no touch came")
    func hints() throws {
        var driver = try Driver()
        driver.enter()
        driver.tap(1000, 200, 150)
        driver.run(until: 1399)
        #expect(Self.spoken(driver.take()) == ["1000 cancel", "1000 text/en: OK, button"])
        driver.run(until: 1400)
        #expect(Self.spoken(driver.take()) == ["1400 message/en: Confirms"])
        // A new touch within the 400 ms: no hint.
        driver.tap(2000, 750, 550)
        driver.tap(2300, 450, 700)
        driver.run(until: 5000)
        #expect(Self.spoken(driver.take()) == ["2000 cancel", "2000 text/en: Buy, link", "2300 cancel"])
        // The focus moved on within the 400 ms: only the new item's (which has none).
        driver.at(6000, .began(0, at: Point(x: 200, y: 150)))
        driver.at(6300, .moved(0, to: Point(x: 200, y: 350)))
        driver.at(6400, .ended(0))
        driver.run(until: 8000)
        #expect(
            Self.spoken(driver.take()) == [
                "6000 cancel", "6000 text/en: OK, button", "6300 text/en: Volume, 5, slider",
            ])
    }

    @Test("rule 1: with start_on_headphones, plugging headphones in enters speech mode; unplugging them leaves it")
    func headphones() throws {
        let text = Self.configuration.replacingOccurrences(
            of: "exit_after_idle_s = 60\n", with: "exit_after_idle_s = 60\nstart_on_headphones = true\n")
        var driver = try Driver(text)
        driver.effects += driver.engine.headphonesChanged(inserted: true, now: 1_000_000)
        #expect(Self.spoken(driver.take()) == ["1000 mode on", "1000 cancel", "1000 important/en: \(Self.intro)"])
        // Plugged in again (a bouncing switch): nothing more.
        #expect(driver.engine.headphonesChanged(inserted: true, now: 1_500_000).isEmpty)
        driver.effects += driver.engine.headphonesChanged(inserted: false, now: 9_000_000)
        #expect(Self.spoken(driver.take()) == ["9000 cancel", "9000 important/en: Speech off.", "9000 mode off"])
        // Started another way, the mode outlives an unplug.
        driver.enter(at: 10_000)
        driver.effects += driver.engine.headphonesChanged(inserted: true, now: 11_000_000)
        driver.effects += driver.engine.headphonesChanged(inserted: false, now: 12_000_000)
        #expect(Self.spoken(driver.take()).isEmpty)
        #expect(driver.engine.speech.isOn)
    }

    @Test("rule 1: without start_on_headphones the jack changes nothing; rule 3: without a server it says why")
    func headphonesIgnoredOrUnavailable() throws {
        var driver = try Driver()
        #expect(driver.engine.headphonesChanged(inserted: true, now: 1_000_000).isEmpty)
        #expect(!driver.engine.speech.isOn)
        let text = Self.configuration.replacingOccurrences(
            of: "exit_after_idle_s = 60\n", with: "exit_after_idle_s = 60\nstart_on_headphones = true\n")
        var silent = try Driver(text, available: false)
        let effects = silent.engine.headphonesChanged(inserted: true, now: 1_000_000)
        #expect(!silent.engine.speech.isOn)
        #expect(Self.logs(effects).map(\.id) == [MessageID.speechUnavailable.rawValue])
        #expect(silent.engine.speech.failures == 1)
    }

    @Test("rule 7: with the server's 702 END, the hint comes 400 ms after the announcement ends, not after it began")
    func hintAfterEnd() throws {
        var driver = try Driver(reportsEnds: true)
        driver.enter()
        driver.tap(1000, 200, 150)
        var effects = driver.take()
        #expect(Self.spoken(effects) == ["1000 cancel", "1000 text/en: OK, button"])
        let mark = try #require(Self.marks(effects).first ?? nil)
        // Nothing at 1400: the announcement is still being spoken as far as touchd knows.
        driver.run(until: 2299)
        #expect(Self.spoken(driver.take()).isEmpty)
        driver.ended(mark, at: 2300)
        driver.run(until: 2699)
        #expect(Self.spoken(driver.take()).isEmpty)
        driver.run(until: 2700)
        #expect(Self.spoken(driver.take()) == ["2700 message/en: Confirms"])
        // Landing on it again repeats it, with a new mark; its end times the hint again.
        driver.tap(4000, 220, 160)
        effects = driver.take()
        #expect(Self.spoken(effects) == ["4000 cancel", "4000 text/en: OK, button"])
        let again = try #require(Self.marks(effects).first ?? nil)
        #expect(again != mark)
        driver.ended(again, at: 4950)
        driver.run(until: 6000)
        #expect(Self.spoken(driver.take()) == ["5350 message/en: Confirms"])
    }

    @Test("rule 7: only the focused announcement's own end times its hint; a touch before the end cancels it")
    func hintAfterEndOnlyForItsAnnouncement() throws {
        var driver = try Driver(reportsEnds: true)
        driver.enter()
        driver.tap(1000, 200, 150)  // OK, hint "Confirms"
        driver.tap(1500, 750, 550)  // Buy, hint "Pay by card"
        let marks = Self.marks(driver.take()).compactMap { $0 }
        try #require(marks.count == 2)
        // OK's end (its announcement was replaced; the server may still report it) changes nothing.
        driver.ended(marks[0], at: 1800)
        driver.run(until: 1999)
        #expect(Self.spoken(driver.take()) == [])
        driver.ended(marks[1], at: 2000)
        driver.run(until: 3000)
        #expect(Self.spoken(driver.take()) == ["2400 message/en: Pay by card"])
        // A touch on empty space after the announcement and before its end: no hint, whenever the end comes.
        driver.tap(6000, 200, 150)
        let mark = try #require(Self.marks(driver.take()).first ?? nil)
        driver.tap(6500, 450, 700)
        driver.ended(mark, at: 6600)
        driver.run(until: 9000)
        #expect(Self.spoken(driver.take()) == ["6500 cancel"])
        // An item without a hint is not marked: nothing waits for its end.
        driver.tap(10000, 200, 350)
        #expect(Self.marks(driver.take()) == [nil])
    }

    @Test("rule 7: without ends reported (simulate), the hint is timed from the announcement, unmarked")
    func hintWithoutEnds() throws {
        var driver = try Driver()
        driver.enter()
        driver.tap(1000, 200, 150)
        #expect(Self.marks(driver.take()) == [nil])
        driver.run(until: 1400)
        #expect(Self.spoken(driver.take()) == ["1400 message/en: Confirms"])
    }

    // MARK: - Activating (rules 9–10)

    @Test("rule 9: a double tap anywhere activates the focused control, within 300 ms and 10 mm")
    func doubleTap() throws {
        var driver = try Driver()
        driver.enter()
        driver.tap(1000, 200, 150)  // OK focused
        _ = driver.take()
        // Second touch-down exactly 300 ms after the first lift, 30 px away, on empty space.
        driver.tap(2000, 450, 700)
        driver.tap(2360, 470, 722)
        let effects = driver.take()
        #expect(EngineHarness.deliveries(effects) == ["ok:touchUpInside"])
        #expect(Self.spoken(effects) == ["1400 message/en: Confirms", "2000 cancel", "2360 cancel"])
        #expect(driver.engine.speech.activations == 1)
    }

    @Test("rule 9: 301 ms after the lift, or 41 px away, it is no double tap")
    func doubleTapLimits() throws {
        var driver = try Driver()
        driver.enter()
        driver.tap(1000, 200, 150)
        driver.tap(2000, 450, 700)
        driver.tap(2361, 450, 700)  // 301 ms after the lift at 2060
        driver.tap(3000, 450, 700)
        driver.tap(3100, 491, 700)  // 41 px away
        #expect(EngineHarness.deliveries(driver.take()).isEmpty)
    }

    @Test("rule 9: a double tap with nothing focused says so")
    func nothingSelected() throws {
        var driver = try Driver()
        driver.enter()
        driver.tap(1000, 450, 700)
        driver.tap(1200, 450, 700)
        #expect(Self.spoken(driver.take()) == ["1000 cancel", "1200 cancel", "1260 text/en: nothing selected"])
    }

    @Test("rule 9: split tap: a second finger taps while the first rests on the item")
    func splitTap() throws {
        var driver = try Driver()
        driver.enter()
        driver.at(1000, .began(0, at: Point(x: 200, y: 150)))
        driver.at(1500, .began(1, at: Point(x: 600, y: 800)))
        driver.at(1580, .ended(1))
        driver.at(2000, .ended(0))
        let effects = driver.take()
        #expect(EngineHarness.deliveries(effects) == ["ok:touchUpInside"])
        #expect(Self.app(effects).isEmpty)
        // The hint comes while the first finger rests: the focus stayed.
        #expect(Self.spoken(effects) == ["1000 cancel", "1000 text/en: OK, button", "1400 message/en: Confirms"])
    }

    @Test("rule 10: a toggle toggles through its own tracking, and its new state is spoken")
    func toggleActivation() throws {
        var driver = try Driver()
        driver.enter()
        driver.tap(1000, 600, 350)
        driver.tap(1200, 600, 350)
        let effects = driver.take()
        #expect(EngineHarness.deliveries(effects) == ["sw:valueChanged"])
        #expect(Self.spoken(effects).last == "1260 text/en: on")
        // The same control events as a real tap, in order.
        let events = effects.flatMap { effect -> [String] in
            guard case .output(let output, _) = effect else { return [] }
            return output.events.map { "\($0.control):\($0.event)" }
        }
        #expect(
            events == [
                "sw:touchDown", "sw:touchUpInside", "sw:valueChanged", "sw:primaryActionTriggered",
            ])
        #expect(driver.engine.scene.control("sw")?.isSelected == true)
    }

    @Test("rule 10: an element gets exactly one down/up at its activation point; a disabled control nothing")
    func elementActivation() throws {
        var driver = try Driver()
        driver.enter()
        driver.tap(1000, 620, 520)
        driver.tap(1200, 630, 530)
        var effects = driver.take()
        #expect(Self.app(effects) == ["1260 down 750,550", "1260 up"])
        driver.tap(2000, 200, 550)
        driver.tap(2200, 200, 550)
        effects = driver.take()
        #expect(Self.app(effects).isEmpty)
        #expect(EngineHarness.deliveries(effects).isEmpty)
        #expect(Self.spoken(effects).last == "2260 text/en: dimmed")
    }

    @Test("rule 10: in filter mode the element's tap goes to the twin of the panel explored on, in device coordinates")
    func elementTapThroughTheTwin() throws {
        var driver = try EngineHarness.Driver(Self.configuration)
        _ = driver.engine.speechAvailability(true, now: 0)
        _ = driver.plug(1)
        _ = driver.engine.filterApplied([(EngineHarness.Driver.device(1), .grabbed)])
        var effects: [Effect] = []
        _ = driver.engine.requestSpeechMode(true, at: Instant(microseconds: driver.now), into: &effects)
        var frames = EngineFilterTests.frames(driver.tap(at: 700, 520))
        #expect(frames.isEmpty)  // exploring: the application sees nothing
        frames = EngineFilterTests.frames(driver.frame([.down(0, 705, 525)], after: 100))
        frames += EngineFilterTests.frames(driver.frame([.up(0)], after: 50))
        #expect(frames.count == 2)
        #expect(frames.map(\.device) == [1, 1])
        let changes = frames.flatMap(\.changes)
        #expect(changes.map(\.phase) == [.down, .up])
        #expect(changes.first.map { abs(($0.x ?? 0) - 0.75) < 1e-9 && abs(($0.y ?? 0) - 0.55) < 1e-9 } == true)
        #expect(changes[0].touch == changes[1].touch)
    }

    // MARK: - Swipes (rules 11–12)

    @Test("rule 11: swipes right and left move in reading order; at the ends a sound, no wrap")
    func swipes() throws {
        var driver = try Driver()
        driver.enter()
        driver.swipe(1000, dx: 100, dy: 0)  // nothing focused: the first
        driver.swipe(2000, dx: 100, dy: 10)
        driver.swipe(3000, dx: -100, dy: 0)
        driver.swipe(4000, dx: -100, dy: 0)  // before the first: the end
        let effects = driver.take()
        #expect(
            Self.spoken(effects) == [
                "1000 cancel", "1100 text/en: OK, button", "1500 message/en: Confirms", "2000 cancel",
                "2100 text/en: PIN digits, adjustable", "3000 cancel", "3100 text/en: OK, button",
                "3500 message/en: Confirms", "4000 cancel", "4100 sound end-of-list",
            ])
        for _ in 0..<5 { driver.swipe(5000, dx: 100, dy: 0) }
        driver.swipe(6000, dx: 100, dy: 0)
        #expect(Self.spoken(driver.take()).suffix(2) == ["6000 cancel", "6100 sound end-of-list"])
    }

    @Test("rule 11: a swipe starting on an item moves from the focus the customer had; slower is exploring")
    func swipeFromFocus() throws {
        var driver = try Driver()
        driver.enter()
        driver.tap(1000, 600, 350)  // sw, index 3
        driver.swipe(2000, dx: 100, dy: 0, from: 150, 150)  // lands on OK, but a swipe: from sw to print
        #expect(
            Self.spoken(driver.take()) == [
                "1000 cancel", "1000 text/en: Sound, switch, off", "2000 cancel", "2000 text/en: OK, button",
                "2100 text/en: Print, button, dimmed",
            ])
        // 100 px, but in 200 ms: exploring.
        driver.at(3000, .began(0, at: Point(x: 400, y: 700)))
        driver.at(3200, .moved(0, to: Point(x: 400, y: 550)))
        driver.at(3300, .ended(0))
        #expect(Self.spoken(driver.take()) == ["3000 cancel"])
        #expect(driver.engine.speech.explorer?.focus == 4)
    }

    @Test("rule 12: a swipe up or down steps the slider once, sends valueChanged, and says only the new value")
    func adjust() throws {
        var driver = try Driver()
        driver.enter()
        driver.tap(1000, 200, 350)
        _ = driver.take()
        driver.swipe(2000, dx: 0, dy: -100)
        var effects = driver.take()
        #expect(Self.spoken(effects) == ["2000 cancel", "2100 text/en: 6"])
        #expect(EngineHarness.deliveries(effects) == ["vol:valueChanged"])
        #expect(driver.engine.scene.control("vol")?.value == 6)
        driver.swipe(3000, dx: 0, dy: 100)
        driver.swipe(4000, dx: 0, dy: 100)
        effects = driver.take()
        #expect(Self.spoken(effects) == ["3000 cancel", "3100 text/en: 5", "4000 cancel", "4100 text/en: 4"])
        // On a button a vertical swipe does nothing.
        driver.tap(5000, 200, 150)
        driver.swipe(6000, dx: 0, dy: -100)
        effects = driver.take()
        #expect(EngineHarness.deliveries(effects).isEmpty)
        #expect(
            Self.spoken(effects) == [
                "5000 cancel", "5000 text/en: OK, button", "5400 message/en: Confirms", "6000 cancel",
            ])
    }

    // MARK: - Speech control (rules 13–16)

    @Test("rule 13: a two-finger tap pauses speech; another resumes it and says the last announcement again")
    func pauseResume() throws {
        var driver = try Driver()
        driver.enter()
        driver.tap(1000, 200, 350)
        driver.at(2000, .began(0, at: Point(x: 400, y: 700)), .began(1, at: Point(x: 500, y: 700)))
        driver.at(2100, .ended(0), .ended(1))
        driver.at(3000, .began(0, at: Point(x: 400, y: 700)))
        driver.at(3040, .began(1, at: Point(x: 500, y: 700)))
        driver.at(3100, .ended(0))
        driver.at(3120, .ended(1))
        #expect(
            Self.spoken(driver.take()) == [
                "1000 cancel", "1000 text/en: Volume, 5, slider", "2000 cancel", "2100 pause", "3000 cancel",
                "3120 resume", "3120 text/en: Volume, 5, slider",
            ])
    }

    @Test("rule 13: every new touch interrupts; touching the focused item again repeats it at once, with its hint")
    func repeatFocused() throws {
        var driver = try Driver()
        driver.enter()
        driver.tap(1000, 200, 150)
        driver.run(until: 1500)
        _ = driver.take()
        driver.tap(2000, 210, 160)
        driver.run(until: 2399)
        #expect(Self.spoken(driver.take()) == ["2000 cancel", "2000 text/en: OK, button"])
        driver.run(until: 2400)
        #expect(Self.spoken(driver.take()) == ["2400 message/en: Confirms"])
        // Moving within it, after landing, says nothing more.
        driver.at(3000, .began(0, at: Point(x: 150, y: 150)))
        driver.at(3300, .moved(0, to: Point(x: 250, y: 180)))
        driver.at(3350, .ended(0))
        #expect(Self.spoken(driver.take()) == ["3000 cancel", "3000 text/en: OK, button"])
    }

    @Test("rule 14: a new screen: its title, then its first item, which takes the focus (rule 16: in its language)")
    func screenChange() throws {
        var driver = try Driver()
        driver.enter()
        driver.tap(1000, 200, 150)
        _ = driver.take()
        driver.effects += driver.engine.switchScreen(to: "other", at: .milliseconds(2000))
        // The role word in the screen's language too.
        #expect(Self.spoken(driver.take()) == ["2000 text/de: Andere. Zurück, Taste"])
        // A double tap activates it straight away.
        driver.tap(3000, 450, 700)
        driver.tap(3200, 450, 700)
        #expect(EngineHarness.deliveries(driver.take()) == ["back:touchUpInside"])
        // Leaving speaks in the screen's language too.
        var effects: [Effect] = []
        _ = driver.engine.requestSpeechMode(false, at: .milliseconds(4000), into: &effects)
        #expect(Self.spoken(effects) == ["4000 cancel", "4000 important/de: Speech off.", "4000 mode off"])
    }

    @Test("rule 15: a private control's value is never spoken: not when found, adjusted or activated")
    func privateItem() throws {
        var driver = try Driver()
        driver.enter()
        driver.tap(1000, 700, 150)
        driver.swipe(2000, dx: 0, dy: -100)
        driver.tap(3000, 700, 150)
        driver.tap(3150, 700, 150)
        let effects = driver.take()
        #expect(
            Self.spoken(effects) == [
                "1000 cancel", "1000 text/en: PIN digits, adjustable", "2000 cancel", "3000 cancel",
                "3000 text/en: PIN digits, adjustable", "3150 cancel",
            ])
        #expect(EngineHarness.deliveries(effects) == ["pin:valueChanged", "pin:valueChanged"])
        #expect(driver.engine.scene.control("pin")?.value == 2)  // stepped to 3, then tapped in its middle: 2
    }

    @Test("rule 16: the role and state words follow the screen's language tag; English when touchd has no table")
    func words() {
        #expect(SpokenWords.forLanguage("de-AT").toggle == "Schalter")
        #expect(SpokenWords.forLanguage("FR_ch").on == "activé")
        #expect(SpokenWords.forLanguage("pt-BR") == .english)
        #expect(SpokenWords.forLanguage(nil) == .english)
        #expect(SpokenWords.table.values.allSatisfy { !$0.nothingSelected.isEmpty && !$0.dimmed.isEmpty })
    }

    @Test("rule 16: a screen without lang speaks in [accessibility] lang (en), also after a screen in another")
    func noLanguage() throws {
        var driver = try Driver(Self.configuration.replacingOccurrences(of: "lang = \"en\"\n", with: ""))
        driver.enter()
        driver.tap(1000, 200, 150)
        #expect(Self.spoken(driver.take()) == ["1000 cancel", "1000 text/en: OK, button"])
        driver.effects += driver.engine.switchScreen(to: "other", at: .milliseconds(2000))
        #expect(Self.spoken(driver.take()) == ["2000 text/de: Andere. Zurück, Taste"])
        // Back on the screen without lang: not German, which the server would otherwise keep.
        driver.effects += driver.engine.switchScreen(to: "main", at: .milliseconds(3000))
        #expect(Self.spoken(driver.take()) == ["3000 text/en: Main. OK, button"])
    }

    @Test("rule 16: [accessibility] lang is the language of screens without one, role words included")
    func defaultLanguage() throws {
        let text = Self.configuration.replacingOccurrences(of: "lang = \"en\"\n", with: "")
            .replacingOccurrences(of: "pixels_per_mm = 4\n", with: "pixels_per_mm = 4\nlang = \"fr\"\n")
        var driver = try Driver(text)
        driver.enter()
        driver.tap(1000, 200, 150)
        #expect(Self.spoken(driver.take()) == ["1000 cancel", "1000 text/fr: OK, bouton"])
    }
}

/// The control socket's side of explore by touch: the `speech` verb, `state`'s and `stats`' members, the `speech`
/// events (docs/control-socket.md).
@Suite("Engine: speech mode over the control socket")
struct EngineSpeechControlTests {
    static func driver(available: Bool = true) throws -> EngineHarness.Driver {
        var driver = try EngineHarness.Driver(EngineSpeechTests.configuration)
        if available { _ = driver.engine.speechAvailability(true, now: driver.now) }
        _ = driver.plug(1)
        return driver
    }

    static func results(_ effects: [Effect]) -> [String] {
        effects.compactMap { effect in
            switch effect {
            case .control(.response(_, _, let result)): result
            case .control(.failure(_, _, let error)): "\(error.code.rawValue): \(error.message)"
            default: nil
            }
        }
    }

    static func events(_ effects: [Effect]) -> [(recipients: [ControlClientID], members: String)] {
        effects.compactMap { effect in
            guard case .control(.event(let event)) = effect else { return nil }
            return (event.recipients, event.members)
        }
    }

    @Test("speech on and off: the mode changes, the introduction and farewell are spoken, the result says so")
    func onAndOff() throws {
        var driver = try Self.driver()
        var effects = driver.request(.speech(true))
        #expect(Self.results(effects) == [#"{"mode":"on","available":true,"focus":null,"paused":false}"#])
        #expect(EngineSpeechTests.spoken(effects).contains { $0.hasSuffix("important/en: \(EngineSpeechTests.intro)") })
        #expect(Self.results(driver.request(.speech(nil), role: .observer)).first?.contains(#""mode":"on""#) == true)
        effects = driver.request(.speech(false))
        #expect(Self.results(effects) == [#"{"mode":"off","available":true,"focus":null,"paused":false}"#])
        #expect(EngineSpeechTests.spoken(effects).contains { $0.hasSuffix("important/en: Speech off.") })
    }

    @Test("speech on is refused with speech_unavailable without a server, and counted as a failure")
    func refused() throws {
        var driver = try Self.driver(available: false)
        let effects = driver.request(.speech(true))
        #expect(
            Self.results(effects) == ["speech_unavailable: speech mode cannot start: the speech server cannot speak"])
        #expect(EngineSpeechTests.logs(effects).contains { $0.id == "\(MessageID.speechUnavailable)" })
        #expect(
            Self.results(driver.request(.stats)).first?.contains(
                #""speech":{"sessions":0,"activations":0,"failures":1}"#) == true)
        // Only a controller may change the mode.
        #expect(ControlProtocol.needsController(.speech(true)))
        #expect(!ControlProtocol.needsController(.speech(nil)))
    }

    @Test("state shows the focus, a private control's to controllers only; stats counts sessions and activations")
    func stateAndStats() throws {
        var driver = try Self.driver()
        _ = driver.request(.speech(true))
        _ = driver.tap(at: 700, 150)  // the private PIN control
        #expect(
            Self.results(driver.request(.state)).first?.contains(
                #""speech":{"mode":"on","available":true,"focus":"pin","paused":false}"#) == true)
        #expect(
            Self.results(driver.request(.state, role: .observer)).first?.contains(
                #""speech":{"mode":"on","available":true,"focus":null,"paused":false}"#)
                == true)
        _ = driver.tap(at: 200, 150)
        _ = driver.tap(at: 200, 150)  // a double tap: OK is activated
        #expect(
            Self.results(driver.request(.stats)).first?.contains(
                #""speech":{"sessions":1,"activations":1,"failures":0}"#)
                == true)
    }

    @Test("subscribers of speech hear of the mode and each focus; an observer never learns a private focus")
    func subscribers() throws {
        var driver = try Self.driver()
        _ = driver.request(.subscribe(ControlSubscriptionFilter(kinds: ["speech"])), client: 3, role: .controller)
        _ = driver.request(.subscribe(ControlSubscriptionFilter(kinds: ["speech"])), client: 4, role: .observer)
        let entered = Self.events(driver.request(.speech(true)))
        #expect(entered.map(\.recipients) == [[3, 4]])
        var effects = driver.tap(at: 200, 150)
        var events = Self.events(effects)
        #expect(events.map(\.recipients) == [[3, 4]])
        #expect(events.first?.members.contains(#""focus":"ok""#) == true)
        effects = driver.tap(at: 700, 150)
        events = Self.events(effects)
        #expect(events.map(\.recipients) == [[3], [4]])
        #expect(events[0].members.contains(#""focus":"pin""#))
        #expect(events[1].members.contains(#""focus":null"#))
    }
}
