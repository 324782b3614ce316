import Logging
import TouchModel

/// What `stats` reports beyond the engine's own counters: the figures of the parts around it, read by the loop.
struct EdgeStatistics: Sendable {
    var uptimeMicroseconds: UInt64 = 0
    var lostEventWarnings = 0
    var processing = LatencyHistogram()
    var handling = LatencyHistogram()
    /// Every target's counters, from its executor.
    var targets: [ExecutorTargetReport] = []
    var controlCounters: [(name: String, value: Int)] = []
}

/// The control socket's requests, answered where the scene lives, and its subscribers fed.
extension Engine {
    /// Answers one control note at `now` (monotonic microseconds); `edge` is read only for `stats`.
    mutating func handle(_ note: ControlNote, now: UInt64, edge: () -> EdgeStatistics) -> [Effect] {
        var effects: [Effect] = []
        switch note {
        case .request(let request): answer(request, now: now, edge: edge, into: &effects)
        case .disconnected(let client): removeSubscription(client, into: &effects)
        }
        return effects
    }

    private mutating func answer(
        _ request: ControlRequest, now microseconds: UInt64, edge: () -> EdgeStatistics, into effects: inout [Effect]
    ) {
        let client = request.client
        let id = request.id
        let now = Instant(microseconds: microseconds)
        switch request.command {
        case .state:
            effects.append(.control(.response(client: client, id: id, result: stateJSON(for: request.role))))
        case .stats:
            effects.append(.control(.response(client: client, id: id, result: statsJSON(edge()))))
        case .set(let name, let enabled, let selected, let value):
            guard scene.control(name) != nil else {
                return refuse(
                    request, code: .unknownControl, Self.unknown("control", name, among: scene.controlIDs),
                    into: &effects)
            }
            if let value, !value.isFinite {
                return refuse(request, code: .invalidValue, "the value must be a finite number", into: &effects)
            }
            let before = controlJSON(name)
            if let enabled {
                deliver(
                    scene.setEnabled(name, enabled, at: now), at: now, device: nil, fromInput: false, now: microseconds,
                    into: &effects)
            }
            if let selected {
                deliver(
                    scene.setSelected(name, selected, at: now), at: now, device: nil, fromInput: false,
                    now: microseconds,
                    into: &effects)
            }
            if let value {
                deliver(
                    scene.setValue(name, value, at: now), at: now, device: nil, fromInput: false, now: microseconds,
                    into: &effects)
            }
            let after = controlJSON(name)
            effects.append(
                .log(
                    .info, "control changed over the control socket",
                    ["control.id": "\(name)", "client": "\(client)", "state": "\(after)"]))
            effects.append(.control(.response(client: client, id: id, result: after)))
            if after != before {
                broadcast(.state, control: name, members: stateMembers(name), into: &effects)
            }
        case .send(let name, let eventNames):
            guard scene.control(name) != nil else {
                return refuse(
                    request, code: .unknownControl, Self.unknown("control", name, among: scene.controlIDs),
                    into: &effects)
            }
            var events = Control.Event()
            for eventName in eventNames {
                guard let event = configuration.controlEvent(named: eventName) else {
                    return refuse(
                        request, code: .unknownEvent,
                        Self.unknown("control event", eventName, among: configuration.controlEventNames), into: &effects
                    )
                }
                events.formUnion(event)
            }
            let output = scene.sendActions(for: events, control: name, at: now)
            let fired = output.entries.count { entry in
                guard case .action(let action) = entry else { return false }
                return ControlSubscriptions.client(ofTarget: action.target) == nil
            }
            effects.append(
                .log(
                    .info, "actions sent over the control socket",
                    [
                        "control.id": "\(name)", "client": "\(client)",
                        "events": "\(Self.listForLog(eventNames))", "actions": "\(fired)",
                    ]))
            deliver(output, at: now, device: nil, fromInput: false, now: microseconds, into: &effects)
            var result = JSONLine()
            result.add("actions", fired)
            effects.append(.control(.response(client: client, id: id, result: result.line)))
        case .screen(let screen):
            if let screen {
                guard scene.screenIDs.contains(screen) else {
                    return refuse(
                        request, code: .unknownScreen, Self.unknown("screen", screen, among: scene.screenIDs),
                        into: &effects)
                }
                activate(
                    screen, at: now, now: microseconds, why: "screen switched over the control socket", into: &effects)
            }
            var result = JSONLine()
            result.add("active_screen", scene.activeScreen)
            effects.append(.control(.response(client: client, id: id, result: result.line)))
        case .subscribe(let filter):
            let watched = subscriptions.contactRecipients.contains(client)
            if let error = subscriptions.subscribe(
                client, filter: filter, role: request.role, scene: &scene, configuration: configuration)
            {
                return effects.append(.control(.failure(client: client, id: id, error: error)))
            }
            effects.append(.control(.subscribed(client: client, id: id, snapshot: stateJSON(for: request.role))))
            // Positions can reveal a PIN typed on the panel: who watches is always in the log (the connection's uid
            // and pid are on its `control client connected` line).
            let watches = subscriptions.contactRecipients.contains(client)
            if watches != watched {
                effects.append(
                    .log(
                        watches ? .notice : .info,
                        watches
                            ? "control client watches live contacts (positions included)"
                            : "control client stopped watching live contacts",
                        ["client": "\(client)", "watchers": "\(subscriptions.contactRecipients.count)"]))
            }
        case .unsubscribe:
            removeSubscription(client, into: &effects)
            effects.append(.control(.unsubscribed(client: client, id: id)))
        case .reload:
            effects.append(.log(.info, "reload asked over the control socket", ["client": "\(client)"]))
            effects.append(.reloadConfiguration(requestedBy: ControlRequester(client: client, id: id)))
        case .speech(let mode):
            if let mode {
                if let reason = requestSpeechMode(mode, at: now, into: &effects) {
                    return refuse(
                        request, code: .speechUnavailable, "speech mode cannot start: \(reason)", into: &effects)
                }
                effects.append(
                    .log(
                        .info, "speech mode asked over the control socket",
                        ["client": "\(client)", "mode": "\(speechModeName)"]))
            }
            effects.append(.control(.response(client: client, id: id, result: speechJSON(for: request.role))))
        }
    }

