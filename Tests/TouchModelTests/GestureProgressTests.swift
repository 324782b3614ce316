import Testing

@testable import TouchModel

/// A recognizer's progress between resets: `reset()` clears it field by field, so these sequences fill every
/// field a kind uses and check that a reset leaves exactly a new progress.
@Suite("Gesture progress")
struct GestureProgressTests {
    typealias Rules = GestureProgress.Rules

    static func touch(_ serial: TouchSerial, at x: Double, _ y: Double) -> GestureTouch {
        GestureTouch(serial: serial, contact: Int(serial), start: Point(x: x, y: y), location: Point(x: x, y: y))
    }

    static func at(_ milliseconds: UInt64) -> Instant { Instant(microseconds: milliseconds * 1000) }

    /// Every kind, driven through touch-downs, moves and lifts (and a timer) until it has seen and noted all it notes.
    static func busy() -> [(name: String, progress: GestureProgress)] {
        var results: [(name: String, progress: GestureProgress)] = []

        // A double tap, half way: a tap counted, its place and lift remembered, the next tap's window open.
        var tap = GestureProgress()
        let double = Rules(fingers: 1, kind: .tap(GestureRecognizer.Tap(taps: 2, maximumDuration: 200_000)))
        _ = tap.touchDown(touch(1, at: 100, 100), at: at(0), for: double)
        _ = tap.touchLifted(1, at: at(50), in: .possible, for: double)
        _ = tap.touchDown(touch(2, at: 102, 101), at: at(120), for: double)
        results.append(("tap", tap))

        // A long press with its timer running.
        var press = GestureProgress()
        let long = Rules(fingers: 2, kind: .longPress(GestureRecognizer.LongPress(minimumDuration: 300_000)))
        _ = press.touchDown(touch(1, at: 10, 10), at: at(0), for: long)
        _ = press.touchDown(touch(2, at: 30, 10), at: at(5), for: long)
        results.append(("long press", press))

        // An edge swipe that recognized: its direction and translation are set.
        var swipe = GestureProgress()
        let edge = GestureRecognizer.Edge(side: .left, margin: 30, bounds: Rect(x: 0, y: 0, width: 1000, height: 1000))
        let right = Rules(
            fingers: 1,
            kind: .swipe(
                GestureRecognizer.Swipe(directions: .right, minimumDistance: 100, maximumDuration: 500_000, edge: edge))
        )
        _ = swipe.touchDown(touch(1, at: 5, 500), at: at(0), for: right)
        #expect(swipe.touchMoved(1, to: Point(x: 200, y: 505), in: .possible, for: right) == .recognize)
        results.append(("swipe", swipe))

        // A pan under way.
        var pan = GestureProgress()
        let drag = Rules(fingers: 1, kind: .pan(GestureRecognizer.Pan(minimumDistance: 10)))
        _ = pan.touchDown(touch(1, at: 100, 100), at: at(0), for: drag)
        _ = pan.touchMoved(1, to: Point(x: 150, y: 130), in: .possible, for: drag)
        results.append(("pan", pan))

        // A pinch with both fingers down and spread: its initial spread and scale are set.
        var pinch = GestureProgress()
        let two = Rules(fingers: 2, kind: .pinch(GestureRecognizer.Pinch(threshold: 5)))
        _ = pinch.touchDown(touch(1, at: 100, 100), at: at(0), for: two)
        _ = pinch.touchDown(touch(2, at: 200, 100), at: at(5), for: two)
        _ = pinch.touchMoved(2, to: Point(x: 300, y: 100), in: .began, for: two)
        results.append(("pinch", pinch))
        return results
    }

    @Test("a reset leaves a new progress after every kind of sequence")
    func resetForgetsEverything() {
        for (name, busy) in Self.busy() {
            #expect(busy != GestureProgress(), "\(name): the sequence left nothing to forget")
            var progress = busy
            progress.reset()
            #expect(progress == GestureProgress(), "\(name)")
        }
    }

    @Test("a pan notes its translation and a pinch its scale; the other kinds, whose events report neither, do not")
    func onlyWhatTheEventsReport() {
        let one = Rules(fingers: 1, kind: .pan(GestureRecognizer.Pan()))
        var pan = GestureProgress()
        _ = pan.touchDown(Self.touch(1, at: 100, 100), at: Self.at(0), for: one)
        _ = pan.touchMoved(1, to: Point(x: 130, y: 140), in: .possible, for: one)
        #expect(pan.lastTranslation == Point(x: 30, y: 40))
        #expect(pan.lastCentroid == Point(x: 130, y: 140))
        let two = Rules(fingers: 2, kind: .pinch(GestureRecognizer.Pinch()))
        var pinch = GestureProgress()
        _ = pinch.touchDown(Self.touch(1, at: 100, 100), at: Self.at(0), for: two)
        _ = pinch.touchDown(Self.touch(2, at: 200, 100), at: Self.at(1), for: two)
        _ = pinch.touchMoved(2, to: Point(x: 300, y: 100), in: .possible, for: two)
        #expect(pinch.lastScale == 2)
        #expect(pinch.lastTranslation == Point(x: 0, y: 0))
        for kind in [
            GestureRecognizer.Kind.swipe(GestureRecognizer.Swipe(directions: .right)), .tap(GestureRecognizer.Tap()),
            .longPress(GestureRecognizer.LongPress()),
        ] {
            let rules = Rules(fingers: 2, kind: kind)
            var progress = GestureProgress()
            _ = progress.touchDown(Self.touch(1, at: 100, 100), at: Self.at(0), for: rules)
            _ = progress.touchDown(Self.touch(2, at: 200, 100), at: Self.at(1), for: rules)
            _ = progress.touchMoved(2, to: Point(x: 300, y: 120), in: .possible, for: rules)
            #expect(progress.lastCentroid == Point(x: 200, y: 110), "\(kind)")
            #expect(progress.lastContacts == [1, 2])
            #expect(progress.lastTranslation == Point(x: 0, y: 0) && progress.lastScale == 1, "\(kind)")
        }
    }

    @Test("a finished recognizer's lifts and cancels leave what it last saw as it was")
    func finishedRecognizersNoteNothing() {
        let edge = GestureRecognizer.Edge(side: .left, margin: 30, bounds: Rect(x: 0, y: 0, width: 1000, height: 1000))
        let rules = Rules(fingers: 1, kind: .swipe(GestureRecognizer.Swipe(directions: .right, edge: edge)))
        for finished in [GestureRecognizer.State.failed, .ended, .cancelled] {
            var progress = GestureProgress()
            // Away from the edge: the swipe fails at the touch-down and keeps the touch until it lifts.
            #expect(progress.touchDown(Self.touch(1, at: 400, 400), at: Self.at(0), for: rules) == .fail)
            _ = progress.touchDown(Self.touch(2, at: 500, 400), at: Self.at(1), for: rules)
            let seen = (progress.lastCentroid, progress.lastContacts)
            #expect(progress.touchLifted(1, at: Self.at(10), in: finished, for: rules) == nil)
            #expect(progress.touchCancelled(2, in: finished, for: rules) == nil)
            #expect(progress.lastCentroid == seen.0 && progress.lastContacts == seen.1)
            #expect(progress.down.isEmpty)
        }
    }
}
