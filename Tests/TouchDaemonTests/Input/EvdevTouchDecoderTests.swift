import Testing
import TouchModel

@testable import TouchDaemon

/// The decoder that filter mode's edge panels and `libinput record` files share: what it makes of evdev events that a
/// recording rarely holds but a live panel sends (the kernel's slot state at the start, palms, a calibration matrix,
/// letting go of a panel with fingers down).
@Suite("evdev touch decoder")
struct EvdevTouchDecoderTests {
    private static let axis = EvdevTouchDecoder.Axis(minimum: 0, maximum: 999)

    private static func decoder(
        calibration: [Double]? = nil, initial: [Int: EvdevTouchDecoder.Slot] = [:]
    ) -> EvdevTouchDecoder {
        EvdevTouchDecoder(
            device: 7, multitouch: true, x: axis, y: axis, slotRange: (0, 9), seatSlotBase: 10_700,
            calibration: calibration, initial: initial)
    }

    /// Feeds `(type, code, value)` triples at `time` milliseconds and returns what came out.
    private static func feed(
        _ decoder: inout EvdevTouchDecoder, at milliseconds: UInt64, _ events: [(Int, Int, Int)]
    ) -> [InputEvent] {
        var out: [InputEvent] = []
        for (type, code, value) in events {
            decoder.decode(
                time: Instant(microseconds: milliseconds * 1000), type: type, code: code, value: value, into: &out)
        }
        return out
    }

    private typealias C = EvdevTouchDecoder.Code
    private static let report = (C.synType, C.synReport, 0)

    private static func touches(_ events: [InputEvent]) -> [TouchEvent] {
        events.compactMap { if case .touch(let touch) = $0 { touch } else { nil } }
    }

    @Test("a touch at the spot of the last one is placed by the kernel's slot state, and numbered from the base")
    func initialPositions() throws {
        var decoder = Self.decoder(initial: [2: .init(x: 500, y: 250)])
        let events = Self.touches(
            Self.feed(&decoder, at: 10, [(C.absType, C.slot, 2), (C.absType, C.trackingID, 41), Self.report]))
        #expect(events.map(\.kind) == [.down, .frame])
        let down = try #require(events.first)
        #expect(down.seatSlot == 10_702)
        #expect(down.slot == 2)
        #expect(down.device == 7)
        #expect(down.time == 10_000)
        #expect(down.x == 0.5 && down.y == 0.25)
    }

    @Test("a contact the panel turns into a palm is cancelled, and its slot ignored until it lifts")
    func palm() {
        var decoder = Self.decoder()
        _ = Self.feed(
            &decoder, at: 1,
            [
                (C.absType, C.trackingID, 1), (C.absType, C.positionX, 100), (C.absType, C.positionY, 100),
                Self.report,
            ])
        let cancelled = Self.touches(Self.feed(&decoder, at: 2, [(C.absType, C.toolType, C.palmTool), Self.report]))
        #expect(cancelled.map(\.kind) == [.cancel, .frame])
        #expect(cancelled.first?.seatSlot == 10_700)
        // Moves of the palm and its lift say nothing.
        #expect(Self.feed(&decoder, at: 3, [(C.absType, C.positionX, 300), Self.report]).isEmpty)
        #expect(Self.feed(&decoder, at: 4, [(C.absType, C.trackingID, -1), Self.report]).isEmpty)
        // A slot that begins as a palm is no touch either; the next finger there is.
        #expect(Self.feed(&decoder, at: 5, [(C.absType, C.trackingID, 2), Self.report]).isEmpty)
        #expect(Self.feed(&decoder, at: 6, [(C.absType, C.trackingID, -1), Self.report]).isEmpty)
        let finger = Self.touches(
            Self.feed(
                &decoder, at: 7,
                [(C.absType, C.toolType, 0), (C.absType, C.trackingID, 3), Self.report]))
        #expect(finger.map(\.kind) == [.down, .frame])
    }

    @Test("libinput's calibration matrix is applied to the normalised position")
    func calibration() throws {
        // Mirrored horizontally: x' = 1 − x.
        var decoder = Self.decoder(calibration: [-1, 0, 1, 0, 1, 0])
        let down = try #require(
            Self.touches(
                Self.feed(
                    &decoder, at: 1,
                    [
                        (C.absType, C.trackingID, 1), (C.absType, C.positionX, 250), (C.absType, C.positionY, 500),
                        Self.report,
                    ])
            ).first)
        #expect(down.x == 0.75 && down.y == 0.5)
        // The identity is no calibration at all.
        let identity = Self.decoder(calibration: [1, 0, 0, 0, 1, 0])
        #expect(identity.calibration == nil)
    }

    @Test("letting go of a panel with fingers down cancels them, in one frame, once")
    func cancelAll() {
        var decoder = Self.decoder(initial: [0: .init(x: 1, y: 1), 3: .init(x: 2, y: 2)])
        _ = Self.feed(
            &decoder, at: 1,
            [
                (C.absType, C.trackingID, 1), (C.absType, C.slot, 3), (C.absType, C.trackingID, 2), Self.report,
            ])
        #expect(decoder.activeSlots == [0, 3])
        var out: [InputEvent] = []
        decoder.cancelAll(at: Instant(microseconds: 9000), into: &out)
        let events = Self.touches(out)
        #expect(events.map(\.kind) == [.cancel, .cancel, .frame])
        #expect(events.map(\.seatSlot) == [10_700, 10_703, -1])
        out.removeAll()
        decoder.cancelAll(at: Instant(microseconds: 9001), into: &out)
        #expect(out.isEmpty)
        // Their lifts, when they come, say nothing.
        #expect(Self.feed(&decoder, at: 10, [(C.absType, C.trackingID, -1), Self.report]).isEmpty)
    }

    @Test("SYN_DROPPED says events were lost and drops everything up to the next report")
    func dropped() {
        var decoder = Self.decoder()
        _ = Self.feed(
            &decoder, at: 1,
            [
                (C.absType, C.trackingID, 1), (C.absType, C.positionX, 10), (C.absType, C.positionY, 10),
                Self.report,
            ])
        let lost = Self.feed(
            &decoder, at: 2, [(C.synType, C.synDropped, 0), (C.absType, C.positionX, 20), Self.report])
        #expect(lost == [.eventsLost(device: 7)])
        // The finger that was down is the router's to cancel: its lift says nothing.
        #expect(Self.feed(&decoder, at: 3, [(C.absType, C.trackingID, -1), Self.report]).isEmpty)
    }
}
