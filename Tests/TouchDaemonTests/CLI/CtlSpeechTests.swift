import Testing

@testable import TouchDaemon

/// `touchd ctl speech`, `ctl state`'s speech line, `ctl monitor`'s focus lines and the `speech` counters in
/// `stats --prometheus` (docs/control-socket.md).
@Suite("ctl: speech mode")
struct CtlSpeechTests {
    static func parse(_ text: String) throws -> JSONValue { try JSONValue.parse(Array(text.utf8)) }

    @Test("the speech result as one line for people")
    func speechLine() throws {
        #expect(
            CtlFormat.speech(try Self.parse(#"{"mode":"on","available":true,"focus":"pay","paused":false}"#))
                == "speech mode on, focus pay")
        #expect(
            CtlFormat.speech(try Self.parse(#"{"mode":"on","available":true,"focus":null,"paused":true}"#))
                == "speech mode on, focus none, paused")
        #expect(
            CtlFormat.speech(try Self.parse(#"{"mode":"off","available":false,"focus":null,"paused":false}"#))
                == "speech mode off, no speech server")
    }

    @Test("state shows the speech line when the server sends one")
    func stateLine() throws {
        let state = try Self.parse(
            #"{"generation":1,"active_screen":null,"screens":[],"controls":[],"gestures":[],"devices":[],"contacts":0,"#
                + #""speech":{"mode":"on","available":true,"focus":"buy","paused":false}}"#)
        #expect(CtlFormat.state(state).contains("speech mode on, focus buy"))
    }

    @Test("the speech counters are Prometheus counters")
    func prometheus() throws {
        let text = PrometheusExposition.text(
            stats: try Self.parse(#"{"generation":1,"speech":{"sessions":3,"activations":7,"failures":1}}"#))
        for line in [
            "# TYPE touchd_speech_sessions_total counter", "touchd_speech_sessions_total 3",
            "touchd_speech_activations_total 7", "touchd_speech_failures_total 1",
        ] {
            #expect(text.contains(line + "\n"), "\(line)")
        }
    }
}
