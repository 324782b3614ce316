import TouchModel

/// `touchd ctl monitor`: the control socket's `contact` events, one per sample of a frame (down, move, up, cancel),
/// with the device, the position in output pixels, the control and the gesture recognizers the contact touches, and
/// the control events and gesture events the sample caused.
///
/// This path runs only while a controller watches (``ControlSubscriptions/watchesContacts``); otherwise a frame goes
/// straight to the scene and nothing here is built.
extension Engine {
    /// A frame through the scene with its `contact` events for the watchers, after the frame's own effects.
    mutating func handleWatched(
        _ frame: Frame, device: String?, fromInput: Bool, now: UInt64, into effects: inout [Effect]
    ) {
        // A lift or a cancel takes the contact out of the scene: what it touched is read before.
        var before: [ContactID: ContactInspection] = [:]
        for sample in frame.samples where sample.phase != .began {
            if let seen = scene.inspect(contact: sample.contact) { before[sample.contact] = seen }
        }
        // The watchers' events name the control and gesture events of their contacts: the records, for this frame.
        scene.recordsEvents = true
        let output = scene.handle(frame)
        scene.recordsEvents = readsRecords
        deliver(output, at: frame.time, device: device, fromInput: fromInput, now: now, into: &effects)
        let recipients = subscriptions.contactRecipients
        for sample in frame.samples {
            let seen: ContactInspection?
            switch sample.phase {
            case .began, .moved: seen = scene.inspect(contact: sample.contact) ?? before[sample.contact]
            case .ended, .cancelled: seen = before[sample.contact]
            }
            let event = contactEvent(
                sample, seen: seen, output: output, time: frame.time, device: device)
            effects.append(
                .control(.event(ControlEvent(recipients: recipients, members: event.members, coalescingKey: event.key)))
            )
        }
    }

    /// One `contact` event's members, and its coalescing key when it is motion alone (a move that caused only drags,
    /// a continuous value or a gesture's `changed`): a slow watcher then sees the latest position, never a gap.
    private func contactEvent(
        _ sample: ContactSample, seen: ContactInspection?, output: Output, time: Instant, device: String?
    ) -> (members: String, key: String?) {
        let contact = sample.contact
        let events = output.events.filter { $0.contact == contact }
        let gestures = output.gestures.filter {
            $0.contacts.contains(contact) || seen?.gestures.contains($0.gesture) == true
        }
        var line = JSONLine()
        line.add("kind", ControlSubscriptions.Kind.contact.rawValue)
        line.add("time_us", Int(clamping: time.microseconds))
        line.add("touch", Self.touchName(sample.phase))
        line.add("contact", contact)
        let location = sample.phase == .cancelled ? seen?.location : (sample.location ?? seen?.location)
        if let location, location.isFinite {
            line.add("x", location.x)
            line.add("y", location.y)
        } else {
            line.add("x", nil as String?)
            line.add("y", nil as String?)
        }
        line.add("device", device)
        line.add("control", seen?.control)
        line.add("gestures", strings: seen?.gestures ?? [])
        line.add("events", strings: events.map { configuration.name(of: $0.event) })
        line.add(
            "gesture_events",
            json: JSONLine.array(
                gestures.map { record in
                    var entry = JSONLine()
                    entry.add("gesture", record.gesture)
                    entry.add("event", record.event.description)
                    entry.add("state", record.state.rawValue)
                    return entry.line
                }))
        line.add("generation", generation)
        let motion: Control.Event = [.touchDragInside, .touchDragOutside, .valueChanged]
        let isMotion =
            sample.phase == .moved && events.allSatisfy { motion.contains($0.event) }
            && gestures.allSatisfy { $0.event == .changed }
        return (line.members, isMotion ? "contact:\(contact):move" : nil)
    }

    /// `down`, `move`, `up`, `cancel`: as a touch script writes them.
    static func touchName(_ phase: ContactSample.Phase) -> String {
        switch phase {
        case .began: "down"
        case .moved: "move"
        case .ended: "up"
        case .cancelled: "cancel"
        }
    }
}
