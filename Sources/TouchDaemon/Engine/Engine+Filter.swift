import Logging
import TouchModel

/// One change the application sees on a twin: a touch that goes down, moves, lifts or is cancelled.
struct TwinChange: Hashable, Sendable {
    /// The touch's number for the twin: the scene's number for it (unique in a scene; seat slots are reused) with the
    /// configuration's generation in its top 16 bits, so that a touch the application keeps across a reload never
    /// meets the new scene's touch of the same number.
    var touch: UInt64
    var phase: AppTouchRecord.Phase
    /// The device's own slot where the contact went down (−1 on single-touch devices): the twin keeps it when free.
    var slot: Int
    /// The position normalised to 0…1 on each axis of the twin's space (``TwinAxes``), as libinput reports it (its
    /// calibration applied): of the device with `[filter] twin_space = "device"`, of the whole output with
    /// `"output"`. Nil for lifts and cancels.
    var x: Double?
    var y: Double?
}

/// One evdev frame for the twin of touchscreen `device`.
struct TwinFrame: Hashable, Sendable {
    var device: Int
    var changes: [TwinChange]
}

/// The axes of a touchscreen's twin, as the engine plans them from `[filter] twin_space` (docs/kiosk.md, "Which
/// twin_space").
enum TwinAxes: Hashable, Sendable {
    /// The panel's own axes, ranges and resolutions: positions in its device coordinates.
    case device
    /// The output's: positions normalised over the whole `[output]`.
    case output(OutputAxes)
}

/// An output-space twin's position axes: `ABS_MT_POSITION_X` (and `ABS_X`) from 0 to `xMaximum`, `Y` from 0 to
/// `yMaximum`, ``unitsPerPixel`` units per output pixel on both, so that the ranges have the output's aspect, and one
/// resolution for both that gives the output's physical size as the panel measures it.
struct OutputAxes: Hashable, Sendable {
    /// Sixteen units per pixel: a compositor that scales the twin's range onto the output lands within 1/32 pixel of
    /// touchd's point (rounding to whole units), far below a finger's width.
    static let unitsPerPixel: Int32 = 16
    var xMaximum: Int32
    var yMaximum: Int32
    /// Units per millimetre; 0 when the panel reports no physical size (the twin then reports none either, as the
    /// panel does).
    var resolution: Int32

    /// The axes for a panel that lands on `mapper.region` of `output`: its width and height in millimetres spread
    /// over the pixels of its region (turned with its rotation) give the size of one output pixel, the mean of the
    /// two axes'.
    init(
        output: Configuration.Output, mapper: CoordinateMapper, widthMillimetres: Double?, heightMillimetres: Double?
    ) {
        // The schema keeps the output within 1…32768 pixels: at most 524288 units, well inside Int32.
        func maximum(_ pixels: Double) -> Int32 {
            let units = (min(max(pixels, 1), 32_768) * Double(Self.unitsPerPixel)).rounded()
            return Int32(exactly: units - 1) ?? Self.unitsPerPixel - 1
        }
        xMaximum = maximum(output.width)
        yMaximum = maximum(output.height)
        resolution = 0
        guard let width = widthMillimetres, let height = heightMillimetres, width > 0, height > 0,
            mapper.region.width > 0, mapper.region.height > 0
        else { return }
        // A panel turned by 90° or 270° spans the region's height with its width.
        let turned = mapper.rotation == .right || mapper.rotation == .left
        let alongX = (turned ? height : width) / mapper.region.width
        let alongY = (turned ? width : height) / mapper.region.height
        let pixel = (alongX + alongY) / 2
        let perMillimetre = (Double(Self.unitsPerPixel) / pixel).rounded()
        guard perMillimetre.isFinite else { return }
        resolution = Int32(exactly: min(max(perMillimetre, 1), 1_000_000)) ?? 0
    }

    /// A position in output pixels, normalised over the whole output (what the twin's axes carry); nil when it is not
    /// finite. Positions off the output stay off it: the twin clamps them to its axes.
    static func normalised(_ point: Point, on output: Configuration.Output) -> (x: Double, y: Double)? {
        guard point.isFinite, output.width > 0, output.height > 0 else { return nil }
        return (point.x / output.width, point.y / output.height)
    }
}

