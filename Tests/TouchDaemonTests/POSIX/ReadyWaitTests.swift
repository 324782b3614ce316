import Glibc
import Testing

@testable import TouchDaemon

/// The input loop's wait (ReadyWait.swift) on real pipes: it says which descriptors are ready, by their place, as
/// `poll` did, and times out with none.
@Suite("The input loop's wait")
struct ReadyWaitTests {
    /// `count` pipes: read ends, then write ends.
    static func pipes(_ count: Int) throws -> (reads: [Int32], writes: [Int32]) {
        var reads: [Int32] = []
        var writes: [Int32] = []
        for _ in 0..<count {
            var ends: [Int32] = [-1, -1]
            try #require(pipe(&ends) == 0)
            reads.append(ends[0])
            writes.append(ends[1])
        }
        return (reads, writes)
    }

    @Test func saysWhichDescriptorsAreReadyByTheirPlace() throws {
        let (reads, opened) = try Self.pipes(5)
        var writes = opened
        // Each descriptor closed once: a second close could close another test's new descriptor of the same number
        // (it did: ControlServerTests' client socket, "connect: Bad file descriptor").
        defer { for descriptor in reads + writes where descriptor >= 0 { close(descriptor) } }
        let waiting = try ReadyWait(reads)
        // Nothing written: a timeout, nothing ready.
        var ready = waiting.wait(timeout: 0)
        #expect(ready.count == 0 && ready.mask == 0)
        // The third and the fifth.
        var byte: UInt8 = 1
        #expect(write(writes[2], &byte, 1) == 1)
        #expect(write(writes[4], &byte, 1) == 1)
        ready = waiting.wait(timeout: 1_000)
        #expect(ready.count == 2)
        #expect((0..<5).filter { ready.contains($0) } == [2, 4])
        // Level-triggered, as poll was: still ready until read.
        #expect(waiting.wait(timeout: 0).mask == ready.mask)
        #expect(read(reads[2], &byte, 1) == 1)
        #expect((0..<5).filter { waiting.wait(timeout: 0).contains($0) } == [4])
        // A closed writer reads as ready (end of file), as a hung-up descriptor did in poll's revents.
        close(writes[0])
        writes[0] = -1
        #expect((0..<5).filter { waiting.wait(timeout: 0).contains($0) } == [0, 4])
    }

    @Test func refusesWhatItCannotWaitOn() {
        // Not a descriptor: epoll_ctl fails, and the error says which call and why.
        #expect(throws: ReadyWaitError.self) { try ReadyWait([-1]) }
        do {
            _ = try ReadyWait([-1])
        } catch {
            #expect(error.operation == "epoll_ctl" && error.errno == EBADF)
            #expect(error.description == "epoll_ctl: Bad file descriptor")
        }
        #expect(throws: ReadyWaitError.self) { try ReadyWait(Array(repeating: 0, count: 65)) }
    }
}
