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
        calibration: [Double]? = nil, initial: [Int: EvdevTouchDecoder.Slot] = [:], resynchronises: Bool = false
    ) -> EvdevTouchDecoder {
        EvdevTouchDecoder(
            device: 7, multitouch: true, x: axis, y: axis, slotRange: (0, 9), seatSlotBase: 10_700,
            calibration: calibration, initial: initial, resynchronises: resynchronises)
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

    /// The kernel's slots for a resync: slot n of `slots` is (tracking id, x, y, palm); the rest of the ten are empty.
    private static func kernel(_ slots: [Int: (Int, Int, Int, Bool)]) -> [EvdevTouchDecoder.KernelSlot] {
        (0..<10).map { slot in
            let (id, x, y, palm) = slots[slot] ?? (-1, 0, 0, false)
            return EvdevTouchDecoder.KernelSlot(trackingID: id, x: x, y: y, palm: palm)
        }
    }

    /// A live panel's decoder with a finger reported down in slot 0 (tracking id 1, at 100, 100), then SYN_DROPPED and
    /// the report that ends the drop; what that drop gave.
    private static func liveDecoderAfterDrop() -> (EvdevTouchDecoder, [InputEvent]) {
        var decoder = Self.decoder(resynchronises: true)
        _ = Self.feed(
            &decoder, at: 1,
            [
                (C.absType, C.trackingID, 1), (C.absType, C.positionX, 100), (C.absType, C.positionY, 100),
                Self.report,
            ])
        // The lost frame had begun a contact in slot 4: forgotten, the kernel's slots say whether it is down.
        let lost = Self.feed(
            &decoder, at: 2,
            [
                (C.absType, C.slot, 4), (C.absType, C.trackingID, 9), (C.synType, C.synDropped, 0),
                (C.absType, C.positionX, 20), Self.report,
            ])
        return (decoder, lost)
    }

    @Test("a live panel asks for the kernel's slots after SYN_DROPPED; a recording does not")
    func resyncAsked() {
        var (decoder, lost) = Self.liveDecoderAfterDrop()
        #expect(lost == [.eventsLost(device: 7)])
        #expect(decoder.needsResynchronising)
        _ = decoder.resynchronise(Self.kernel([:]), slot: 0, at: Instant(microseconds: 3000))
        #expect(!decoder.needsResynchronising)
        var recording = Self.decoder()
        _ = Self.feed(&recording, at: 1, [(C.absType, C.trackingID, 1), (C.absType, C.positionX, 1), Self.report])
        _ = Self.feed(&recording, at: 2, [(C.synType, C.synDropped, 0), Self.report])
        #expect(!recording.needsResynchronising)
    }

    @Test("after lost events a finger still down goes on from where the kernel has it, to its real lift")
    func resyncContinues() {
        var (decoder, _) = Self.liveDecoderAfterDrop()
        let frames = decoder.resynchronise(
            Self.kernel([0: (1, 300, 400, false)]), slot: 0, at: Instant(microseconds: 3000))
        #expect(frames.count == 1)
        let moved = Self.touches(frames.first ?? [])
        #expect(moved.map(\.kind) == [.motion, .frame])
        #expect(moved.first?.seatSlot == 10_700)
        #expect(moved.first?.x == 0.3 && moved.first?.y == 0.4)
        #expect(moved.allSatisfy { $0.time == 3000 })
        // Its next move and its lift are reported as before the loss, for the slot the kernel said is current (the lost
        // frame had chosen slot 4).
        let next = Self.touches(Self.feed(&decoder, at: 4, [(C.absType, C.positionX, 310), Self.report]))
        #expect(next.map(\.kind) == [.motion, .frame])
        let lift = Self.touches(Self.feed(&decoder, at: 5, [(C.absType, C.trackingID, -1), Self.report]))
        #expect(lift.map(\.kind) == [.up, .frame])
        #expect(lift.first?.seatSlot == 10_700)
    }

    @Test("after lost events a finger that lifted among them ends, and one that went down among them begins")
    func resyncEndsAndBegins() {
        var (decoder, _) = Self.liveDecoderAfterDrop()
        // Slot 0 lifted and was taken by a new contact (id 5); slot 4's contact (id 9) went down in the lost frame.
        let frames = decoder.resynchronise(
            Self.kernel([0: (5, 600, 600, false), 4: (9, 200, 100, false)]), slot: 4, at: Instant(microseconds: 3000))
        #expect(frames.count == 2)
        let ends = Self.touches(frames.first ?? [])
        #expect(ends.map(\.kind) == [.up, .frame])
        #expect(ends.first?.seatSlot == 10_700)
        let begins = Self.touches(frames.last ?? [])
        #expect(begins.map(\.kind) == [.down, .down, .frame])
        #expect(begins.map(\.seatSlot) == [10_700, 10_704, -1])
        #expect(begins.first?.x == 0.6 && begins.last?.time == 3000)
        #expect(decoder.activeSlots == [0, 4])
        // Both end with their real lifts.
        let lifts = Self.touches(
            Self.feed(
                &decoder, at: 4,
                [
                    (C.absType, C.slot, 0), (C.absType, C.trackingID, -1), (C.absType, C.slot, 4),
                    (C.absType, C.trackingID, -1), Self.report,
                ]))
        #expect(lifts.map(\.kind) == [.up, .up, .frame])
    }

    @Test("after lost events a finger gone with nothing in its slot ends; a palm that went down is not a touch")
    func resyncLiftAndPalm() {
        var (decoder, _) = Self.liveDecoderAfterDrop()
        let frames = decoder.resynchronise(
            Self.kernel([3: (7, 500, 500, true)]), slot: 3, at: Instant(microseconds: 3000))
        #expect(frames.map { Self.touches($0).map(\.kind) } == [[.up, .frame]])
        #expect(decoder.activeSlots.isEmpty)
        // The palm stays ignored until it lifts, across another resync too.
        #expect(Self.feed(&decoder, at: 4, [(C.absType, C.positionX, 510), Self.report]).isEmpty)
        #expect(Self.feed(&decoder, at: 5, [(C.synType, C.synDropped, 0), Self.report]).isEmpty)
        #expect(
            decoder.resynchronise(Self.kernel([3: (7, 520, 500, false)]), slot: 3, at: Instant(microseconds: 6000))
                .isEmpty)
        #expect(Self.feed(&decoder, at: 7, [(C.absType, C.trackingID, -1), Self.report]).isEmpty)
    }

    @Test("a resync whose kernel state could not be read ends every contact rather than leave one down")
    func resyncUnreadable() {
        var (decoder, _) = Self.liveDecoderAfterDrop()
        let frames = decoder.resynchronise([], slot: nil, at: Instant(microseconds: 3000))
        #expect(frames.map { Self.touches($0).map(\.kind) } == [[.up, .frame]])
        #expect(decoder.activeSlots.isEmpty)
    }
}
