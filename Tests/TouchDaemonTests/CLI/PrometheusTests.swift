import ArgumentParser
import Testing

@testable import TouchDaemon

/// `touchd ctl stats --prometheus`: the `stats` result in the Prometheus text exposition format.
struct PrometheusTests {
    /// A `stats` result as touchd sends it, with one target of each kind and a target name that needs escaping.
    static let stats = """
        {"generation":3,"uptime_us":86400000123,"frames":1200,"control_events":40,"gesture_events":7,\
        "actions":31,"unhandled_actions":2,"contacts_over_limit":1,"diagnostics":5,"reloads":2,\
        "reload_failures":1,"libinput_lost_event_warnings":0,\
        "processing":{"samples":31,"p50_us":120,"p99_us":2500,"max_us":10400},\
        "handling":{"samples":31,"p50_us":15,"p99_us":90,"max_us":400},\
        "targets":{"kiosk":{"kind":"socket","sent":29,"dropped":0,"failed":1,"connected":true,"queued":0},\
        "say \\"hi\\"\\\\\\n":{"kind":"exec","started":2,"succeeded":1,"failed":0,"timed_out":1,"terminated":0,\
        "spawn_errors":0,"dropped":0}},\
        "subscribers":1,"control_socket":{"clients":2,"accepted":9,"refused":1,"overflowed":0,"bad_requests":3,\
        "rate_limited":0,"accept_errors":0,"received_descriptors":0}}
        """

    private func parse(_ text: String) throws -> JSONValue {
        try JSONValue.parse(Array(text.utf8))
    }

