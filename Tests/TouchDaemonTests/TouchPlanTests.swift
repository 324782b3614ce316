import Foundation
import Logging
import TestKit
import Testing
import TouchModel

@testable import TouchDaemon

/// Touch-downs and lifts answered from their plan (Engine+TouchPlan.swift) against frames handled as they come: the
/// same random sequences through two engines built alike, one driven as `touchd run` drives it (a plan made after
/// every batch, used when the next batch is its frame, the frame handled after its messages) and one without plans,
/// must deliver the same messages, say the same things and be left in the same state after every step.
@Suite("A touch answered from its plan delivers what handling it delivers")
struct TouchPlanTests {
    /// Two engines fed alike; `planned` the way the input loop feeds it.
    struct Pair {
        var planned: Engine
        var plain: Engine
        var plan: TouchPlan?
        var now: UInt64 = 10_000_000
        var answeredDowns = 0
        var answeredLifts = 0
        /// Planned deliveries whose template was filled in and compared.
        var templatesChecked = 0
        /// Touch-downs answered inside a control's quick touch-down area (without asking the scene).
        var answeredInAreas = 0

        init(_ text: String) throws {
            let configuration = try EngineTests.load(text)
            planned = Engine(configuration: configuration, scene: try configuration.makeScene())
            plain = Engine(configuration: configuration, scene: try configuration.makeScene())
            _ = planned.started(now: now)
            _ = plain.started(now: now)
            let device: [InputEvent] = [.deviceAdded(EngineTests.Driver.device(1))]
            _ = planned.handle(device, now: now)
            _ = plain.handle(device, now: now)
            plan = planned.planTouch()
        }

        /// One batch of input into both; the effects of each.
        mutating func input(_ events: [InputEvent], loopNow: UInt64) -> (planned: [Effect], plain: [Effect]) {
            var plannedEffects: [Effect] = []
            var plannedEvents = events
            if let plan, planned.answer(plan, taking: &plannedEvents, into: &plannedEffects) {
                if case .lift = plan { answeredLifts += 1 } else { answeredDowns += 1 }
                if case .downs(let downs) = plan, let point = planned.answeredSubstitution.point?.actual {
                    let time = Instant(microseconds: planned.answeredSubstitution.time)
                    if downs.entries.contains(where: { $0.area?.contains(point, at: time) == true }) {
                        answeredInAreas += 1
                    }
                }
                // What the socket sender writes from the templates is what the substituted deliveries would write.
                for item in planned.answeredDeliveries.items {
                    for terminator: UInt8? in [nil, UInt8(ascii: "\n")] {
                        var buffer: [UInt8] = []
                        let length = item.template.write(
                            substituting: planned.answeredSubstitution, terminator: terminator, into: &buffer)
                        let expected = planned.answeredSubstitution.apply(to: item.delivery).jsonBytes(
                            terminator: terminator)
                        #expect(Array(buffer[..<length]) == expected)
                    }
                    templatesChecked += 1
                }
                #expect(plannedEvents.isEmpty)
                planned.settle(now: loopNow, into: &plannedEffects)
            } else {
                planned.handle(taking: &plannedEvents, now: loopNow, into: &plannedEffects)
            }
            plan = planned.planTouch()
            return (plannedEffects, plain.handle(events, now: loopNow))
        }

        /// Time passes and what fell due fires in both (a wake-up without input: the plan is made again after it).
        mutating func advance(to time: UInt64) -> (planned: [Effect], plain: [Effect]) {
            let effects = (planned.advance(to: time), plain.advance(to: time))
            plan = planned.planTouch()
            return effects
        }
    }

    static func deliveries(_ effects: [Effect]) -> [ActionDelivery] {
        effects.compactMap { if case .deliver(let delivery, _, _) = $0 { delivery } else { nil } }
    }

    static func executors(_ effects: [Effect]) -> [ExecutorKind] {
        effects.compactMap { if case .deliver(_, let executor, _) = $0 { executor } else { nil } }
    }

    /// Everything but the deliveries, as text (an answered lift's other effects come after its deliveries).
    static func others(_ effects: [Effect]) -> [String] {
        effects.compactMap { if case .deliver = $0 { nil } else { "\($0)" } }
    }

