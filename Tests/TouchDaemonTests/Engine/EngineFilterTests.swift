import Testing
import TouchModel

@testable import TouchDaemon

/// Filter mode in the engine (docs/kiosk.md): which touchscreens the loop is told to grab, what it forwards to their
/// twins and when, and the status. What the application sees is the scene's (Scenarios/app-*.scenario); the twin's
/// kernel side is the VM's (touchd-e2e --filter).
@Suite("Engine: filter mode")
struct EngineFilterTests {
    static func configuration(enabled: Bool = true, cancelWith: String = "lift", appMax: Int = 0) -> String {
        EngineHarness.configuration().replacingOccurrences(
            of: "[targets.e2e]",
            with: """
                [filter]
                enabled = \(enabled)
                cancel_with = "\(cancelWith)"
                app_max_contacts = \(appMax)

                [targets.e2e]
                """)
    }

    static func plans(_ effects: [Effect]) -> [[Int]] {
        effects.compactMap { if case .filterDevices(let devices, _, _) = $0 { devices.map(\.id) } else { nil } }
    }

    static func frames(_ effects: [Effect]) -> [TwinFrame] {
        effects.compactMap { if case .forward(let frame) = $0 { frame } else { nil } }
    }

    /// A driver whose touchscreen 1 the loop grabbed and twinned.
    static func filtering(_ text: String = configuration()) throws -> EngineHarness.Driver {
        var driver = try EngineHarness.Driver(text)
        let effects = driver.plug(1)
        #expect(plans(effects) == [[1]])
        _ = driver.engine.filterApplied([(EngineHarness.Driver.device(1), .grabbed)])
        return driver
    }

    @Test("each touchscreen used is planned for a grab; an unplugged one leaves the plan")
    func plans() throws {
        var driver = try EngineHarness.Driver(Self.configuration())
        #expect(Self.plans(driver.plug(1)) == [[1]])
        #expect(Self.plans(driver.plug(2)) == [[1, 2]])
        #expect(Self.plans(driver.unplug(1)) == [[2]])
        // Without filter mode the loop is never asked to grab anything.
        var off = try EngineHarness.Driver(Self.configuration(enabled: false))
        #expect(Self.plans(off.plug(1)).isEmpty)
    }

    @Test("a tap is forwarded in device coordinates, one twin frame per input frame, in the same call")
    func forwardsTap() throws {
        var driver = try Self.filtering()
        let down = Self.frames(driver.frame([.down(0, 500, 250)]))
        #expect(down.count == 1)
        #expect(down.first?.device == 1)
        let change = try #require(down.first?.changes.first)
        #expect(change.phase == .down)
        #expect(change.slot == 0)
        #expect(abs((change.x ?? 0) - 0.5) < 1e-9 && abs((change.y ?? 0) - 0.25) < 1e-9)
        let up = Self.frames(driver.frame([.up(0)]))
        #expect(up.map { $0.changes.map(\.phase) } == [[.up]])
        #expect(up.first?.changes.first?.touch == change.touch)
    }

