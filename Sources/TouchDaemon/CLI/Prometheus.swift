/// `touchd ctl stats --prometheus`: the `stats` result (docs/control-socket.md, "stats") in the Prometheus text
/// exposition format 0.0.4, for node_exporter's textfile collector (docs/operations.md, "Prometheus").
///
/// Every metric is named `touchd_…` and has its `# HELP` and `# TYPE` lines. Counts that only grow while touchd runs
/// are counters (`…_total`); values that go up and down are gauges. Durations are in seconds, converted exactly from
/// the result's microseconds. Latency is a gauge per quantile (`touchd_processing_latency_seconds{quantile="0.5"}`),
/// not a summary: the result has no sum of the samples, which a summary needs. A member this version does not know
/// still appears, as `untyped`, so nothing the daemon counts is lost to an older `ctl`.
enum PrometheusExposition {
    /// What a member becomes: its metric's name, type and help.
    struct Metric {
        enum Kind: String { case counter, gauge, untyped }
        var name: String
        var kind: Kind
        var help: String
        /// The value is microseconds, shown as seconds.
        var microseconds = false
    }

    /// The result's top-level numbers, in the order they are written: member, metric name, type, help.
    static let topLevel: [(member: String, metric: Metric)] = [
        ("generation", gauge("config_generation", "Configuration generation: 1 at start, one more per reload taken.")),
        ("uptime_us", Metric(name: "uptime_seconds", kind: .gauge, help: "Seconds since start.", microseconds: true)),
        ("frames", counter("frames_total", "Input frames handled.")),
        ("control_events", counter("control_events_total", "Control events recorded.")),
        ("gesture_events", counter("gesture_events_total", "Gesture events recorded.")),
        ("actions", counter("actions_total", "Actions fired, handled or not.")),
        ("unhandled_actions", counter("unhandled_actions_total", "Actions with no target and no responder.")),
        ("contacts_over_limit", counter("contacts_over_limit_total", "Contacts ignored: max_contacts were down.")),
        ("forwarded_first", counter("forwarded_first_total", "Filter mode: frames forwarded before handling.")),
        ("forecast_misses", counter("forecast_misses_total", "Filter mode: forwarded first, not then made.")),
        ("diagnostics", counter("diagnostics_total", "Diagnostics reported about the input.")),
        ("reloads", counter("reloads_total", "Configuration reloads taken.")),
        ("reload_failures", counter("reload_failures_total", "Configuration reloads refused.")),
        (
            "libinput_lost_event_warnings",
            counter("libinput_lost_event_warnings_total", "libinput lost-event warnings.")
        ),
        ("subscribers", gauge("subscribers", "Control socket connections with a subscription.")),
    ]

    private static func counter(_ name: String, _ help: String) -> Metric {
        Metric(name: name, kind: .counter, help: help)
    }

    private static func gauge(_ name: String, _ help: String) -> Metric { Metric(name: name, kind: .gauge, help: help) }

    static let latencies: [(member: String, what: String)] = [
        ("processing", "Processing latency, from libinput's event time to the action reaching its executor"),
        ("handling", "Handling latency, from poll returning to the action reaching its executor"),
    ]

    /// A target's members per kind (`socket`, `exec`); gauges are listed, the rest are counters.
    static let targetMembers: [String: [(member: String, kind: Metric.Kind, help: String)]] = [
        "socket": [
            ("sent", .counter, "Messages sent to the socket target."),
            ("dropped", .counter, "Messages dropped because the socket target's queue was full."),
            ("failed", .counter, "Messages that could not be sent to the socket target."),
            ("connected", .gauge, "1 while the socket target is connected, else 0."),
            ("queued", .gauge, "Messages waiting for the socket target."),
        ],
        "exec": [
            ("started", .counter, "Commands started for the exec target."),
            ("succeeded", .counter, "Commands of the exec target that exited 0."),
            ("failed", .counter, "Commands of the exec target that exited with another status."),
            ("timed_out", .counter, "Commands of the exec target stopped at their timeout."),
            ("terminated", .counter, "Commands of the exec target ended by a signal."),
            ("spawn_errors", .counter, "Commands of the exec target that could not be started."),
            ("dropped", .counter, "Actions of the exec target dropped because too many commands ran."),
        ],
    ]