    /// The engine's state that a lift changes or reads: the whole scene but its two name indexes (dictionaries, which
    /// print in an order of their own and never change after the scene is built).
    static func state(_ engine: Engine) -> String {
        var statistics = engine.statistics
        statistics.touchesAnswered = 0
        let scene = "\(engine.scene)".replacing(/(controlIndex|recognizerIndex): \[[^\]]*\]/, with: "")
        return "\(scene) \(engine.router.activeContacts) \(engine.nextDeadline.map { "\($0)" } ?? "-") "
            + "\(engine.idleClock) \(statistics)"
    }

    static func compare(_ pair: Pair, _ effects: (planned: [Effect], plain: [Effect]), step: Int) -> Bool {
        let same =
            deliveries(effects.planned) == deliveries(effects.plain)
            && executors(effects.planned) == executors(effects.plain)
            && others(effects.planned) == others(effects.plain)
        #expect(same, "step \(step): the effects differ")
        let sameState = state(pair.planned) == state(pair.plain)
        #expect(sameState, "step \(step): the state differs")
        #expect(pair.planned.statistics.touchPlanMismatches == 0)
        return same && sameState
    }

    static let configurations: [(name: String, text: String)] = [
        ("the end-to-end test's", EngineTests.configuration()),
        ("config/kiosk.toml", (try? String(contentsOfFile: TestSupport.kioskConfig, encoding: .utf8)) ?? ""),
        (
            "config/ticket-machine.toml",
            (try? String(
                contentsOfFile: TestSupport.packageRoot.appendingPathComponent("config/ticket-machine.toml").path,
                encoding: .utf8)) ?? ""
        ),
        (
            "a short stuck-contact timeout and idle",
            EngineTests.configuration()
                .replacingOccurrences(of: "repeat_slop = 45", with: "repeat_slop = 45\nstuck_contact_timeout_ms = 1000")
                + "\n[idle]\ntimeout_s = 2\nactions = [{ events = [\"idle\", \"wake\"], target = \"e2e\", action = \"b\" }]\n"
        ),
    ]

    @Test("random taps, drags, second fingers and waits", arguments: configurations.indices)
    func randomSequences(_ index: Int) throws {
        let (name, text) = Self.configurations[index]
        var random = SeededGenerator(seed: 0x11F7_0000 &+ UInt64(index))
        var answeredLifts = 0
        var answeredDowns = 0
        var templatesChecked = 0
        var answeredInAreas = 0
        var lifts = 0
        var firstDowns = 0
        for _ in 0..<40 {
            var pair = try Pair(text)
            var down: [Int] = []
            var last = (x: 0.5, y: 0.5)
            for step in 0..<60 {
                // Mostly a gap a finger takes; now and then one longer than the stuck-contact timeout or the idle one.
                let gap: UInt64 =
                    switch Int.random(in: 0..<10, using: &random) {
                    case 0: UInt64(1 + Int.random(in: 0..<3_000, using: &random)) * 1_000
                    case 1: 0
                    default: UInt64(5 + Int.random(in: 0..<200, using: &random)) * 1_000
                    }
                pair.now &+= gap
                if Int.random(in: 0..<12, using: &random) == 0 {
                    guard Self.compare(pair, pair.advance(to: pair.now), step: step) else { return }
                    continue
                }
                var events: [InputEvent] = []
                let choice = Int.random(in: 0..<10, using: &random)
                if down.isEmpty || (choice == 0 && down.count < 3) {
                    if down.isEmpty { firstDowns += 1 }
                    let slot = (0..<4).first { !down.contains($0) }!
                    down.append(slot)
                    // Anywhere, on a control, where the last finger went down (a repeat tap), or a few pixels from it.
                    switch Int.random(in: 0..<4, using: &random) {
                    case 0: last = (random.unit() * 1.1 - 0.05, random.unit() * 1.1 - 0.05)
                    case 1:
                        let control = Int.random(in: 0..<max(pair.plain.scene.controlSlotCount, 1), using: &random)
                        if let probe = pair.plain.scene.probe(ofControl: control),
                            let position = pair.plain.router.devicePosition(of: probe.point, on: 1)
                        {
                            last = (position.x + random.unit() * 0.02 - 0.01, position.y + random.unit() * 0.02 - 0.01)
                        }
                    case 2: break
                    default: last = (last.x + random.unit() * 0.06 - 0.03, last.y + random.unit() * 0.06 - 0.03)
                    }
                    events.append(
                        .touch(
                            TouchEvent(
                                device: 1, kind: .down, seatSlot: slot, slot: slot, time: pair.now, x: last.x,
                                y: last.y)))
                } else if choice < 4 {
                    let slot = down[Int.random(in: 0..<down.count, using: &random)]
                    events.append(
                        .touch(
                            TouchEvent(
                                device: 1, kind: .motion, seatSlot: slot, slot: slot, time: pair.now,
                                x: random.unit(), y: random.unit())))
                } else {
                    let slot = down.remove(at: Int.random(in: 0..<down.count, using: &random))
                    if down.isEmpty { lifts += 1 }
                    let kind: TouchEvent.Kind = Int.random(in: 0..<15, using: &random) == 0 ? .cancel : .up
                    events.append(.touch(TouchEvent(device: 1, kind: kind, seatSlot: slot, slot: slot, time: pair.now)))
                }
                events.append(.touch(TouchEvent(device: 1, kind: .frame, seatSlot: -1, slot: -1, time: pair.now)))
                guard Self.compare(pair, pair.input(events, loopNow: pair.now &+ 300), step: step) else { return }
            }
            answeredLifts += pair.answeredLifts
            answeredDowns += pair.answeredDowns
            templatesChecked += pair.templatesChecked
            answeredInAreas += pair.answeredInAreas
        }
        // Most answered frames send something (a lift off every control sends nothing).
        #expect(
            templatesChecked > (answeredLifts + answeredDowns) / 2,
            "\(name): \(templatesChecked) templates checked for \(answeredLifts + answeredDowns) answered frames")
        // The plans must have been used, and not for every frame (some come too late, after a second finger, or land
        // where no control is).
        #expect(answeredLifts > lifts / 4, "\(name): \(answeredLifts) of \(lifts) last lifts answered from a plan")
        #expect(answeredLifts < lifts, "\(name): every last lift answered")
        // The ticket machine's controls send nothing at a touch-down: nothing to plan.
        if name.contains("ticket") {
            #expect(answeredDowns == 0)
        } else {
            #expect(
                answeredDowns > firstDowns / 10, "\(name): \(answeredDowns) of \(firstDowns) first touch-downs answered"
            )
            #expect(answeredDowns < firstDowns, "\(name): every first touch-down answered")
            // Most from a control's area, where the scene is not asked.
            #expect(
                answeredInAreas > answeredDowns / 2,
                "\(name): \(answeredInAreas) of \(answeredDowns) answered touch-downs inside an area")
        }
    }

    @Test("a tap's touch-down and lift are answered from their plans, with their own contact, point and time")
    func tapAnswered() throws {
        var pair = try Pair(EngineTests.configuration())
        pair.now += 20_000
        let down: [InputEvent] = [
            .touch(TouchEvent(device: 1, kind: .down, seatSlot: 3, slot: 3, time: pair.now, x: 0.25, y: 0.15)),
            .touch(TouchEvent(device: 1, kind: .frame, seatSlot: -1, slot: -1, time: pair.now)),
        ]
        guard case .downs(let downs) = try #require(pair.plan) else {
            Issue.record("no touch-down plans while no finger is down")
            return
        }
        // One plan per control that a touch can land on: a and b, each with its area.
        #expect(downs.entries.map { $0.deliveries.items.map(\.delivery.control) } == [["a"], ["b"]])
        #expect(downs.entries.allSatisfy { $0.area != nil })
        let answeredDown = pair.input(down, loopNow: pair.now + 300)
        #expect(pair.answeredDowns == 1)
        let sent = try #require(Self.deliveries(answeredDown.planned).first)
        #expect(sent.event == "touchDown" && sent.contact == 3 && sent.x == 250 && sent.y == 150)
        #expect(sent.timeMicroseconds == pair.now)
        guard case .lift(let plan) = try #require(pair.plan) else {
            Issue.record("no lift plan while one finger is down")
            return
        }
        #expect(plan.deliveries.items.map { "\($0.delivery.control):\($0.delivery.event)" } == ["a:touchUpInside"])
        pair.now += 50_000
        let up: [InputEvent] = [
            .touch(TouchEvent(device: 1, kind: .up, seatSlot: 3, slot: 3, time: pair.now)),
            .touch(TouchEvent(device: 1, kind: .frame, seatSlot: -1, slot: -1, time: pair.now)),
        ]
        var events = up
        var effects: [Effect] = []
        #expect(pair.planned.answer(.lift(plan), taking: &events, into: &effects))
        #expect(Self.deliveries(effects).map(\.timeMicroseconds) == [pair.now])
        // Not handled yet: the contact is still down until the settle.
        #expect(pair.planned.scene.contactCount == 1)
        pair.planned.settle(now: pair.now + 300, into: &effects)
        #expect(pair.planned.scene.contactCount == 0)
        #expect(Self.deliveries(effects) == Self.deliveries(pair.plain.handle(up, now: pair.now + 300)))
        #expect(Self.state(pair.planned) == Self.state(pair.plain))
        #expect(pair.planned.statistics.touchesAnswered == 2)
    }

    @Test("no plan while debug lines or a second finger would make more than deliveries")
    func noPlan() throws {
        let configuration = try EngineTests.load(EngineTests.configuration())
        var debug = Engine(configuration: configuration, scene: try configuration.makeScene(), logsDebug: true)
        var driver = try EngineTests.Driver()
        _ = driver.plug(1)
        _ = driver.frame([.down(0, 200, 200)])
        #expect(driver.engine.planTouch() != nil)
        _ = driver.frame([.down(1, 700, 200)])
        #expect(driver.engine.planTouch() == nil)
        _ = debug.handle([.deviceAdded(EngineTests.Driver.device(1))], now: 1)
        _ = debug.handle(
            [
                .touch(TouchEvent(device: 1, kind: .down, seatSlot: 0, slot: 0, time: 2, x: 0.2, y: 0.2)),
                .touch(TouchEvent(device: 1, kind: .frame, seatSlot: -1, slot: -1, time: 2)),
            ], now: 2)
        #expect(debug.scene.contactCount == 1)
        #expect(debug.planTouch() == nil)
    }
}