/// What the loop did with a touchscreen filter mode wants: grabbed it and gave it a twin; left it alone for now because
/// contacts are down on it (the compositor saw them go down and must see them end: the loop asks again when the panel
/// next wakes it); or could not filter it, and why.
enum GrabOutcome: Equatable, Sendable {
    case grabbed
    case waiting(contacts: Int)
    case refused(String)
}

/// The filter's bookkeeping in the engine.
struct FilterState: Sendable {
    /// The touchscreens last handed to the loop to grab, and the cancel style, as last planned.
    var planned: [Int] = []
    var plannedCancel: Configuration.Filter.CancelWith?
    var plannedAxes: [Int: TwinAxes] = [:]
    /// The touchscreens that are grabbed and have a twin: only their touches are forwarded.
    var filtered: SmallSet<Int> = []
    /// Touchscreens that could not be filtered, and why (shown in the status).
    var refused: [Int: (name: String, reason: String)] = [:]
    /// Touchscreens whose grab waits for the contacts on them to lift, with their names.
    var waiting: [Int: String] = [:]
    /// The twin each application touch is on.
    var touchDevice: SmallMap<UInt64, Int> = [:]
    /// Application touches whose contact touchd cancelled for itself (a reload, lost events): the app's copy goes on
    /// with the real finger's moves and ends with its real lift, so a cancel nobody asked for never becomes a tap.
    var following: [ContactID: UInt64] = [:]
}

extension Engine {
    /// Hands the loop the touchscreens to grab when that changed: the used touchscreens with `[filter] enabled`,
    /// none without.
    /// `retry`: ask again for the touchscreens that could not be grabbed (a reload, after the other grabber went away).
    mutating func planFilter(retry: Bool = false, into effects: inout [Effect]) {
        let wanted = configuration.filter.enabled ? router.touchscreens : []
        let ids = wanted.map(\.id)
        let cancel = configuration.filter.cancelWith
        let axes = twinAxes(for: wanted)
        let retrying = retry && !filter.refused.isEmpty && !wanted.isEmpty
        guard
            ids != filter.planned || (!wanted.isEmpty && (filter.plannedCancel != cancel || filter.plannedAxes != axes))
                || retrying
        else { return }
        // A first plan with nothing to grab says nothing: the filter was never on.
        if wanted.isEmpty && filter.plannedCancel == nil { return }
        filter.planned = ids
        filter.plannedCancel = cancel
        // A twin whose axes change is made anew (the loop reports it grabbed again, or waiting, or refused).
        let previous = filter.plannedAxes
        filter.filtered.removeAll { id in !ids.contains(id) || (previous[id] != nil && previous[id] != axes[id]) }
        filter.plannedAxes = axes
        filter.refused = filter.refused.filter { ids.contains($0.key) }
        filter.waiting = filter.waiting.filter { ids.contains($0.key) }
        effects.append(.filterDevices(wanted, cancelWith: cancel, axes: axes))
    }

    /// The axes of each touchscreen's twin under the configuration's `[filter] twin_space`.
    func twinAxes(for devices: [DeviceInfo]) -> [Int: TwinAxes] {
        var axes: [Int: TwinAxes] = [:]
        for device in devices {
            switch configuration.filter.twinSpace {
            case .device:
                axes[device.id] = .device
            case .output:
                let mapper = router.mapper(for: device.id) ?? CoordinateMapper(output: configuration.output)
                axes[device.id] = .output(
                    OutputAxes(
                        output: configuration.output, mapper: mapper, widthMillimetres: device.widthMillimetres,
                        heightMillimetres: device.heightMillimetres))
            }
        }
        return axes
    }