    /// The control server's members; `clients` is a gauge, the rest are counters.
    static let controlSocket: [(member: String, kind: Metric.Kind, help: String)] = [
        ("clients", .gauge, "Control socket connections open now."),
        ("accepted", .counter, "Control socket connections accepted."),
        ("refused", .counter, "Control socket connections refused."),
        ("overflowed", .counter, "Control socket clients dropped because they read too slowly."),
        ("bad_requests", .counter, "Control socket requests refused as malformed."),
        ("rate_limited", .counter, "Control socket requests refused for coming too fast."),
        ("accept_errors", .counter, "Errors accepting control socket connections."),
        ("received_descriptors", .counter, "File descriptors control socket clients sent (and touchd closed)."),
    ]

    /// Explore by touch's members (docs/accessibility.md), all counters.
    static let speech: [(member: String, kind: Metric.Kind, help: String)] = [
        ("sessions", .counter, "Speech mode sessions started."),
        ("activations", .counter, "Items activated by a double or split tap in speech mode."),
        (
            "failures", .counter,
            "Times speech mode could not start, or ended, because the speech server could not speak."
        ),
    ]

    /// The exposition of a `stats` result: families in a fixed order, each family's samples together, ending in a
    /// newline. Members that are not numbers (or booleans, as 1 and 0) are left out.
    static func text(stats: JSONValue) -> String {
        var writer = Writer()
        let members = stats.objectValue ?? []
        let known = Set(topLevel.map(\.member) + latencies.map(\.member) + ["targets", "control_socket", "speech"])
        for (member, metric) in topLevel {
            if let value = stats[member].flatMap({ sampleValue($0, microseconds: metric.microseconds) }) {
                writer.family(metric, samples: [([], value)])
            }
        }
        for (member, value) in members where !known.contains(member) {
            guard let sample = sampleValue(value, microseconds: false) else { continue }
            writer.family(unknown(name: member, describing: "stats member '\(member)'"), samples: [([], sample)])
        }
        for (member, what) in latencies {
            guard let histogram = stats[member] else { continue }
            writer.latency(histogram, name: "\(member)_latency", what: what)
        }
        writer.targets(stats["targets"]?.objectValue ?? [])
        if let server = stats["control_socket"]?.objectValue {
            writer.group(
                [(label: [], members: server)], prefix: "control_socket_", described: controlSocket,
                what: "control_socket member")
        }
        if let speech = stats["speech"]?.objectValue {
            writer.group(
                [(label: [], members: speech)], prefix: "speech_", described: Self.speech, what: "speech member")
        }
        return writer.text
    }

    /// A metric for a member this version does not describe.
    static func unknown(name: String, describing what: String) -> Metric {
        Metric(name: sanitized(name), kind: .untyped, help: "The \(what) (not described by this version of touchd).")
    }

