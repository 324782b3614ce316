import CLibinput
import TestKit
import Testing
import TouchModel

@testable import TouchDaemon

/// Filter mode's first write straight from the panel's raw events (``EvdevTouchDecoder/loneChange(_:at:)`` and
/// ``EdgeForecast/twinChange(for:)`` of its answer, docs/kiosk.md, "Forward first"): for random panels and
/// frames, what it writes is exactly what decoding the frame and forecasting the decoded events writes, and it
/// answers for the frames that matter (a finger going down, moving, lifting).
@Suite("Forwarding one contact's change before decoding")
struct LoneChangeTests {
    private typealias C = EvdevTouchDecoder.Code

    private static func event(_ type: Int, _ code: Int, _ value: Int) -> input_event {
        input_event(time: timeval(), type: UInt16(type), code: UInt16(code), value: Int32(value))
    }

    /// One frame of a panel with slots 0…9 and axes 0…999, without its SYN_REPORT: mostly what panels send (one
    /// contact begins, moves or lifts, with the single-touch axes and buttons beside it, or two contacts at once),
    /// otherwise events drawn at random from every code the decoder reads, out-of-range slots and palms among them.
    private static func frame(_ random: inout SeededGenerator, down: [Int]) -> [input_event] {
        var events: [input_event] = []
        let free = (0..<10).filter { !down.contains($0) }
        func noise() {
            // BTN_TOUCH, ABS_X, MSC_TIMESTAMP: read by nothing on a multitouch panel.
            for (type, code, range) in [(C.keyType, C.buttonTouch, 0...1), (C.absType, C.absX, 0...999), (4, 5, 0...9)]
            where Bool.random(using: &random) {
                events.append(event(type, code, Int.random(in: range, using: &random)))
            }
        }
        func slot(_ slot: Int) {
            if slot != 0 || Bool.random(using: &random) { events.append(event(C.absType, C.slot, slot)) }
        }
        func position() {
            if Int.random(in: 0..<6, using: &random) > 0 {
                events.append(event(C.absType, C.positionX, Int.random(in: 0...999, using: &random)))
            }
            if Int.random(in: 0..<6, using: &random) > 0 {
                events.append(event(C.absType, C.positionY, Int.random(in: 0...999, using: &random)))
            }
        }
        switch Int.random(in: 0..<10, using: &random) {
        case 0..<3:
            guard let target = free.randomElement(using: &random) else { break }
            slot(target)
            if Int.random(in: 0..<8, using: &random) == 0 { events.append(event(C.absType, C.toolType, 0)) }
            events.append(event(C.absType, C.trackingID, Int.random(in: 0...65535, using: &random)))
            position()
        case 3..<5:
            guard let target = down.randomElement(using: &random) else { break }
            slot(target)
            position()
        case 5..<7:
            guard let target = down.randomElement(using: &random) else { break }
            slot(target)
            if Int.random(in: 0..<4, using: &random) == 0 { position() }
            events.append(event(C.absType, C.trackingID, -1))
        case 7:
            for target in [free.randomElement(using: &random), down.randomElement(using: &random)].compactMap({ $0 }) {
                slot(target)
                events.append(event(C.absType, C.trackingID, down.contains(target) ? -1 : 7))
                position()
            }
        default:
            let codes = [C.slot, C.trackingID, C.positionX, C.positionY, C.toolType]
            for _ in 0..<Int.random(in: 1...5, using: &random) {
                let code = codes.randomElement(using: &random) ?? C.slot
                let value =
                    switch code {
                    case C.slot: Int.random(in: -1...11, using: &random)
                    case C.trackingID: Int.random(in: -1...3, using: &random)
                    case C.toolType: [0, 1, C.palmTool].randomElement(using: &random) ?? 0
                    default: Int.random(in: 0...999, using: &random)
                    }
                events.append(event(C.absType, code, value))
            }
            if Int.random(in: 0..<8, using: &random) == 0 { events.append(event(C.synType, C.synDropped, 0)) }
        }
        noise()
        return events.shuffledNoise(&random)
    }

    private static func decode(
        _ decoder: inout EvdevTouchDecoder, _ events: some Sequence<input_event>, at time: Instant,
        into out: inout [InputEvent]
    ) {
        for event in events {
            decoder.decode(
                time: time, type: Int(event.type), code: Int(event.code), value: Int(event.value), into: &out)
        }
    }