    /// Where the twin of `device` reports a touch at `point` (output pixels), normalised over the twin's space:
    /// touchd's mapping undone for `"device"`, the output's own coordinates for `"output"`.
    func twinPosition(of point: Point, on device: Int) -> (x: Double, y: Double)? {
        switch configuration.filter.twinSpace {
        case .device: router.devicePosition(of: point, on: device)
        case .output: OutputAxes.normalised(point, on: configuration.output)
        }
    }

    /// The loop's answer to ``Effect/filterDevices(_:cancelWith:axes:)``: what became of each touchscreen it tried
    /// (fault-cases.md F5). A refusal is logged when its reason is new, a wait once until it ends.
    mutating func filterApplied(_ results: [(device: DeviceInfo, outcome: GrabOutcome)]) -> [Effect] {
        var effects: [Effect] = []
        for (device, outcome) in results {
            var metadata = Self.metadata(of: device)
            switch outcome {
            case .refused(let problem):
                filter.filtered.remove(device.id)
                filter.waiting[device.id] = nil
                let repeated = filter.refused[device.id]?.reason == problem
                filter.refused[device.id] = (device.name, problem)
                guard !repeated else { continue }
                metadata["reason"] = "\(problem)"
                metadata[MessageID.metadataKey] = "\(MessageID.filterRefused)"
                effects.append(
                    .log(
                        .warning, "touchscreen not filtered: the application reads it directly", metadata))
            case .waiting(let contacts):
                filter.filtered.remove(device.id)
                filter.refused[device.id] = nil
                guard filter.waiting[device.id] == nil else { continue }
                filter.waiting[device.id] = device.name
                metadata["contacts_down"] = "\(contacts)"
                effects.append(
                    .log(
                        .notice,
                        "touchscreen not filtered yet: contacts are down on it, and the application must see them end;"
                            + " it is grabbed once they lift", metadata))
            case .grabbed:
                filter.filtered.insert(device.id)
                filter.refused[device.id] = nil
                filter.waiting[device.id] = nil
                metadata[MessageID.metadataKey] = "\(MessageID.filterStarted)"
                metadata["twin_space"] = "\(configuration.filter.twinSpace.rawValue)"
                effects.append(.log(.info, "touchscreen filtered: the application reads its twin", metadata))
            }
        }
        statusIfChanged(into: &effects)
        return effects
    }

    /// Whether a grab waits for contacts to lift: the loop then calls ``retryWaitingGrabs()`` after the input it reads.
    var filterWaits: Bool { !filter.waiting.isEmpty }

    /// Asks the loop again for the touchscreens filter mode wants, when a grab waits for contacts to lift.
    mutating func retryWaitingGrabs() -> [Effect] {
        guard configuration.filter.enabled, !filter.waiting.isEmpty else {
            filter.waiting.removeAll()
            return []
        }
        filter.waiting = filter.waiting.filter { id, _ in filter.planned.contains(id) }
        guard !filter.waiting.isEmpty else { return [] }
        let devices = router.touchscreens
        return [
            .filterDevices(devices, cancelWith: configuration.filter.cancelWith, axes: twinAxes(for: devices))
        ]
    }

    /// The filter's part of the status: how many touchscreens are filtered, and which could not be, and why.
    var filterStatus: String? {
        guard configuration.filter.enabled else { return nil }
        var parts: [String] = []
        if !filter.filtered.isEmpty { parts.append("filtering \(filter.filtered.count)") }
        if !filter.waiting.isEmpty {
            parts.append(
                "waiting for contacts to lift before filtering: "
                    + filter.waiting.keys.sorted().compactMap { filter.waiting[$0] }.joined(separator: ", "))
        }
        if !filter.refused.isEmpty {
            parts.append(
                "not filtered: "
                    + filter.refused.keys.sorted().compactMap { filter.refused[$0] }.map { "\($0.name) (\($0.reason))" }
                    .joined(separator: ", "))
        }
        return parts.isEmpty ? nil : parts.joined(separator: "; ")
    }