    /// Ends a connection's subscription, saying so when it watched live contacts.
    private mutating func removeSubscription(_ client: ControlClientID, into effects: inout [Effect]) {
        let watched = subscriptions.contactRecipients.contains(client)
        subscriptions.remove(client, scene: &scene)
        if watched {
            effects.append(
                .log(
                    .info, "control client stopped watching live contacts",
                    ["client": "\(client)", "watchers": "\(subscriptions.contactRecipients.count)"]))
        }
    }

    /// Answers the clients that asked for a reload that was taken: the new generation.
    func answerReload(_ requesters: [ControlRequester], into effects: inout [Effect]) {
        guard !requesters.isEmpty else { return }
        var result = JSONLine()
        result.add("generation", generation)
        result.add("controls", configuration.controls.count)
        for requester in requesters {
            effects.append(.control(.response(client: requester.client, id: requester.id, result: result.line)))
        }
    }

    /// Answers the clients that asked for a reload that was refused: every problem (up to a bound that keeps the
    /// line within the connection's queue), and that the running configuration stays.
    func refuseReload(_ lines: [String], requesters: [ControlRequester], into effects: inout [Effect]) {
        guard !requesters.isEmpty else { return }
        let shown = lines.prefix(ControlError.maximumProblems).map {
            $0.count > 1_000 ? String($0.prefix(1_000)) + "…" : $0
        }
        var message = "the configuration was refused with \(lines.count) problem\(lines.count == 1 ? "" : "s"); "
        message += "generation \(generation) stays in use"
        if shown.count < lines.count { message += " (the first \(shown.count) are listed; touchd check lists all)" }
        let error = ControlError(code: .invalidConfiguration, message: message, problems: shown)
        for requester in requesters {
            effects.append(.control(.failure(client: requester.client, id: requester.id, error: error)))
        }
    }

    /// `no screen called 'paymnt' (did you mean 'payment'?)`: the refusal of an unknown name, with the closest known
    /// one when it is close enough to be a typo. The search is skipped when it would cost too much (a client's name
    /// may be 4 KiB, a configuration may hold 10,000 controls, and this runs on the input thread).
    static func unknown(_ kind: String, _ name: String, among candidates: [String]) -> String {
        let length = name.count
        let affordable = length <= 64 && candidates.count * max(length, 1) * 64 <= 2_000_000
        return "no \(kind) called '\(name)'" + (affordable ? didYouMean(name, in: candidates) : "")
    }

