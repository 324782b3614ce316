import Testing

@testable import TouchModel

/// ExploreByTouch on its own: the cases the engine's rule tests (TouchDaemonTests/Engine/EngineSpeechTests.swift) do
/// not reach: overlapping items, more fingers than a gesture has, cancelled contacts, a second tap that moves, and the
/// deadlines' bookkeeping.
@Suite("ExploreByTouch")
struct ExploreByTouchTests {
    /// Two items side by side and a third on top of the first's right half, ranked above it.
    static let items = [
        ExploreByTouch.Item(shape: .rect(Rect(x: 0, y: 0, width: 100, height: 100)), rank: 0, hasHint: true),
        ExploreByTouch.Item(shape: .rect(Rect(x: 200, y: 0, width: 100, height: 100)), rank: 0),
        ExploreByTouch.Item(shape: .rect(Rect(x: 50, y: 0, width: 50, height: 50)), rank: 5),
    ]

    struct Driver {
        var explorer = ExploreByTouch(items: ExploreByTouchTests.items)
        var events: [ExploreByTouch.Event] = []

        mutating func at(_ milliseconds: UInt64, _ samples: ContactSample...) {
            while let due = explorer.nextDeadline, due.microseconds <= milliseconds * 1000 {
                explorer.advance(to: due, into: &events)
            }
            explorer.handle(Frame(time: .milliseconds(milliseconds), samples: samples), into: &events)
        }

        mutating func take() -> [ExploreByTouch.Event] {
            defer { events = [] }
            return events
        }
    }

    @Test("the higher rank wins where items overlap; a later item wins among equals")
    func ranks() {
        var driver = Driver()
        driver.at(0, .began(0, at: Point(x: 75, y: 25)))
        #expect(driver.take() == [.interrupt, .focus(2)])
        driver.at(300, .moved(0, to: Point(x: 75, y: 75)))  // below the top item, beyond its hysteresis
        #expect(driver.take() == [.focus(0)])
    }

    @Test("a third finger spoils the gesture: nothing happens at the lifts")
    func threeFingers() {
        var driver = Driver()
        driver.at(0, .began(0, at: Point(x: 250, y: 50)))
        driver.at(20, .began(1, at: Point(x: 150, y: 150)))
        driver.at(40, .began(2, at: Point(x: 160, y: 150)))
        driver.at(100, .ended(0), .ended(1), .ended(2))
        #expect(driver.take() == [.interrupt, .focus(1)])
        #expect(driver.explorer.nextDeadline == nil)
        #expect(!driver.explorer.isTouching)
    }

    @Test("a cancelled contact ends its gesture without a tap, so no double tap follows")
    func cancelled() {
        var driver = Driver()
        driver.at(0, .began(0, at: Point(x: 250, y: 50)))
        driver.at(50, .cancelled(0))
        driver.at(100, .began(0, at: Point(x: 250, y: 50)))
        driver.at(150, .ended(0))
        // Landing again on the focused item says it again; it is no second tap.
        #expect(driver.take() == [.interrupt, .focus(1), .interrupt, .repeatFocus(1)])
    }

    @Test("a second touch that moves beyond the slop explores instead of activating")
    func secondTapThatMoves() {
        var driver = Driver()
        driver.at(0, .began(0, at: Point(x: 250, y: 50)))
        driver.at(60, .ended(0))
        driver.at(200, .began(0, at: Point(x: 250, y: 50)))
        driver.at(400, .moved(0, to: Point(x: 20, y: 50)))
        driver.at(500, .ended(0))
        #expect(driver.take() == [.interrupt, .focus(1), .interrupt, .focus(0)])
        // The hint of the item found is due 400 ms after it was found.
        #expect(driver.explorer.nextDeadline == .milliseconds(800))
    }

    @Test("new items drop what was pending; moving the focus announces the new item")
    func replaceItems() {
        var driver = Driver()
        driver.at(0, .began(0, at: Point(x: 20, y: 50)))
        driver.at(60, .ended(0))
        #expect(driver.explorer.nextDeadline == .milliseconds(400))
        driver.explorer.replaceItems(Array(ExploreByTouchTests.items.reversed()), focus: nil)
        #expect(driver.explorer.nextDeadline == nil)
        #expect(driver.explorer.focus == nil)
        #expect(driver.explorer.moveFocus(to: 2, at: .milliseconds(100)) == .focus(2))
        #expect(driver.explorer.nextDeadline == .milliseconds(500))
        #expect(driver.explorer.moveFocus(to: 3, at: .milliseconds(100)) == nil)
    }
}