    /// A move or the lift (`location` nil) of a contact the scene no longer tracks: when the application still has
    /// its copy (``FilterState/following``), it gets the move or the lift, as the panel would have given it.
    mutating func followOrphan(_ contact: ContactID, to location: Point?, device: Int, into effects: inout [Effect]) {
        guard let touch = filter.following[contact] else { return }
        guard filter.touchDevice[touch] == device, filter.filtered.contains(device) else {
            // The twin went away (unplugged, released): the compositor ended the touch with it.
            filter.following[contact] = nil
            filter.touchDevice[touch] = nil
            return
        }
        let change: TwinChange
        if let location {
            let position = twinPosition(of: location, on: device)
            change = TwinChange(touch: touch, phase: .move, slot: -1, x: position?.x, y: position?.y)
        } else {
            filter.following[contact] = nil
            filter.touchDevice[touch] = nil
            change = TwinChange(touch: touch, phase: .up, slot: -1, x: nil, y: nil)
        }
        effects.append(.forward(TwinFrame(device: device, changes: [change])))
    }

    /// Turns what the application sees into twin frames, one per touchscreen, in order. Touches on a touchscreen
    /// that is not filtered reach the application directly, so nothing is forwarded for them.
    mutating func forward(_ records: [AppTouchRecord], into effects: inout [Effect]) {
        guard !records.isEmpty else { return }
        var frames: [TwinFrame] = []
        for record in records {
            let device: Int
            var slot = -1
            // A scene numbers its touches from 0, and a reload makes a new scene while the application may still
            // hold a touch of the old one (``FilterState/following``): the twin's number carries the generation.
            let appTouch = Self.appTouch(record.touch, generation: generation)
            if record.phase == .down {
                // A tap speech mode synthesizes goes to the twin of the touchscreen last explored on.
                guard let origin = router.origin(of: record.contact) ?? syntheticOrigin(of: record.contact)
                else { continue }
                device = origin.device
                slot = origin.slot
                filter.touchDevice[appTouch] = device
            } else {
                guard let known = filter.touchDevice[appTouch] else { continue }
                device = known
                if record.phase == .cancel, appFollowsCancels, filter.filtered.contains(device) {
                    // Not the app's business: its copy follows the real finger to its end (followOrphan).
                    filter.following[record.contact] = appTouch
                    continue
                }
                if record.phase == .up || record.phase == .cancel { filter.touchDevice[appTouch] = nil }
            }
            guard filter.filtered.contains(device) else { continue }
            let position = record.location.flatMap { twinPosition(of: $0, on: device) }
            let change = TwinChange(
                touch: appTouch, phase: record.phase, slot: slot, x: position?.x, y: position?.y)
            // Written already, before the frame was handled (EdgeForecast): the scene made it, as forecast.
            if let first = forwardedFirst, first.device == device,
                let index = first.changes.firstIndex(where: { $0.touch == appTouch && $0.phase == record.phase })
            {
                forwardedFirst?.changes.remove(at: index)
                if forwardedFirst?.changes.isEmpty == true { forwardedFirst = nil }
                continue
            }
            if let index = frames.firstIndex(where: { $0.device == device }) {
                frames[index].changes.append(change)
            } else {
                frames.append(TwinFrame(device: device, changes: [change]))
            }
        }
        effects += frames.map { .forward($0) }
    }
}

/// Filter mode's forwarding first (docs/kiosk.md, "Forward first"): what the edge may write to a panel's twin as soon as
/// it has read a frame, before the engine handles it. The engine makes it after every change (``Engine/edgeForecast(for:)``)
/// from the scene's ``AppForecast``; the edge asks it with the frame's touch events, and hands the engine what it wrote,
/// which the scene then makes and ``Engine/forward(_:into:)`` does not write again. Where the frame is not certain (a
/// spot a control or recognizer may hold, a limit, a wake touch, speech mode, a timer due) it says nil, and the frame
/// goes the whole way through the engine first, as it always did.
struct EdgeForecast: Sendable {
    var device: Int
    var app: AppForecast
    var mapper: CoordinateMapper
    var generation: Int
    var twinSpace: Configuration.Filter.TwinSpace
    var output: Configuration.Output
    /// No contact is down anywhere: a resume from a suspend, found only after the frame, then cancels nothing, and the
    /// forecast holds (the daemon reads the suspend check's clocks after the twin's write).
    var resumeCancelsNothing = false

