import Logging
import TouchModel

/// The input thread's side of the control socket: what it needs from the server.
protocol ControlChannel: AnyObject, Sendable {
    /// Readable while notes wait; the input loop polls it.
    var noteFileDescriptor: Int32 { get }
    /// Takes the waiting notes; never blocks.
    func takeNotes() -> [ControlNote]
    /// Hands the server responses and events, in order; never blocks.
    func post(_ messages: [ControlMessage])
    /// The generation the server's hello reports.
    func setGeneration(_ generation: Int)
    /// Tells every client touchd is stopping, flushes for at most this long, and closes everything.
    func stop(flushTimeoutMicroseconds: UInt64)
    /// The server's counters for `stats`, as name and value, in a stable order.
    var counters: [(name: String, value: Int)] { get }
}