    /// A client's list as a log line shows it: the first few names and how many more, since a request of 64 KiB can
    /// repeat one valid name thousands of times.
    static func listForLog(_ names: [String], shown: Int = 8) -> String {
        let head = names.prefix(shown).joined(separator: ",")
        return names.count > shown ? "\(head),… (\(names.count) in all)" : head
    }

    private func refuse(
        _ request: ControlRequest, code: ControlError.Code, _ message: String, into effects: inout [Effect]
    ) {
        effects.append(
            .control(
                .failure(client: request.client, id: request.id, error: ControlError(code: code, message: message))))
    }

    /// Queues an event for the subscribers that want its kind. A control's state events are coalesced for a reader
    /// that falls behind (fault-cases.md K8: a flood of `set` requests): the latest state is what counts.
    func broadcast(
        _ kind: ControlSubscriptions.Kind, control: String? = nil, members: String, into effects: inout [Effect]
    ) {
        let isPrivate = control.map(configuration.isPrivate(control:)) ?? false
        let recipients = subscriptions.recipients(of: kind, control: control, isPrivate: isPrivate)
        guard !recipients.isEmpty else { return }
        let key = kind == .state ? control.map { "state:\($0)" } : nil
        effects.append(.control(.event(ControlEvent(recipients: recipients, members: members, coalescingKey: key))))
    }

    /// A touch script's `TIME_MS screen ID` (`touchd simulate`): as the control socket's `screen` verb, at `time`.
    /// `screen` must be one of the scene's (the script was checked against them).
    mutating func switchScreen(to screen: String, at time: Instant) -> [Effect] {
        var effects: [Effect] = []
        activate(screen, at: time, now: time.microseconds, why: "screen switched by the touch script", into: &effects)
        return effects
    }

    /// Makes `screen` the active one: the scene cancels the tracking that is no longer touchable, and when the screen
    /// changed, the log says why and subscribers hear of it.
    private mutating func activate(
        _ screen: String, at time: Instant, now: UInt64, why message: String, into effects: inout [Effect]
    ) {
        let changed = scene.activeScreen != screen
        deliver(
            scene.activateScreen(screen, at: time), at: time, device: nil, fromInput: false, now: now, into: &effects)
        if changed {
            effects.append(.log(.info, message, ["screen": "\(screen)"]))
            broadcastScreen(screen, into: &effects)
            speechScreenChanged(at: time, into: &effects)
        }
    }

    /// Tells subscribers the active screen changed.
    func broadcastScreen(_ screen: String, into effects: inout [Effect]) {
        var members = JSONLine()
        members.add("kind", ControlSubscriptions.Kind.screen.rawValue)
        members.add("screen", screen)
        broadcast(.screen, members: members.members, into: &effects)
    }

    /// Tells subscribers about a touchscreen that came, went or was left out.
    func broadcastDevice(_ change: String, _ device: DeviceInfo, reason: String? = nil, into effects: inout [Effect]) {
        var members = JSONLine()
        members.add("kind", ControlSubscriptions.Kind.device.rawValue)
        members.add("change", change)
        members.add("device", device.sysname)
        members.add("name", device.name)
        if let reason { members.add("reason", reason) }
        broadcast(.device, members: members.members, into: &effects)
    }

    /// Tells subscribers a reload succeeded or was refused.
    func broadcastConfig(_ change: String, problems: Int? = nil, into effects: inout [Effect]) {
        var members = JSONLine()
        members.add("kind", ControlSubscriptions.Kind.config.rawValue)
        members.add("change", change)
        members.add("generation", generation)
        if let problems { members.add("problems", problems) }
        broadcast(.config, members: members.members, into: &effects)
    }

    // MARK: - Results