    /// The room ``twinFrame(for:scratch:)`` works in, kept by the edge from frame to frame, so that a forwarded frame
    /// allocates nothing before its write.
    struct Scratch {
        var samples: [ContactSample] = []
        var records: [AppTouchRecord] = []
        var changes: [TwinChange] = []

        init() {
            samples.reserveCapacity(8)
            records.reserveCapacity(8)
            changes.reserveCapacity(8)
        }
    }

    /// The twin frame for one frame of the panel's touch events (as the edge decoded them: touches, then the frame),
    /// when all of it is certain; nil otherwise. The router's reading of the same events, without the router.
    func twinFrame(for events: [InputEvent]) -> TwinFrame? {
        var scratch = Scratch()
        var forecast = self
        return forecast.twinFrame(for: events, scratch: &scratch)
    }

    /// ``twinFrame(for:)`` in `scratch`'s room: the frame's changes share the storage of `scratch.changes` until the
    /// next call.
    ///
    /// It changes nothing. It is `mutating` so that the edge, which holds the forecast, calls it in place before the
    /// twin's write: called as a non-mutating method on the edge's forecast, the compiler copies the forecast first
    /// (its arrays, its map and the mapper retained, and released after).
    mutating func twinFrame(for events: [InputEvent], scratch: inout Scratch) -> TwinFrame? {
        scratch.samples.removeAll(keepingCapacity: true)
        var time: Instant?
        for event in events {
            guard case .touch(let touch) = event, touch.device == device else { return nil }
            switch touch.kind {
            case .down:
                guard let x = touch.x, let y = touch.y, let point = mapper.map(x: x, y: y) else { return nil }
                scratch.samples.append(.began(touch.seatSlot, at: point))
            case .motion:
                guard let x = touch.x, let y = touch.y, let point = mapper.map(x: x, y: y) else { return nil }
                scratch.samples.append(.moved(touch.seatSlot, to: point))
            case .up:
                scratch.samples.append(.ended(touch.seatSlot))
            case .cancel:
                return nil
            case .frame:
                time = Instant(microseconds: touch.time)
            }
        }
        guard let time, app.predict(Frame(time: time, samples: scratch.samples), into: &scratch.records),
            !scratch.records.isEmpty
        else { return nil }
        scratch.changes.removeAll(keepingCapacity: true)
        for record in scratch.records {
            let slot = record.phase == .down ? Self.slot(of: record.contact, in: events) : -1
            scratch.changes.append(change(for: record, slot: slot))
        }
        return TwinFrame(device: device, changes: scratch.changes)
    }

    /// The one change ``twinFrame(for:scratch:)`` makes of a frame that changes one contact alone, as the decoder
    /// finds it in the panel's raw events before decoding them (``EvdevTouchDecoder/loneChange(_:at:)``): the same
    /// decision, made without the frame's decoded events or any array, so that the edge writes it before it decodes
    /// anything. Nil when not certain. The decoder's and the forecast's tests prove the two equal. `mutating` for the
    /// reason ``twinFrame(for:scratch:)`` gives; it changes nothing.
    @inline(__always)
    mutating func twinChange(for lone: EvdevTouchDecoder.LoneChange) -> TwinChange? {
        let sample: ContactSample
        switch lone.kind {
        case .down, .motion:
            guard let x = lone.x, let y = lone.y, let point = mapper.map(x: x, y: y) else { return nil }
            sample = lone.kind == .down ? .began(lone.seatSlot, at: point) : .moved(lone.seatSlot, to: point)
        case .up:
            sample = .ended(lone.seatSlot)
        case .cancel, .frame:
            return nil
        }
        guard let record = app.predict(sample, at: lone.time) else { return nil }
        return change(for: record, slot: record.phase == .down ? lone.slot : -1)
    }

