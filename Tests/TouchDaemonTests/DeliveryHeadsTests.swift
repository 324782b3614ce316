import Testing
import TouchModel

@testable import TouchDaemon

/// The engine's delivery heads (issue 17): every action of one binding shares one head, made on the binding's first
/// action; the message is the same as one written from the names; a reload makes the heads again; and no more than
/// ``DeliveryHeads/capacity`` are kept.
@Suite("Delivery heads")
struct DeliveryHeadsTests {
    @Test("the deliveries of one binding share one head, made once, and their messages are as written from the names")
    func oneHeadPerBinding() throws {
        var driver = try EngineTests.Driver()
        _ = driver.plug(1)
        var deliveries: [ActionDelivery] = []
        for _ in 0..<5 {
            deliveries += EngineTests.deliveryValues(driver.tap(at: 200, 200))
            _ = driver.wait(500)  // past the repeat window: no touchDownRepeat
        }
        #expect(deliveries.map(\.event) == Array(repeating: ["touchDown", "touchUpInside"], count: 5).flatMap { $0 })
        // touchDown and touchUpInside of `a`: two bindings, two heads, however many taps.
        #expect(driver.engine.heads.made == 2)
        #expect(driver.engine.heads.count == 2)
        let downs = deliveries.filter { $0.event == "touchDown" }
        #expect(downs.allSatisfy { $0.head === downs[0].head })
        #expect(deliveries[1].head !== deliveries[0].head)

        for delivery in deliveries {
            let written = ActionDelivery(
                action: delivery.action, target: delivery.target, control: delivery.control, event: delivery.event,
                timeMicroseconds: delivery.timeMicroseconds, contact: delivery.contact, x: delivery.x, y: delivery.y,
                value: delivery.value, responder: delivery.responder, gesture: delivery.gesture,
                device: delivery.device, generation: delivery.generation)
            #expect(delivery == written)
            #expect(delivery.json == written.json)
            #expect(delivery.jsonBytes(terminator: 10) == written.jsonBytes(terminator: 10))
        }
        #expect(
            deliveries[0].json
                == #"{"action":"a","target":"e2e","control":"a","event":"touchDown","time_us":10020000,"contact":0,"#
                + #""x":200,"y":200,"responder":"a","device":"event1","generation":1}"#)

        // Another control's actions are other bindings.
        _ = driver.tap(at: 700, 200)
        #expect(driver.engine.heads.made == 4)
    }

    @Test("a gesture's action has its own head, with the gesture's id and its event's name")
    func gestureHead() throws {
        var driver = try EngineTests.Driver()
        _ = driver.plug(1)
        _ = driver.frame([.down(0, 5, 500)])
        _ = driver.frame([.move(0, 100, 500)])
        let swipe = EngineTests.deliveryValues(driver.frame([.move(0, 300, 500)]) + driver.frame([.up(0)]))
        let back = try #require(swipe.first { $0.action == "back" })
        #expect(back.gesture == "back")
        #expect(back.control == "back")
        #expect(back.event == "recognized")
        #expect(back.json.contains(#","gesture":"back","device":"event1","#))
    }

    @Test("a reload makes the heads again: a target that changed kind gets its new executor")
    func reloadForgetsHeads() throws {
        var driver = try EngineTests.Driver()
        _ = driver.plug(1)
        let before = driver.tap(at: 200, 200)
        #expect(before.contains { if case .deliver(_, .socket, _) = $0 { true } else { false } })
        #expect(driver.engine.heads.made == 2)

        let exec = EngineTests.configuration().replacingOccurrences(
            of: #"socket = "/run/e2e.sock""#, with: #"exec = ["/bin/true"]"#)
        _ = driver.engine.reload(.loaded(try EngineTests.load(exec)), path: "x.toml", now: driver.now)
        let after = driver.tap(at: 200, 200)
        let executors = after.compactMap { if case .deliver(_, let executor, _) = $0 { executor } else { nil } }
        #expect(executors == [.exec, .exec])
        #expect(EngineTests.deliveryValues(after).map(\.generation) == [2, 2])
        #expect(driver.engine.heads.made == 4)
        #expect(driver.engine.heads.count == 2)
    }

    @Test("no more than the capacity of heads are kept, none too large: past it the oldest binding is replaced")
    func boundedHeads() throws {
        let configuration = try EngineTests.load(EngineTests.configuration())
        var heads = DeliveryHeads()
        func action(_ index: Int) -> ResolvedAction {
            ResolvedAction(
                time: Instant(microseconds: 1), control: "c\(index)", event: .touchUpInside, action: "a", target: "e2e",
                responder: .control("c\(index)"), contact: 0, location: nil, value: nil)
        }
        let bindings = DeliveryHeads.capacity + 8
        for index in 0..<bindings {
            let made = heads.head(for: action(index), target: "e2e", configuration: configuration, generation: 1)
            #expect(made?.head.control == "c\(index)")
        }
        #expect(heads.made == bindings)
        #expect(heads.count == DeliveryHeads.capacity)
        // The newest are kept; the first was replaced and is made again.
        _ = heads.head(for: action(bindings - 1), target: "e2e", configuration: configuration, generation: 1)
        #expect(heads.made == bindings)
        _ = heads.head(for: action(0), target: "e2e", configuration: configuration, generation: 1)
        #expect(heads.made == bindings + 1)
        #expect(heads.count == DeliveryHeads.capacity)
        // A head with more JSON than a kept one may hold is made for its delivery, not kept: the heads' memory is
        // bounded whatever the file names things.
        var long = action(0)
        long.action = String(repeating: "\u{1}", count: DeliveryHeads.maximumKeptBytes)
        let longHead = heads.head(for: long, target: "e2e", configuration: configuration, generation: 1)
        let made = try #require(longHead)
        #expect(made.head.action == long.action)
        #expect(made.head.opening.count > DeliveryHeads.maximumKeptBytes)
        _ = heads.head(for: long, target: "e2e", configuration: configuration, generation: 1)
        #expect(heads.made == bindings + 3)
        #expect(heads.head(for: action(0), target: "e2e", configuration: configuration, generation: 1) != nil)
        #expect(heads.made == bindings + 3)
        // A target the configuration does not have gets no head.
        #expect(heads.head(for: action(1), target: "nobody", configuration: configuration, generation: 1) == nil)
        #expect(heads.made == bindings + 3)
    }
}