    /// `state`'s result, and a subscription's snapshot, as a client of `role` may see it.
    func stateJSON(for role: ControlRole = .controller) -> String {
        var line = JSONLine()
        line.add("generation", generation)
        line.add("active_screen", scene.activeScreen)
        line.add("screens", strings: scene.screenIDs)
        line.add("controls", json: JSONLine.array(scene.controlIDs.map { controlJSON($0, for: role) }))
        line.add("gestures", strings: scene.gestureIDs)
        line.add(
            "devices",
            json: JSONLine.array(
                router.touchscreens.map { device in
                    var entry = JSONLine()
                    entry.add("sysname", device.sysname)
                    entry.add("name", device.name)
                    entry.add("vendor", DeviceInfo.hex(device.vendor))
                    entry.add("product", DeviceInfo.hex(device.product))
                    entry.add("node", device.devnode)
                    return entry.line
                }))
        line.add("contacts", scene.contactCount)
        if configuration.accessibility.enabled { line.add("speech", json: speechJSON(for: role)) }
        return line.line
    }

    /// One control's state, as `state` and `set` show it to a client of `role`. A private control shows an observer
    /// only its id, kind, whether it is enabled and that it is private: whether a finger is on it, and what a touch
    /// changed (selected, value), are what it keeps from observers.
    func controlJSON(_ id: String, for role: ControlRole = .controller) -> String {
        var line = JSONLine()
        line.add("id", id)
        guard let control = scene.control(id), let state = scene.state(of: id) else { return line.line }
        line.add("kind", control.kind.name)
        line.add("enabled", control.isEnabled)
        let isPrivate = configuration.isPrivate(control: id)
        if isPrivate && role == .observer {
            line.add("private", true)
            return line.line
        }
        line.add("selected", control.isSelected)
        line.add("highlighted", state.contains(.highlighted))
        line.add("tracking", scene.isTracking(id))
        if control.hasValue { line.add("value", control.value) }
        if isPrivate { line.add("private", true) }
        return line.line
    }

    /// A `state` event's members: the control's id, enabled, selected, highlighted, and value when it has one.
    private func stateMembers(_ id: String) -> String {
        var line = JSONLine()
        line.add("kind", ControlSubscriptions.Kind.state.rawValue)
        line.add("control", id)
        if let control = scene.control(id), let state = scene.state(of: id) {
            line.add("enabled", control.isEnabled)
            line.add("selected", control.isSelected)
            line.add("highlighted", state.contains(.highlighted))
            if control.hasValue { line.add("value", control.value) }
        }
        return line.members
    }

    /// `stats`' result.
    func statsJSON(_ edge: EdgeStatistics) -> String {
        var line = JSONLine()
        line.add("generation", generation)
        line.add("uptime_us", Int(clamping: edge.uptimeMicroseconds))
        line.add("frames", statistics.frames)
        line.add("control_events", statistics.controlEvents)
        line.add("gesture_events", statistics.gestureEvents)
        line.add("actions", statistics.actions)
        line.add("unhandled_actions", statistics.unhandledActions)
        line.add("contacts_over_limit", statistics.contactsOverLimit)
        line.add("forwarded_first", statistics.forwardedFirst)
        line.add("forecast_misses", statistics.forecastMisses)
        line.add("diagnostics", statistics.diagnostics)
        line.add("reloads", statistics.reloads)
        line.add("reload_failures", statistics.reloadFailures)
        var spoken = JSONLine()
        spoken.add("sessions", speech.sessions)
        spoken.add("activations", speech.activations)
        spoken.add("failures", speech.failures)
        line.add("speech", json: spoken.line)
        line.add("libinput_lost_event_warnings", edge.lostEventWarnings)
        line.add("processing", json: Self.histogramJSON(edge.processing))
        line.add("handling", json: Self.histogramJSON(edge.handling))
        var targets = JSONLine()
        for report in edge.targets { targets.add(report.target, json: report.json) }
        line.add("targets", json: targets.line)
        line.add("subscribers", subscriptions.subscriptions.count)
        var server = JSONLine()
        for counter in edge.controlCounters { server.add(counter.name, counter.value) }
        line.add("control_socket", json: server.line)
        return line.line
    }

    private static func histogramJSON(_ histogram: LatencyHistogram) -> String {
        var line = JSONLine()
        line.add("samples", histogram.count)
        for (key, fraction) in [("p50_us", 0.5), ("p99_us", 0.99)] {
            if let value = histogram.percentile(fraction) {
                line.add(key, Int(clamping: value))
            } else {
                line.add(key, nil as String?)
            }
        }
        line.add("max_us", Int(clamping: histogram.maximum))
        return line.line
    }
}