    /// The twin's change for what the application gets: its position in the twin's space, its number with the
    /// generation, and `slot` (``TwinChange/slot``).
    @inline(__always)
    private func change(for record: AppTouchRecord, slot: Int) -> TwinChange {
        let position = record.location.flatMap { point -> (x: Double, y: Double)? in
            switch twinSpace {
            case .device: mapper.unmap(point)
            case .output: OutputAxes.normalised(point, on: output)
            }
        }
        return TwinChange(
            touch: Engine.appTouch(record.touch, generation: generation), phase: record.phase,
            slot: slot, x: position?.x, y: position?.y)
    }

    /// The device's own slot of the contact that went down in `events` (−1: none).
    private static func slot(of contact: ContactID, in events: [InputEvent]) -> Int {
        for event in events {
            if case .touch(let touch) = event, touch.kind == .down, touch.seatSlot == contact { return touch.slot }
        }
        return -1
    }
}

extension Engine {
    /// The number of an application touch on the twin: the scene's number, with the generation in the top 16 bits
    /// (a reload makes a new scene, which numbers its touches from 0, while the application may hold an old one).
    static func appTouch(_ touch: UInt64, generation: Int) -> UInt64 {
        UInt64(truncatingIfNeeded: generation) &<< 48 | (touch & 0xFFFF_FFFF_FFFF)
    }

    /// What the edge may forward first from `device`'s next frame (``EdgeForecast``); nil when nothing can be: the
    /// panel is not filtered, speech mode or the wake touch has the touches, or the application is not there.
    ///
    /// It changes nothing. It is `mutating` so that the daemon, which makes it after every frame on the engine it
    /// holds, passes that engine in place: called on it as a non-mutating method, the compiler copies the whole
    /// engine first (about a hundred references retained, and released after).
    mutating func edgeForecast(for device: Int) -> EdgeForecast? {
        var forecast: EdgeForecast?
        refreshEdgeForecast(&forecast, for: device)
        return forecast
    }

    /// ``edgeForecast(for:)`` written over `forecast`, the edge's last one, which keeps its room: the daemon makes the
    /// forecast after every frame, and this way it allocates nothing while the touches fit the room of earlier ones.
    /// Changes nothing else; `mutating` for the reason ``edgeForecast(for:)`` gives.
    mutating func refreshEdgeForecast(_ forecast: inout EdgeForecast?, for device: Int) {
        guard configuration.filter.enabled, filter.filtered.contains(device), !speechIntercepts, !idleClock.isIdle,
            idleClock.wakeContacts.isEmpty, let mapper = router.mapper(for: device)
        else {
            forecast = nil
            return
        }
        // The last forecast's application part, taken out of it so that its arrays stay uniquely held while the scene
        // refills them in their room; an empty one the first time.
        var app = forecast.take()?.app ?? .none
        scene.appForecast(into: &app)
        // The engine's own timers (idle, speech) too: a frame at or after the next is not forecast.
        app.validUntil = nextDeadline
        forecast = EdgeForecast(
            device: device, app: app, mapper: mapper, generation: generation,
            twinSpace: configuration.filter.twinSpace, output: configuration.output,
            resumeCancelsNothing: !router.hasActiveContacts)
    }

    /// Changes the edge wrote first that the scene did not make: said as an error, and a touch-down cancelled for the
    /// application, so that no touch is left down there. Never expected: the forecast is proven against the scene.
    mutating func forecastMissed(into effects: inout [Effect]) {
        guard let missed = forwardedFirst else { return }
        forwardedFirst = nil
        statistics.forecastMisses &+= missed.changes.count
        effects.append(
            .log(
                .error, "touchd forwarded first what the scene did not then hand the application",
                [
                    "device": "\(missed.device)",
                    "changes": "\(missed.changes.map { "\($0.touch):\($0.phase.rawValue)" }.joined(separator: ","))",
                ]))
        let cancels = missed.changes.filter { $0.phase == .down }.map {
            TwinChange(touch: $0.touch, phase: .cancel, slot: -1, x: nil, y: nil)
        }
        if !cancels.isEmpty { effects.append(.forward(TwinFrame(device: missed.device, changes: cancels))) }
    }
}