    /// The samples: `name{labels} value` lines, keyed by everything before the value.
    private func samples(_ text: String) -> [String: String] {
        var result: [String: String] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            let space = line.lastIndex(of: " ")!
            result[String(line[..<space])] = String(line[line.index(after: space)...])
        }
        return result
    }

    @Test func aSmallResultIsExactlyThisText() throws {
        let stats = try parse(
            #"""
            {"generation":1,"uptime_us":1500,"frames":4,\#
            "processing":{"samples":0,"p50_us":null,"p99_us":null,"max_us":0},\#
            "targets":{"a\"b":{"kind":"socket","sent":2,"connected":false}},"control_socket":{"clients":0}}
            """#)
        let expected = #"""
            # HELP touchd_config_generation Configuration generation: 1 at start, one more per reload taken.
            # TYPE touchd_config_generation gauge
            touchd_config_generation 1
            # HELP touchd_uptime_seconds Seconds since start.
            # TYPE touchd_uptime_seconds gauge
            touchd_uptime_seconds 0.0015
            # HELP touchd_frames_total Input frames handled.
            # TYPE touchd_frames_total counter
            touchd_frames_total 4
            # HELP touchd_processing_latency_samples_total Processing latency, from libinput's event time to the action reaching its executor: actions measured.
            # TYPE touchd_processing_latency_samples_total counter
            touchd_processing_latency_samples_total 0
            # HELP touchd_processing_latency_seconds Processing latency, from libinput's event time to the action reaching its executor: quantiles since start, in seconds (NaN before the first sample).
            # TYPE touchd_processing_latency_seconds gauge
            touchd_processing_latency_seconds{quantile="0.5"} NaN
            touchd_processing_latency_seconds{quantile="0.99"} NaN
            # HELP touchd_processing_latency_max_seconds Processing latency, from libinput's event time to the action reaching its executor: the longest since start, in seconds.
            # TYPE touchd_processing_latency_max_seconds gauge
            touchd_processing_latency_max_seconds 0
            # HELP touchd_socket_target_sent_total Messages sent to the socket target.
            # TYPE touchd_socket_target_sent_total counter
            touchd_socket_target_sent_total{target="a\"b"} 2
            # HELP touchd_socket_target_connected 1 while the socket target is connected, else 0.
            # TYPE touchd_socket_target_connected gauge
            touchd_socket_target_connected{target="a\"b"} 0
            # HELP touchd_control_socket_clients Control socket connections open now.
            # TYPE touchd_control_socket_clients gauge
            touchd_control_socket_clients 0

            """#
        #expect(PrometheusExposition.text(stats: stats) == expected)
    }

    @Test func everyMetricIsNamedAndHasHelpAndType() throws {
        let text = PrometheusExposition.text(stats: try parse(Self.stats))
        var described: [String: (help: Bool, type: String?)] = [:]
        var seenFamilies: [String] = []
        for line in text.split(separator: "\n") {
            let words = line.split(separator: " ", maxSplits: 3).map(String.init)
            if words[0] == "#" {
                #expect(["HELP", "TYPE"].contains(words[1]))
                if words[1] == "HELP" { described[words[2], default: (false, nil)].help = !words[3].isEmpty }
                if words[1] == "TYPE" { described[words[2], default: (false, nil)].type = words[3] }
                continue
            }
            let name = String(words[0].prefix { $0 != "{" })
            #expect(name.hasPrefix("touchd_"), "\(name)")
            #expect(name.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }, "\(name)")
            let family = try #require(described[name], "\(name) has no HELP or TYPE before it")
            #expect(family.help, "\(name)")
            let type = try #require(family.type)
            #expect(["counter", "gauge"].contains(type), "\(name): \(type)")
            // Counters end in _total; nothing else does.
            #expect((type == "counter") == name.hasSuffix("_total"), "\(name): \(type)")
            // A family's samples are together.
            if seenFamilies.last != name {
                #expect(!seenFamilies.contains(name), "\(name) is split")
                seenFamilies.append(name)
            }
        }
        #expect(text.hasSuffix("\n"))
        #expect(Set(described.keys) == Set(seenFamilies))
    }

    @Test func everyNumberInTheResultAppears() throws {
        let stats = try parse(Self.stats)
        let values = samples(PrometheusExposition.text(stats: stats))
        var expected: [(member: String, sample: String, value: String)] = []
        for (member, value) in stats.objectValue ?? [] {
            if let integer = value.int64Value {
                let name = [
                    "generation": "config_generation", "uptime_us": "uptime_seconds", "subscribers": "subscribers",
                ]
                let sample = "touchd_" + (name[member] ?? member + "_total")
                expected.append((member, sample, member == "uptime_us" ? "86400.000123" : String(integer)))
            }
        }
        expected += [
            ("processing.samples", "touchd_processing_latency_samples_total", "31"),
            ("processing.p50_us", #"touchd_processing_latency_seconds{quantile="0.5"}"#, "0.00012"),
            ("processing.p99_us", #"touchd_processing_latency_seconds{quantile="0.99"}"#, "0.0025"),
            ("processing.max_us", "touchd_processing_latency_max_seconds", "0.0104"),
            ("handling.samples", "touchd_handling_latency_samples_total", "31"),
            ("handling.p50_us", #"touchd_handling_latency_seconds{quantile="0.5"}"#, "0.000015"),
            ("handling.p99_us", #"touchd_handling_latency_seconds{quantile="0.99"}"#, "0.00009"),
            ("handling.max_us", "touchd_handling_latency_max_seconds", "0.0004"),
        ]
        for (target, report) in stats["targets"]?.objectValue ?? [] {
            let kind = try #require(report["kind"]?.stringValue)
            let label = #"{target=""# + PrometheusExposition.escapedLabel(target) + #""}"#
            for (member, value) in report.objectValue ?? [] where member != "kind" {
                let gauge = ["connected", "queued"].contains(member)
                let sample = "touchd_\(kind)_target_\(member)\(gauge ? "" : "_total")\(label)"
                let text = try value.boolValue.map { $0 ? "1" : "0" } ?? String(#require(value.int64Value))
                expected.append(("\(target).\(member)", sample, text))
            }
        }
        for (member, value) in stats["control_socket"]?.objectValue ?? [] {
            let sample = "touchd_control_socket_\(member)\(member == "clients" ? "" : "_total")"
            expected.append(("control_socket.\(member)", sample, String(try #require(value.int64Value))))
        }
        #expect(expected.count == 12 + 1 + 8 + 5 + 7 + 8)
        for (member, sample, value) in expected {
            #expect(values[sample] == value, "\(member) as \(sample)")
        }
        #expect(values.count == expected.count, "\(values.keys.sorted())")
    }

    @Test func labelValuesAreEscaped() throws {
        let text = PrometheusExposition.text(stats: try parse(Self.stats))
        // The target is named `say "hi"\` and a newline.
        #expect(text.contains(#"touchd_exec_target_started_total{target="say \"hi\"\\\n"} 2"#))
        #expect(PrometheusExposition.escapedLabel("a\\b\"c\nd") == #"a\\b\"c\nd"#)
        #expect(PrometheusExposition.escapedLabel("plain é") == "plain é")
        #expect(!text.split(separator: "\n").contains { $0.hasPrefix("\"") }, "a raw newline split a sample")
    }

    @Test func membersThisVersionDoesNotKnowStillAppearAsUntyped() throws {
        let stats = try parse(
            #"""
            {"frames":1,"new-thing":5,"note":"text","targets":{"t":{"kind":"socket","sent":1,"retries":4},\#
            "u":{"kind":"mqtt","published":3}},"control_socket":{"clients":1,"zapped":2}}
            """#)
        let text = PrometheusExposition.text(stats: stats)
        let values = samples(text)
        #expect(values["touchd_new_thing"] == "5")
        #expect(text.contains("# TYPE touchd_new_thing untyped\n"))
        #expect(values[#"touchd_socket_target_retries{target="t"}"#] == "4")
        #expect(values[#"touchd_mqtt_target_published{target="u"}"#] == "3")
        #expect(values["touchd_control_socket_zapped"] == "2")
        #expect(!text.contains("note"))
        #expect(text.split(separator: "\n").filter { $0.hasPrefix("# HELP") }.count == values.count)
    }

    @Test func secondsAreExactDecimalsOfMicroseconds() {
        let cases: [(Int64, String)] = [
            (0, "0"), (1, "0.000001"), (1_500, "0.0015"), (1_000_000, "1"), (86_400_000_123, "86400.000123"),
            (-2_500_000, "-2.5"), (.min, "-9223372036854.775808"),
        ]
        for (microseconds, seconds) in cases {
            #expect(PrometheusExposition.seconds(fromMicroseconds: microseconds) == seconds)
        }
    }

    @Test func anEmptyOrOddResultGivesNoFamilies() {
        #expect(PrometheusExposition.text(stats: .null).isEmpty)
        #expect(PrometheusExposition.text(stats: .object([])).isEmpty)
        #expect(PrometheusExposition.text(stats: .array([.integer(1)])).isEmpty)
    }

    @Test func prometheusAndJSONAreExclusive() throws {
        let error = #expect(throws: (any Error).self) {
            _ = try Touchd.parseAsRoot(["ctl", "stats", "--prometheus", "--json"])
        }
        let thrown = try #require(error)
        #expect(Touchd.message(for: thrown).contains("--prometheus and --json"))
        #expect(Touchd.exitCode(for: thrown) == .validationFailure)
        _ = try Touchd.parseAsRoot(["ctl", "stats", "--prometheus"])
        _ = try Touchd.parseAsRoot(["ctl", "stats", "--json"])
    }
}
