import Testing

@testable import TouchModel

/// Filter mode forwards first what the scene is certain to hand the application (``AppForecast``), and the scene then
/// takes that as made. So a forecast must be exactly what handling the frame gives the application, in every state:
/// checked before every frame of the random sequences of both property suites (controls alone, with limits and the
/// wake touch; random recognizers that delay, hold and cancel), with counts that show the forecasts were made. The
/// forecast checked is written over the one before it, as the daemon does, and must equal one made anew.
@Suite("Application forecast")
struct AppForecastTests {
    struct Tally {
        var frames = 0
        var forecast = 0
        var downs = 0
        var moves = 0
        var ups = 0
        /// Frames of one sample forecast as such (``AppForecast/predict(_:at:)``).
        var loneForecasts = 0
        var violations: [String] = []
        /// One forecast written over frame after frame, as the daemon keeps its edge's (``Scene/appForecast(into:)``).
        var kept = AppForecast.none

        mutating func check(_ operation: PropertyTests.Operation, on scene: inout Scene, seed: UInt64, step: Int) {
            guard case .frame(let frame) = operation else {
                _ = operation.run(on: &scene)
                return
            }
            frames += 1
            // Written over the last one, the forecast is the one made fresh, whatever it held before.
            scene.appForecast(into: &kept)
            if kept != scene.appForecast {
                violations.append("seed \(seed) step \(step): written over the last, the forecast is not a new one")
            }
            let predicted = kept.predict(frame)
            // A frame of one sample: the edge's lone decision (no frame, no array) is the frame's when that is one
            // record, and nothing otherwise.
            if frame.samples.count == 1, let sample = frame.samples.first {
                let lone = kept.predict(sample, at: frame.time)
                if lone.map({ [$0] }) != (predicted?.count == 1 ? predicted : nil) {
                    violations.append("seed \(seed) step \(step): one sample forecast \(String(describing: lone))")
                }
                if lone != nil { loneForecasts += 1 }
            }
            let output = operation.run(on: &scene)
            guard let predicted else { return }
            forecast += 1
            let actual = output.entries.compactMap { entry -> AppTouchRecord? in
                if case .app(let record) = entry { record } else { nil }
            }
            if actual != predicted {
                violations.append("seed \(seed) step \(step) (\(operation)): forecast \(predicted), handed \(actual)")
            }
            for record in predicted {
                switch record.phase {
                case .down: downs += 1
                case .move: moves += 1
                case .up: ups += 1
                case .cancel: break
                }
            }
        }
    }

    @Test("with controls alone (limits, the wake touch, a control kept from the app) a forecast is what the app gets")
    func controls() throws {
        var tally = Tally()
        for seed in UInt64(1)...120 {
            let app = AppSettings(
                maximumContacts: Int(seed % 3), swallowAfterIdle: seed % 4 == 0 ? 300_000 : 0)
            var scene = try PropertyTests.makeScene(dragOutset: 30, app: app)
            for (step, operation) in PropertyTests.operations(seed: seed).enumerated() {
                tally.check(operation, on: &scene, seed: seed, step: step)
            }
        }
        expectNoFailures(tally.violations, "wrong forecasts: ")
        // A good share of the frames is forecast, of every kind (the random frames hold many that only the scene can
        // decide: limits, restarts, cancels, lifts beside new touches, the control kept from the application).
        #expect(tally.forecast * 10 > tally.frames, "\(tally.forecast) of \(tally.frames) frames forecast")
        #expect(tally.downs > 500 && tally.moves > 500 && tally.ups > 500, "\(tally)")
        #expect(tally.loneForecasts > 500, "\(tally)")
    }

    @Test("with random recognizers a forecast is what the app gets")
    func recognizers() throws {
        var tally = Tally()
        for seed in UInt64(1)...120 {
            var scene = try GesturePropertyTests.makeScene(seed: seed)
            for (step, operation) in GesturePropertyTests.operations(seed: seed).enumerated() {
                tally.check(operation, on: &scene, seed: seed, step: step)
            }
        }
        expectNoFailures(tally.violations, "wrong forecasts: ")
        // New touches too: beside recognizers with a region, or off an edge swipe's strip.
        #expect(tally.downs > 50 && tally.moves > 50 && tally.ups > 50, "\(tally)")
        #expect(tally.loneForecasts > 50, "\(tally)")
    }

    @Test("nothing is forecast without an application, at or after a timer, or for a cancel")
    func uncertain() throws {
        let plain = try PropertyTests.makeScene(dragOutset: 30)
        #expect(plain.appForecast.predict(Frame(time: .zero, samples: [.began(1, at: Point(x: 700, y: 50))])) == nil)

        var scene = try PropertyTests.makeScene(dragOutset: 30, app: AppSettings())
        let empty = Point(x: 700, y: 50)
        let down = Frame(time: Instant(microseconds: 1000), samples: [.began(1, at: empty)])
        #expect(scene.appForecast.predict(down)?.map(\.phase) == [.down])
        _ = scene.handle(down)
        let forecast = scene.appForecast
        #expect(forecast.predict(Frame(time: Instant(microseconds: 2000), samples: [.cancelled(1)])) == nil)
        #expect(
            forecast.predict(Frame(time: Instant(microseconds: 2000), samples: [.moved(1, to: empty)]))?.map(\.phase)
                == [.move])
        // A touch on a control kept from the application, or that begins beside a lift, is the scene's to decide.
        let ell = Point(x: 600, y: 530)
        #expect(forecast.predict(Frame(time: Instant(microseconds: 2000), samples: [.began(2, at: ell)])) == nil)
        #expect(
            forecast.predict(
                Frame(time: Instant(microseconds: 2000), samples: [.ended(1), .began(2, at: Point(x: 700, y: 60))]))
                == nil)
        // A control tracking a touch sets a timer (a stuck contact): no forecast from then on.
        let button = Point(x: 100, y: 80)
        _ = scene.handle(Frame(time: Instant(microseconds: 3000), samples: [.began(3, at: button)]))
        let timed = scene.appForecast
        let due = try #require(timed.validUntil)
        #expect(timed.predict(Frame(time: due, samples: [.moved(1, to: empty)])) == nil)
        #expect(timed.predict(Frame(time: Instant(microseconds: 4000), samples: [.moved(1, to: empty)])) != nil)
    }
}