    /// `name` with every character a metric name may not hold replaced by `_`.
    static func sanitized(_ name: String) -> String {
        var result = ""
        for scalar in name.unicodeScalars {
            let allowed =
                scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || scalar == "_")
            result.unicodeScalars.append(allowed ? scalar : "_")
        }
        return result
    }

    /// A label value with backslash, double quote and newline escaped, as the format requires.
    static func escapedLabel(_ value: String) -> String {
        var result = ""
        for character in value.unicodeScalars {
            switch character {
            case "\\": result += "\\\\"
            case "\"": result += "\\\""
            case "\n": result += "\\n"
            default: result.unicodeScalars.append(character)
            }
        }
        return result
    }

    /// HELP text with backslash and newline escaped.
    static func escapedHelp(_ value: String) -> String {
        value.replacing("\\", with: "\\\\").replacing("\n", with: "\\n")
    }

    /// A sample's value: integers as written, booleans as 1 and 0, microseconds as exact decimal seconds, other
    /// numbers in Prometheus's float syntax; nil for anything else (null included).
    static func sampleValue(_ value: JSONValue, microseconds: Bool) -> String? {
        switch value {
        case .integer(let integer): return microseconds ? seconds(fromMicroseconds: integer) : String(integer)
        case .bool(let flag): return flag ? "1" : "0"
        case .double(let double):
            let scaled = microseconds ? double / 1_000_000 : double
            if scaled.isNaN { return "NaN" }
            if scaled.isInfinite { return scaled > 0 ? "+Inf" : "-Inf" }
            return "\(scaled)"
        default: return nil
        }
    }

    /// `1500` → `0.0015`, exactly: no binary floating point in between.
    static func seconds(fromMicroseconds value: Int64) -> String {
        let magnitude = value.magnitude
        let whole = magnitude / 1_000_000
        var fraction = String(magnitude % 1_000_000)
        fraction = String(repeating: "0", count: 6 - fraction.count) + fraction
        while fraction.last == "0" { fraction.removeLast() }
        return (value < 0 ? "-" : "") + String(whole) + (fraction.isEmpty ? "" : "." + fraction)
    }

    /// Builds the text one family at a time.
    struct Writer {
        private(set) var text = ""

        /// One family: HELP, TYPE and its samples; nothing when it has no samples.
        mutating func family(_ metric: Metric, samples: [(labels: [(String, String)], value: String)]) {
            guard !samples.isEmpty else { return }
            let name = "touchd_" + metric.name
            text += "# HELP \(name) \(escapedHelp(metric.help))\n"
            text += "# TYPE \(name) \(metric.kind.rawValue)\n"
            for (labels, value) in samples {
                text += name
                if !labels.isEmpty {
                    text += "{"
                    text += labels.map { "\($0.0)=\"\(escapedLabel($0.1))\"" }.joined(separator: ",")
                    text += "}"
                }
                text += " \(value)\n"
            }
        }

        /// `processing` or `handling`: samples, the quantiles as one family, the maximum.
        mutating func latency(_ histogram: JSONValue, name: String, what: String) {
            if let value = histogram["samples"].flatMap({ sampleValue($0, microseconds: false) }) {
                let metric = Metric(name: "\(name)_samples_total", kind: .counter, help: "\(what): actions measured.")
                family(metric, samples: [([], value)])
            }
            var quantiles: [(labels: [(String, String)], value: String)] = []
            for (member, quantile) in [("p50_us", "0.5"), ("p99_us", "0.99")] {
                guard let value = histogram[member] else { continue }
                // No samples yet: the quantile is null, shown as NaN as Prometheus's own summaries do.
                if let sample = value.isNull ? "NaN" : sampleValue(value, microseconds: true) {
                    quantiles.append(([("quantile", quantile)], sample))
                }
            }
            family(
                Metric(
                    name: "\(name)_seconds", kind: .gauge,
                    help: "\(what): quantiles since start, in seconds (NaN before the first sample)."),
                samples: quantiles)
            if let value = histogram["max_us"].flatMap({ sampleValue($0, microseconds: true) }) {
                let metric = Metric(
                    name: "\(name)_max_seconds", kind: .gauge, help: "\(what): the longest since start, in seconds.")
                family(metric, samples: [([], value)])
            }
        }

        /// `targets`: one family per kind and member, a sample per target, labelled `target`.
        mutating func targets(_ targets: [(key: String, value: JSONValue)]) {
            var kinds: [String] = []
            var byKind: [String: [(label: [(String, String)], members: [(key: String, value: JSONValue)])]] = [:]
            for (target, report) in targets {
                let kind = report["kind"]?.stringValue ?? "unknown"
                if byKind[kind] == nil { kinds.append(kind) }
                let members = (report.objectValue ?? []).filter { $0.key != "kind" }
                byKind[kind, default: []].append(([("target", target)], members))
            }
            for kind in kinds {
                group(
                    byKind[kind] ?? [], prefix: "\(sanitized(kind))_target_", described: targetMembers[kind] ?? [],
                    what: "\(kind) target member")
            }
        }

        /// Objects of the same shape as families named `prefix + member` (`_total` for counters): the described
        /// members in their order, then any others in the order they first appear.
        mutating func group(
            _ objects: [(label: [(String, String)], members: [(key: String, value: JSONValue)])], prefix: String,
            described: [(member: String, kind: Metric.Kind, help: String)], what: String
        ) {
            var order = described.map(\.member)
            for object in objects {
                for (member, _) in object.members where !order.contains(member) { order.append(member) }
            }
            for member in order {
                let metric: Metric
                if let description = described.first(where: { $0.member == member }) {
                    let suffix = description.kind == .counter ? "_total" : ""
                    metric = Metric(name: prefix + member + suffix, kind: description.kind, help: description.help)
                } else {
                    metric = unknown(name: prefix + member, describing: "\(what) '\(member)'")
                }
                let samples = objects.compactMap { object -> (labels: [(String, String)], value: String)? in
                    guard let value = object.members.first(where: { $0.key == member })?.value,
                        let sample = sampleValue(value, microseconds: false)
                    else { return nil }
                    return (object.label, sample)
                }
                family(metric, samples: samples)
            }
        }
    }
}