    @Test("nothing is forwarded for a touchscreen the loop could not grab, and the status says why")
    func refusedDevice() throws {
        var driver = try EngineHarness.Driver(Self.configuration())
        _ = driver.plug(1)
        let effects = driver.engine.filterApplied([
            (EngineHarness.Driver.device(1), .refused("another process has grabbed it (EBUSY)"))
        ])
        #expect(
            EngineHarness.statuses(effects).last?.contains("not filtered: panel (another process has grabbed it")
                == true)
        #expect(Self.frames(driver.tap(at: 500, 500)).isEmpty)
        #expect(driver.engine.status.contains("not filtered"))
    }

    @Test("a grab that waits for contacts to lift: nothing forwarded, said once, asked again, then filtered")
    func grabWaitsForContactsToLift() throws {
        var driver = try EngineHarness.Driver(Self.configuration())
        _ = driver.plug(1)
        let waiting = driver.engine.filterApplied([(EngineHarness.Driver.device(1), .waiting(contacts: 1))])
        #expect(
            EngineHarness.statuses(waiting).last?.contains("waiting for contacts to lift before filtering: panel")
                == true)
        #expect(driver.engine.filterWaits)
        // The touch that was down reaches the application directly, so nothing is forwarded while the grab waits.
        #expect(Self.frames(driver.tap(at: 500, 500)).isEmpty)
        // The loop asks again after each input; a second wait is not logged again.
        #expect(Self.plans(driver.engine.retryWaitingGrabs()) == [[1]])
        let again = driver.engine.filterApplied([(EngineHarness.Driver.device(1), .waiting(contacts: 1))])
        #expect(!again.contains { if case .log = $0 { true } else { false } })
        // The contacts lifted: grabbed, and the wait is over.
        let grabbed = driver.engine.filterApplied([(EngineHarness.Driver.device(1), .grabbed)])
        #expect(EngineHarness.statuses(grabbed).last?.hasSuffix("filtering 1") == true)
        #expect(!driver.engine.filterWaits)
        #expect(driver.engine.retryWaitingGrabs().isEmpty)
        #expect(Self.frames(driver.tap(at: 500, 500)).count == 2)
    }

    @Test("a refusal is logged when its reason is new, not on every retry")
    func refusalLoggedOnce() throws {
        var driver = try EngineHarness.Driver(Self.configuration())
        _ = driver.plug(1)
        let refusal: [(device: DeviceInfo, outcome: GrabOutcome)] = [
            (EngineHarness.Driver.device(1), .refused("another process has grabbed it (EBUSY)"))
        ]
        let logs = { (effects: [Effect]) in effects.filter { if case .log = $0 { true } else { false } }.count }
        #expect(logs(driver.engine.filterApplied(refusal)) == 1)
        #expect(logs(driver.engine.filterApplied(refusal)) == 0)
    }

    @Test("the admin press: three downs forwarded, then their ends when it is recognized; the lifts go nowhere")
    func adminPress() throws {
        var driver = try Self.filtering()
        let downs = Self.frames(driver.frame([.down(0, 50, 850), .down(1, 100, 900), .down(2, 150, 950)]))
        #expect(downs.flatMap { $0.changes.map(\.phase) } == [.down, .down, .down])
        let recognized = driver.wait(400)
        #expect(EngineHarness.deliveries(recognized).contains("admin:recognized"))
        #expect(Self.frames(recognized).flatMap { $0.changes.map(\.phase) } == [.cancel, .cancel, .cancel])
        #expect(Self.frames(driver.frame([.up(0), .up(1), .up(2)])).isEmpty)
    }

    @Test("a reload that turns filter mode off releases the grabs; contacts down end for the application")
    func reloadOff() throws {
        var driver = try Self.filtering()
        _ = driver.frame([.down(0, 500, 500)])
        let effects = driver.engine.reload(
            .loaded(try EngineHarness.load(Self.configuration(enabled: false))), path: "engine.toml", now: driver.now)
        #expect(Self.frames(effects).flatMap { $0.changes.map(\.phase) } == [.cancel])
        #expect(Self.plans(effects) == [[]])
        // Nothing forwarded any more; the lift of the old contact goes nowhere.
        #expect(Self.frames(driver.frame([.up(0)])).isEmpty)
        #expect(Self.frames(driver.tap(at: 500, 500)).isEmpty)
    }

    @Test("a reload that only changes cancel_with re-plans the same touchscreens with the new style")
    func reloadCancelStyle() throws {
        var driver = try Self.filtering()
        let effects = driver.engine.reload(
            .loaded(try EngineHarness.load(Self.configuration(cancelWith: "palm"))), path: "engine.toml",
            now: driver.now)
        let plans = effects.compactMap {
            if case .filterDevices(let devices, let style, _) = $0 { (devices.map(\.id), style) } else { nil }
        }
        #expect(plans.count == 1)
        #expect(plans.first?.0 == [1] && plans.first?.1 == .palm)
    }

    @Test("check warns when to_app or delays_touches_began cannot matter, and about an app limit above max_contacts")
    func warnings() throws {
        let off = try EngineHarness.load(
            Self.configuration(enabled: false)
                + "\n[[control]]\nid = \"dead\"\nframe = { x = 0, y = 0, width = 10, height = 10 }\nto_app = false\n")
        #expect(off.warnings.map(\.message) == ["to_app = false has no effect: [filter] enabled is not true"])
        let high = try EngineHarness.load(
            Self.configuration(appMax: 12).replacingOccurrences(of: "[tracking]", with: "[tracking]\nmax_contacts = 5"))
        #expect(high.warnings.map(\.message).contains { $0.contains("more than [tracking] max_contacts (5)") })
    }

    @Test("a group's to_app is inherited by its controls; a control's own key wins")
    func groupInheritance() throws {
        let text =
            Self.configuration()
                + """

                [[group]]
                id = "bar"
                to_app = false

                [[control]]
                id = "inside"
                parent = "bar"
                frame = { x = 0, y = 900, width = 10, height = 10 }

                [[control]]
                id = "override"
                parent = "bar"
                to_app = true
                frame = { x = 20, y = 900, width = 10, height = 10 }
                """
        let configuration = try EngineHarness.load(text)
        #expect(configuration.controls.first { $0.id == "inside" }?.toApp == false)
        #expect(configuration.controls.first { $0.id == "override" }?.toApp == true)
        #expect(configuration.controls.first { $0.id == "a" }?.toApp == true)
    }

    @Test("a reload asks again for a touchscreen another process had grabbed (fault-cases.md F5)")
    func reloadRetriesRefused() throws {
        var driver = try EngineHarness.Driver(Self.configuration())
        _ = driver.plug(1)
        _ = driver.engine.filterApplied([
            (EngineHarness.Driver.device(1), .refused("another process has grabbed it (EBUSY)"))
        ])
        let effects = driver.engine.reload(
            .loaded(try EngineHarness.load(Self.configuration())), path: "engine.toml", now: driver.now)
        #expect(Self.plans(effects) == [[1]])
        let applied = driver.engine.filterApplied([(EngineHarness.Driver.device(1), .grabbed)])
        #expect(EngineHarness.statuses(applied).last?.hasSuffix("filtering 1") == true)
        // Nothing refused and nothing changed: a reload plans nothing.
        let again = driver.engine.reload(
            .loaded(try EngineHarness.load(Self.configuration())), path: "engine.toml", now: driver.now)
        #expect(Self.plans(again).isEmpty)
    }

    @Test("lost events (SYN_DROPPED) end touchd's contacts, not the application's: its copy follows the real finger")
    func lostEventsLeaveTheApplicationsTouch() throws {
        var driver = try Self.filtering()
        let down = Self.frames(driver.frame([.down(0, 500, 500)]))
        let touch = try #require(down.first?.changes.first?.touch)
        let effects = driver.engine.handle([.eventsLost(device: 1)], now: driver.now)
        // No cancel for the app: under cancel_with = "lift" that was a lift where the finger rested, a tap.
        #expect(Self.frames(effects).isEmpty)
        // The resync's move and lift of that contact reach the app's copy: it ends where and when the finger does.
        let moved = Self.frames(driver.frame([.move(0, 800, 500)]))
        #expect(moved.map { $0.changes.map(\.phase) } == [[.move]])
        #expect(moved.first?.changes.first?.touch == touch)
        #expect(abs((moved.first?.changes.first?.x ?? 0) - 0.8) < 1e-9)
        let lifted = Self.frames(driver.frame([.up(0)]))
        #expect(lifted.map { $0.changes.map(\.phase) } == [[.up]])
        #expect(lifted.first?.changes.first?.touch == touch)
        // A later touch is the app's as usual.
        #expect(Self.frames(driver.tap(at: 500, 500)).count == 2)
    }

    @Test("a reload ends touchd's contacts in the old layout; the application's copy goes on to its real lift")
    func reloadLeavesTheApplicationsTouch() throws {
        var driver = try Self.filtering()
        let down = Self.frames(driver.frame([.down(0, 500, 500)]))
        let touch = try #require(down.first?.changes.first?.touch)
        let effects = driver.engine.reload(
            .loaded(try EngineHarness.load(Self.configuration())), path: "engine.toml", now: driver.now)
        // Before: a cancel, which cancel_with = "lift" turned into a lift 0.36 s in, before the real one: a tap.
        #expect(Self.frames(effects).isEmpty)
        #expect(Self.frames(driver.frame([.move(0, 520, 500)])).first?.changes.first?.touch == touch)
        let lifted = Self.frames(driver.frame([.up(0)]))
        #expect(lifted.map { $0.changes.map(\.phase) } == [[.up]])
        #expect(lifted.first?.changes.first?.touch == touch)
        // The next touch starts fresh in the new layout.
        let next = Self.frames(driver.tap(at: 500, 500))
        #expect(next.count == 2 && next.first?.changes.first?.touch != touch)
    }

    @Test("forwarding first: what the forecast writes is what the engine would have, and it is not written twice")
    func forwardsFirst() throws {
        var driver = try Self.filtering()
        // A tap on empty space and on control a (to the app), a drag: each frame forecast, and the same frames as the
        // engine alone gives.
        for changes: [EngineHarness.Driver.Change] in [
            [.down(0, 500, 600)], [.move(0, 520, 610)], [.up(0)], [.down(1, 150, 150)], [.up(1)],
        ] {
            var alone = driver
            let expected = Self.frames(alone.frame(changes))
            let events = driver.events(changes)
            let made = driver.engine.edgeForecast(for: 1)
            let forecast = try #require(made)
            let first = try #require(forecast.twinFrame(for: events), "\(changes)")
            #expect([first] == expected)
            let effects = driver.engine.handle(
                events, now: driver.now + 300, forwardedFirst: first)
            #expect(Self.frames(effects).isEmpty)
        }
        #expect(driver.engine.statistics.forwardedFirst == 5)
        #expect(driver.engine.statistics.forecastMisses == 0)
        // The admin press's corner and the left edge's strip may be held: decided by the scene alone.
        let made = driver.engine.edgeForecast(for: 1)
        let forecast = try #require(made)
        #expect(forecast.twinFrame(for: driver.events([.down(0, 50, 900)])) == nil)
        #expect(forecast.twinFrame(for: driver.events([.down(0, 10, 500)])) == nil)
        // Another touchscreen's frame, or one that is not filtered: nothing.
        #expect(forecast.twinFrame(for: driver.events([.down(0, 500, 500)], device: 2)) == nil)
        let other = driver.engine.edgeForecast(for: 2)
        #expect(other == nil)
    }

    @Test("forwarding first in the edge's kept room: a fresh forecast's frames, nothing left from the frame before")
    func forwardsFirstInKeptRoom() throws {
        var driver = try Self.filtering()
        var scratch = EdgeForecast.Scratch()
        var previous: (frame: TwinFrame, copy: [TwinChange])?
        // The second frame is not certain after its move was forecast (a touch-down on the admin press's corner
        // beside it): asked of the same room, and not handled, it must leave nothing in the frames after it.
        for (changes, certain): ([EngineHarness.Driver.Change], Bool) in [
            ([.down(0, 500, 600)], true), ([.move(0, 520, 610), .down(1, 50, 900)], false),
            ([.move(0, 530, 620)], true), ([.down(1, 500, 400)], true),
            ([.move(0, 540, 630), .move(1, 510, 400)], true),
            ([.up(0)], true), ([.up(1)], true),
        ] {
            var alone = driver
            let events = driver.events(changes)
            let made = driver.engine.edgeForecast(for: 1)
            var forecast = try #require(made)
            let first = forecast.twinFrame(for: events, scratch: &scratch)
            #expect(first == forecast.twinFrame(for: events), "\(changes)")
            // A frame handed out before keeps its changes when the room is used again.
            if let previous { #expect(previous.frame.changes == previous.copy) }
            guard certain else {
                #expect(first == nil, "\(changes)")
                continue
            }
            let written = try #require(first, "\(changes)")
            previous = (written, Array(written.changes))
            #expect([written] == Self.frames(alone.frame(changes)), "\(changes)")
            let effects = driver.engine.handle(events, now: driver.now + 300, forwardedFirst: written)
            #expect(Self.frames(effects).isEmpty)
        }
        #expect(driver.engine.statistics.forecastMisses == 0)
    }

    @Test("a resume found after a frame forwarded first with nothing down cancels nothing (fault-cases.md P1)")
    func resumeAfterForwardingFirst() throws {
        var driver = try Self.filtering()
        // Nothing down anywhere: the forecast lets the suspend check's clocks wait until after the twin's write.
        let made = driver.engine.edgeForecast(for: 1)
        let forecast = try #require(made)
        #expect(forecast.resumeCancelsNothing)
        var alone = driver
        let expected = Self.frames(alone.frame([.down(0, 500, 600)]))
        let events = driver.events([.down(0, 500, 600)])
        let first = try #require(forecast.twinFrame(for: events))
        #expect([first] == expected)
        // The clocks, read after the write, say the machine slept 30 s: nothing is cancelled or forwarded, and the
        // engine then makes exactly what was written.
        let resumed = driver.engine.resumed(afterSleeping: 30_000_000, now: driver.now + 200)
        #expect(Self.frames(resumed).isEmpty)
        #expect(
            resumed.contains {
                if case .log(.info, let message, let metadata) = $0 {
                    message.contains("suspended") && metadata["contacts"] == "0"
                } else {
                    false
                }
            })
        let effects = driver.engine.handle(events, now: driver.now + 300, forwardedFirst: first)
        #expect(Self.frames(effects).isEmpty)
        #expect(driver.engine.statistics.forwardedFirst == 1)
        #expect(driver.engine.statistics.forecastMisses == 0)
        // A finger down: a resume would cancel it, so the clocks come first, and the forecast says so.
        let held = driver.engine.edgeForecast(for: 1)
        #expect(held?.resumeCancelsNothing == false)
        // The resume then ends the application's touch before the lift is read: the lift is not forwarded.
        let cancelled = Self.frames(driver.engine.resumed(afterSleeping: 30_000_000, now: driver.now + 400))
        #expect(cancelled.flatMap(\.changes).map(\.phase) == [.cancel])
        // The finger still down was cancelled already: another resume would cancel nothing.
        let orphaned = driver.engine.edgeForecast(for: 1)
        #expect(orphaned?.resumeCancelsNothing == true)
        #expect(Self.frames(driver.frame([.up(0)])).isEmpty)
        // A finger on another touchscreen counts too: nothing is down on this panel, yet a resume would cancel it.
        _ = driver.plug(2)
        _ = driver.frame([.down(1, 500, 600)], device: 2)
        let other = driver.engine.edgeForecast(for: 1)
        #expect(other?.resumeCancelsNothing == false)
    }

    @Test("a change forwarded first that the scene does not make is said as an error and its touch cancelled")
    func forecastMiss() throws {
        var driver = try Self.filtering()
        // A touch-down on control kept from nobody, but handed over as if written first for another touch number.
        let events = driver.events([.down(0, 500, 500)])
        let wrong = TwinFrame(
            device: 1, changes: [TwinChange(touch: 1 << 47, phase: .down, slot: 0, x: 0.5, y: 0.5)])
        let effects = driver.engine.handle(events, now: driver.now + 300, forwardedFirst: wrong)
        #expect(driver.engine.statistics.forecastMisses == 1)
        #expect(
            effects.contains {
                if case .log(.error, let message, _) = $0 { message.contains("forwarded first") } else { false }
            })
        // The real touch-down is forwarded as usual, and the wrong one cancelled.
        #expect(Self.frames(effects).flatMap { $0.changes.map(\.phase) } == [.down, .cancel])
    }
}