    @Test("the one contact's change found in a frame's raw events is what decoding the frame reports")
    func decoderAgrees() {
        var random = SeededGenerator(seed: 0x10E_C4A4_6E)
        var found: [TouchEvent.Kind: Int] = [:]
        for round in 0..<40 {
            let calibration: [Double]? = round % 3 == 0 ? [-1, 0, 1, 0, 1, 0] : nil
            var decoder = EvdevTouchDecoder(
                device: 3, multitouch: true, x: .init(minimum: 0, maximum: 999), y: .init(minimum: 0, maximum: 999),
                slotRange: (0, 9), seatSlotBase: 10_300, calibration: calibration,
                initial: round % 2 == 0 ? [0: .init(x: 10, y: 20), 4: .init(x: 500, y: nil)] : [:],
                resynchronises: round % 4 == 1)
            var time = Instant(microseconds: 1_000_000)
            for _ in 0..<500 {
                time = time.advanced(by: 10_000)
                let events = Self.frame(&random, down: decoder.activeSlots)
                var out: [InputEvent] = []
                // Sometimes the frame began in an earlier read, already decoded.
                let split =
                    Int.random(in: 0..<5, using: &random) == 0 ? Int.random(in: 0...events.count, using: &random) : 0
                Self.decode(&decoder, events[..<split], at: time, into: &out)
                let lone = decoder.loneChange(events[split...], at: time)
                Self.decode(&decoder, events[split...] + [Self.event(C.synType, C.synReport, 0)], at: time, into: &out)
                if decoder.needsResynchronising { _ = decoder.resynchronise([], slot: nil, at: time) }
                guard let lone else { continue }
                found[lone.kind, default: 0] += 1
                let expected: [InputEvent] = [
                    .touch(
                        TouchEvent(
                            device: 3, kind: lone.kind, seatSlot: lone.seatSlot, slot: lone.slot,
                            time: time.microseconds, x: lone.x, y: lone.y)),
                    .touch(TouchEvent(device: 3, kind: .frame, seatSlot: -1, slot: -1, time: time.microseconds)),
                ]
                #expect(out == expected, "\(events.map { ($0.type, $0.code, $0.value) }) split at \(split)")
                #expect(lone.seatSlot == 10_300 + lone.slot)
            }
        }
        // Not a vacuous proof: each kind of change was found many times.
        #expect(found[.down, default: 0] > 500)
        #expect(found[.motion, default: 0] > 500)
        #expect(found[.up, default: 0] > 500)
    }

    /// The filter tests' layout (buttons, a long press's corner, a left-edge swipe), with `extra` in `[filter]` and
    /// `output` in `[output]`.
    private static func configuration(filter extra: String, output: String = "") -> String {
        EngineFilterTests.configuration(appMax: 3)
            .replacingOccurrences(of: "app_max_contacts = 3", with: "app_max_contacts = 3\n" + extra)
            .replacingOccurrences(of: "height = 1000\n", with: "height = 1000\n" + output)
    }

    @Test(
        "what the edge writes from one contact's change is what the forecast writes from the decoded frame",
        arguments: [
            configuration(filter: ""), configuration(filter: "twin_space = \"output\"", output: "rotation = 90\n"),
            configuration(filter: "swallow_after_idle_s = 1"),
        ])
    func forecastAgrees(_ text: String) throws {
        var random = SeededGenerator(seed: 0xF0_4EC4_57)
        var driver = try EngineFilterTests.filtering(text)
        var decoder = EvdevTouchDecoder(
            device: 1, multitouch: true, x: .init(minimum: 0, maximum: 999), y: .init(minimum: 0, maximum: 999),
            slotRange: (0, 9), seatSlotBase: EdgePanel.seatSlotBase(device: 1), resynchronises: true)
        var written: [AppTouchRecord.Phase: Int] = [:]
        for _ in 0..<3000 {
            driver.now += UInt64.random(in: 2_000...60_000, using: &random)
            if Int.random(in: 0..<40, using: &random) == 0 {
                // Long enough for the long press to fire and the wake touch to be due.
                driver.now += 1_200_000
                _ = driver.engine.advance(to: driver.now)
            }
            let time = Instant(microseconds: driver.now)
            let events = Self.frame(&random, down: decoder.activeSlots)
            var forecast = driver.engine.edgeForecast(for: 1)
            let lone = decoder.loneChange(events, at: time)
            var decoded: [InputEvent] = []
            Self.decode(&decoder, events + [Self.event(C.synType, C.synReport, 0)], at: time, into: &decoded)
            // After lost events, the kernel's slots unread: every contact ends, in frames of their own.
            let resynchronised =
                decoder.needsResynchronising ? decoder.resynchronise([], slot: nil, at: time) : []
            let expected = forecast?.twinFrame(for: decoded)
            if let lone {
                let first = forecast?.twinChange(for: lone)
                // Certain of the one change exactly when the decoded frame is (a lift that also moves is not lone).
                #expect(first.map { TwinFrame(device: 1, changes: [$0]) } == expected, "\(lone)")
                if let first { written[first.phase, default: 0] += 1 }
            }
            if !decoded.isEmpty {
                _ = driver.engine.handle(decoded, now: driver.now + 300, forwardedFirst: expected)
            }
            for frame in resynchronised { _ = driver.engine.handle(frame, now: driver.now + 300) }
        }
        #expect(driver.engine.statistics.forecastMisses == 0)
        #expect(written[.down, default: 0] > 100)
        #expect(written[.move, default: 0] > 100)
        #expect(written[.up, default: 0] > 100)
    }
}

extension Array where Element == input_event {
    /// The frame with its noise events (keys, single-touch axes, timestamps) moved to random places, as panels order
    /// them differently; the multitouch events keep their order.
    fileprivate func shuffledNoise(_ random: inout SeededGenerator) -> [input_event] {
        // ABS_MT_* (codes 47 and up) and SYN.
        let ordered = { (event: input_event) in event.type == 3 && event.code >= 47 || event.type == 0 }
        var result = filter(ordered)
        for event in self where !ordered(event) {
            result.insert(event, at: Int.random(in: 0...result.count, using: &random))
        }
        return result
    }
}
