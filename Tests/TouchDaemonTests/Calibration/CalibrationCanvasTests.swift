import Testing
import TouchModel

@testable import TouchDaemon

@Suite("touchd calibrate: the picture and the touches")
struct CalibrationCanvasTests {
    @Test("the current target is a white crosshair, the ones taken green, progress at the bottom; PPM out")
    func picture() throws {
        var canvas = try #require(CalibrationCanvas(width: 400, height: 200))
        let targets = [Point(x: 40, y: 20), Point(x: 360, y: 20), Point(x: 200, y: 100)]
        canvas.draw(targets: targets, current: 1)
        func pixel(_ x: Int, _ y: Int) -> UInt32 { canvas.pixels[y * 400 + x] }
        #expect(pixel(40, 20) == CalibrationCanvas.green)
        // The unit is 5 px on a 200 px high screen: the crosshair is 15 px across, 2 px thick.
        #expect(pixel(360 - 5, 20) == CalibrationCanvas.white)
        #expect(pixel(200, 100) == CalibrationCanvas.black)
        #expect(pixel(0, 0) == CalibrationCanvas.black)
        // Progress: three boxes of 5 px with gaps of 2.5, centred (from x 190), 12.5 px above the bottom.
        #expect(pixel(192, 189) == CalibrationCanvas.green)
        #expect(pixel(199, 189) == CalibrationCanvas.white)
        #expect(pixel(205, 187) == CalibrationCanvas.grey)
        #expect(pixel(207, 189) == CalibrationCanvas.black)
        let ppm = canvas.ppm
        #expect(ppm.starts(with: Array("P6\n400 200\n255\n".utf8)))
        #expect(ppm.count == 15 + 400 * 200 * 3)
        var copy = try #require(CalibrationCanvas(width: 400, height: 200))
        let padded = (0..<200).flatMap { row in
            canvas.pixels[(row * 400)..<(row * 400 + 400)] + [0xDEAD, 0xBEEF]
        }
        padded.withUnsafeBytes { copy.load(from: $0, pitch: 402 * 4) }
        #expect(copy == canvas)
    }

    @Test("text in the built-in 5×7 font: lower case as capitals, unknown characters as spaces")
    func text() throws {
        var canvas = try #require(CalibrationCanvas(width: 20, height: 10))
        canvas.text("i~", x: 0, y: 0, scale: 1, colour: CalibrationCanvas.white)
        let lit = canvas.pixels.indices.filter { canvas.pixels[$0] != CalibrationCanvas.black }.map {
            ($0 % 20, $0 / 20)
        }
        // I: a bar across the top and the bottom, the stem in the middle column.
        #expect(lit.filter { $0.1 == 0 }.map(\.0) == [1, 2, 3])
        #expect(lit.filter { $0.1 == 3 }.map(\.0) == [2])
        #expect(lit.allSatisfy { $0.0 < 5 })
        #expect(CalibrationCanvas.textWidth("ab", scale: 2) == 22)
    }

    @Test("drawing off the canvas or with no finite position draws nothing; sizes are bounded")
    func clipping() throws {
        var canvas = try #require(CalibrationCanvas(width: 10, height: 10))
        canvas.fill(x: -50, y: -50, width: 20, height: 20, colour: CalibrationCanvas.white)
        canvas.fill(x: .nan, y: 0, width: 5, height: 5, colour: CalibrationCanvas.white)
        canvas.fill(x: 5, y: 5, width: .infinity, height: 5, colour: CalibrationCanvas.white)
        #expect(canvas.pixels.allSatisfy { $0 == CalibrationCanvas.black })
        #expect(CalibrationCanvas(width: 0, height: 10) == nil)
        #expect(CalibrationCanvas(width: 20000, height: 10) == nil)
    }

    static func event(_ kind: TouchEvent.Kind, slot: Int, x: Double? = nil, y: Double? = nil, device: Int = 1)
        -> TouchEvent
    {
        TouchEvent(device: device, kind: kind, seatSlot: slot, slot: slot, time: 0, x: x, y: y)
    }

    @Test("a touch is one finger's mean position at its lift; two fingers, a cancel or another panel give none")
    func collector() {
        var collector = TouchCollector(device: 1)
        #expect(collector.handle(Self.event(.down, slot: 0, x: 0.2, y: 0.4)) == .began)
        #expect(collector.handle(Self.event(.motion, slot: 0, x: 0.4, y: 0.6)) == .none)
        #expect(collector.handle(Self.event(.down, slot: 3, x: 0.9, y: 0.9, device: 2)) == .none)
        #expect(collector.handle(Self.event(.frame, slot: -1)) == .none)
        #expect(collector.handle(Self.event(.up, slot: 0)) == .touched(Point(x: 0.30000000000000004, y: 0.5)))

        #expect(collector.handle(Self.event(.down, slot: 0, x: 0.2, y: 0.4)) == .began)
        #expect(collector.handle(Self.event(.down, slot: 1, x: 0.5, y: 0.5)) == .none)
        #expect(collector.handle(Self.event(.up, slot: 1)) == .none)
        #expect(
            collector.handle(Self.event(.up, slot: 0)) == .discarded("two fingers were down: touch with one finger"))

        #expect(collector.handle(Self.event(.down, slot: 0, x: 0.2, y: 0.4)) == .began)
        #expect(collector.handle(Self.event(.cancel, slot: 0)) == .discarded("the touch was cancelled"))

        #expect(collector.handle(Self.event(.down, slot: 0)) == .began)
        #expect(collector.handle(Self.event(.motion, slot: 0, x: .nan, y: 0.1)) == .none)
        #expect(
            collector.handle(Self.event(.up, slot: 0)) == .discarded("the panel reported no position for the touch"))
    }
}
