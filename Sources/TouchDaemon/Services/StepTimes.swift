import CLinux

/// Where one frame's time goes on the input thread, from `poll` returning to the message's `send`, step by step: for
/// finding what to take off a tap's path (issue 17, docs/performance.md "Twelfth pass"). Compiled in only with
/// `-DTOUCHD_STEP_TIMES` (`scripts/vm/step-times` builds and measures such a binary); without it every ``mark(_:)`` is
/// an empty inline function and the daemon kiosks run carries none of it.
///
/// Each wake-up of the input loop is stamped with the CPU's cycle counter (no system call: in the test guest a clock
/// read is one, and an emulated device access) at the first time it reaches each mark. A wake-up that sent a message
/// directly adds one sample per step; at stop, `touchd run` logs each step's median in microseconds in its
/// `processing latency` line (`step_times=`).
enum StepTimes {
    /// The marks, in the order a frame reaches them.
    enum Mark: Int, CaseIterable {
        case woke, inputBegins, libinputDispatched, decoded, sceneBegins, sceneDone, delivered, engineDone, performed
        case senderLocked, messageBegins, sendBegins, sent
    }

    /// Stamps `mark` for this wake-up (`woke` starts a new one).
    @inline(__always) static func mark(_ mark: Mark) {
        #if TOUCHD_STEP_TIMES
            Recorder.mark(mark)
        #endif
    }

    /// A frame answered from its plan (Engine+TouchPlan.swift): the engine's steps are marked at once, as taking no time,
    /// so that such a wake-up counts as a sample too; `poll` → send and the answer itself (from the decoded events to
    /// the frame's plan found) are also kept per kind (`answered_down_poll_to_send`, `answered_lift_poll_to_send`,
    /// `handled_poll_to_send`, `answer_down`, `answer_lift`).
    @inline(__always) static func markAnswered(lift: @autoclosure () -> Bool) {
        #if TOUCHD_STEP_TIMES
            Recorder.mark(.sceneBegins)
            Recorder.mark(.sceneDone)
            Recorder.mark(.delivered)
            Recorder.mark(.engineDone)
            Recorder.answered = lift() ? .lift : .down
        #endif
    }

    /// After the hand-over: this wake-up's steps become samples if it sent a message directly, with `kernelToPoll`,
    /// the microseconds from the kernel's timestamp of its first input event to `poll` returning: the wake-up itself.
    @inline(__always) static func wakeUpHandedOver(kernelToPoll: @autoclosure () -> UInt64?) {
        #if TOUCHD_STEP_TIMES
            Recorder.record(kernelToPoll: kernelToPoll())
        #endif
    }

    /// Just before the input loop sleeps again: a wake-up that sent a message directly adds a sample of the time from
    /// its send to here, the work after the send (`after_send`).
    @inline(__always) static func sleeping() {
        #if TOUCHD_STEP_TIMES
            Recorder.sleeping()
        #endif
    }

    /// Each step's median in microseconds (`name=µs,…,frames=N`), or nil in a build without them.
    static var summary: String? {
        #if TOUCHD_STEP_TIMES
            Recorder.summary()
        #else
            nil
        #endif
    }

    #if TOUCHD_STEP_TIMES
        /// Touched by the input thread only (and by the stop, on the same thread).
        private enum Recorder {
            /// The steps reported: a name and the marks it lies between.
            static let steps: [(name: String, from: Mark, to: Mark)] = [
                ("poll_to_input", .woke, .inputBegins),
                ("libinput_dispatch", .inputBegins, .libinputDispatched),
                ("decode", .libinputDispatched, .decoded),
                ("router", .decoded, .sceneBegins),
                ("scene", .sceneBegins, .sceneDone),
                ("deliver", .sceneDone, .delivered),
                ("engine_rest", .delivered, .engineDone),
                ("perform", .engineDone, .performed),
                ("hand_over", .performed, .senderLocked),
                ("target_lookup", .senderLocked, .messageBegins),
                ("message", .messageBegins, .sendBegins),
                ("send", .sendBegins, .sent),
                ("poll_to_send", .woke, .sendBegins),
            ]

