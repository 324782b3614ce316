import Testing

@testable import TouchDaemon

@Suite("Executors.Batch")
struct ExecutorBatchTests {
    private func delivery(_ action: String) -> ActionDelivery {
        ActionDelivery(
            action: action, target: "t", control: "c", event: "touchUpInside", timeMicroseconds: 1, generation: 1)
    }

    /// Each executor gets its own deliveries in the order the engine gave them, whatever came between.
    @Test func filesEachDeliveryWithItsExecutorInOrder() {
        var batch = Executors.Batch()
        #expect(batch.isEmpty)
        let kinds: [(String, ExecutorKind)] = [
            ("a", .exec), ("b", .socket), ("c", .exec), ("d", .socket), ("e", .socket),
        ]
        for (action, kind) in kinds { batch.append(delivery(action), for: kind) }
        #expect(!batch.isEmpty)
        #expect(batch.sockets.map(\.action) == ["b", "d", "e"])
        #expect(batch.commands.map(\.action) == ["a", "c"])
    }

    /// Emptied between batches with its room kept: the next batch allocates nothing.
    @Test func emptiesWithItsRoomKept() {
        var batch = Executors.Batch()
        for index in 0..<8 { batch.append(delivery("\(index)"), for: index.isMultiple(of: 2) ? .socket : .exec) }
        let room = (batch.sockets.capacity, batch.commands.capacity)
        batch.removeAllKeepingCapacity()
        #expect(batch.isEmpty)
        #expect(batch.sockets.capacity == room.0 && batch.commands.capacity == room.1)
        batch.append(delivery("only"), for: .exec)
        #expect(batch.sockets.isEmpty && batch.commands.map(\.action) == ["only"])
    }
}