            nonisolated(unsafe) static var stamps = [UInt64](repeating: 0, count: Mark.allCases.count)
            nonisolated(unsafe) static var samples: [[UInt64]] = Array(repeating: [], count: steps.count)
            /// Whether this wake-up's lift was answered from its plan, and `poll` → send of such wake-ups and of the
            /// others apart (`answered_poll_to_send`, `handled_poll_to_send`).
            nonisolated(unsafe) static var answered: Answered = .no
            enum Answered { case no, down, lift }
            /// Per kind of wake-up: `poll` → send, and the answer (from decoded to the frame's plan found).
            nonisolated(unsafe) static var pollToSend: [Answered: [UInt64]] = [:]
            nonisolated(unsafe) static var answering: [Answered: [UInt64]] = [:]
            /// The counter and the monotonic clock at the first mark, to turn counts into microseconds.
            nonisolated(unsafe) static var origin: (cycles: UInt64, microseconds: UInt64)?

            static func mark(_ mark: Mark) {
                if mark == .woke {
                    answered = .no
                    for index in stamps.indices { stamps[index] = 0 }
                    if origin == nil { origin = (touchd_cycles(), monotonicMicroseconds()) }
                } else if stamps[mark.rawValue] != 0 {
                    return
                }
                // Last, so that the bookkeeping above counts in the step before, not in the one that begins here.
                stamps[mark.rawValue] = touchd_cycles()
            }

            /// Microseconds, from the clock (the kernel's timestamps are on it).
            nonisolated(unsafe) static var wakeUps = LatencyHistogram()

            static func record(kernelToPoll: UInt64?) {
                guard Mark.allCases.allSatisfy({ stamps[$0.rawValue] != 0 }), let kernelToPoll else { return }
                for (index, step) in steps.enumerated() {
                    samples[index].append(stamps[step.to.rawValue] &- stamps[step.from.rawValue])
                }
                wakeUps.record(kernelToPoll)
                pollToSend[answered, default: []].append(
                    stamps[Mark.sendBegins.rawValue] &- stamps[Mark.woke.rawValue])
                answering[answered, default: []].append(
                    stamps[Mark.sceneBegins.rawValue] &- stamps[Mark.decoded.rawValue])
                lastSent = stamps[Mark.sent.rawValue]
                stamps[Mark.sent.rawValue] = 0  // one sample per wake-up
            }

            /// The send of the wake-up that recorded samples, until the loop sleeps again.
            nonisolated(unsafe) static var lastSent: UInt64 = 0
            nonisolated(unsafe) static var afterSend: [UInt64] = []

            static func sleeping() {
                guard lastSent != 0 else { return }
                afterSend.append(touchd_cycles() &- lastSent)
                lastSent = 0
            }

            static func summary() -> String {
                guard let origin else { return "frames=0" }
                let cycles = Double(touchd_cycles() &- origin.cycles)
                let perMicrosecond = cycles / Double(max(monotonicMicroseconds() &- origin.microseconds, 1))
                /// `name=µs`: the median of `counts`, in microseconds.
                func median(_ name: String, _ counts: [UInt64]) -> String {
                    let sorted = counts.sorted()
                    let median = sorted.isEmpty ? 0 : Double(sorted[sorted.count / 2]) / perMicrosecond
                    return "\(name)=\(Int(exactly: median.rounded()).map(String.init) ?? "?")"
                }
                let medians = steps.indices.map { median(steps[$0].name, samples[$0]) }
                let kernelToPoll = wakeUps.percentile(0.5) ?? 0
                let last = [
                    median("after_send", afterSend),
                    median("answered_down_poll_to_send", pollToSend[.down] ?? []),
                    median("answered_lift_poll_to_send", pollToSend[.lift] ?? []),
                    median("handled_poll_to_send", pollToSend[.no] ?? []),
                    median("answer_down", answering[.down] ?? []), median("answer_lift", answering[.lift] ?? []),
                    "frames=\(samples[0].count)",
                ]
                return (["kernel_to_poll=\(kernelToPoll)"] + medians + last).joined(separator: ",")
            }
        }
    #endif
}
