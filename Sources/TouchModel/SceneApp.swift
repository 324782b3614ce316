// The application beneath touchd's controls (filter mode), as UIKit treats the view under its
// controls and recognizers:
//
// - A touch reaches the application unless it begins on a control with `toApp == false`, while
//   `maximumContacts` application touches are already down, or as part of a wake touch (the first
//   touch after `swallowAfterIdle` with nothing down, and every touch that begins while it lasts).
//   A touch that does not reach the application at its beginning never does: it is never forwarded
//   late, in the middle of a gesture, as a surprise touch-down.
// - A recognizer that recognizes with `cancelsTouches` cancels the application's copies of its
//   touches, like the controls' (UIKit's cancelsTouchesInView).
// - `delaysTouchesBegan`: while such a recognizer is undecided about a touch, the application does
//   not see it; when every such recognizer has failed, the touch reaches the application at its
//   current place (and lifts at once if it already lifted); when one recognizes, never.
// - `delaysTouchesEnded`: the application's lift waits while such a recognizer is undecided about
//   the touch; it is a cancel instead if the recognizer recognizes and cancels touches.

/// What happened to one of the application's touches.
public struct AppTouchRecord: Hashable, Sendable {
    public enum Phase: String, Hashable, Sendable {
        case down, move, up, cancel
    }

    public var time: Instant
    public var contact: ContactID
    /// This touch's number, unique in the scene (contact ids are reused, and a held lift outlives its contact).
    public var touch: UInt64
    public var phase: Phase
    /// Where the touch is; nil for `up` and `cancel`.
    public var location: Point?

    public init(time: Instant, contact: ContactID, touch: UInt64, phase: Phase, location: Point?) {
        self.time = time
        self.contact = contact
        self.touch = touch
        self.phase = phase
        self.location = location
    }
}

/// The settings of the application beneath touchd (`[filter]`).
public struct AppSettings: Hashable, Sendable {
    /// The most touches the application has down at once; 0 for no limit.
    public var maximumContacts: Int
    /// After this long with nothing down, in microseconds, the next touch is touchd's alone; 0 never.
    public var swallowAfterIdle: UInt64

    public init(maximumContacts: Int = 0, swallowAfterIdle: UInt64 = 0) {
        self.maximumContacts = Swift.max(0, maximumContacts)
        self.swallowAfterIdle = swallowAfterIdle
    }
}

/// The application's view of the touches (see the top of this file).
struct AppView: Sendable {
    enum Phase: Sendable {
        /// The application has the touch down.
        case shown
        /// A recognizer that delays touches began is undecided: the application has not seen it yet.
        case delayed
        /// The application has the touch down and its lift waits for a recognizer.
        case liftHeld
    }

    struct Touch: Sendable {
        var contact: ContactID
        var phase: Phase
        var location: Point
        /// The contact lifted while the touch was delayed.
        var lifted = false
    }

    var touches: SmallMap<TouchSerial, Touch> = [:]
    /// When the last contact lifted (the scene's start counts as one).
    var idleSince: Instant = .zero
    /// A wake touch is down: touches that begin now are touchd's alone.
    var swallowing = false
    var hadContacts = false

    /// The touches in the order they began.
    var serials: [TouchSerial] { touches.keys.sorted() }
}

extension Scene {
    /// When the last contact lifted, for the wake touch: the caller carries it into a new scene (a reload), which
    /// otherwise counts its own start.
    public var appIdleSince: Instant {
        get { app.idleSince }
        set { app.idleSince = newValue }
    }

    /// The contacts the application has down or has yet to see, in the order they began.
    public var appContacts: [ContactID] {
        app.serials.compactMap { app.touches[$0]?.contact }
    }

    mutating func appTouchBegan(
        _ serial: TouchSerial, contact: ContactID, at location: Point, control: Int?, wasIdle: Bool,
        into output: inout Output
    ) {
        guard let settings = settings.app, contacts[contact]?.serial == serial else { return }
        if wasIdle, settings.swallowAfterIdle > 0, !app.swallowing,
            app.idleSince.advanced(by: settings.swallowAfterIdle) <= now
        {
            app.swallowing = true
        }
        if app.swallowing { return }
        if let control, !slots[control].control.toApp { return }
        if settings.maximumContacts > 0, app.touches.count >= settings.maximumContacts { return }
        let delayed = recognizers.contains {
            $0.recognizer.delaysTouchesBegan && $0.state == .possible && $0.progress.sequence.contains(serial)
        }
        app.touches[serial] = AppView.Touch(contact: contact, phase: delayed ? .delayed : .shown, location: location)
        if !delayed { emitApp(.down, contact, serial, at: location, into: &output) }
    }

    mutating func appTouchMoved(_ serial: TouchSerial, to location: Point, into output: inout Output) {
        guard var touch = app.touches[serial] else { return }
        touch.location = location
        app.touches[serial] = touch
        if touch.phase == .shown { emitApp(.move, touch.contact, serial, at: location, into: &output) }
    }

    /// The contact lifted (after the recognizers saw the lift).
    mutating func appTouchLifted(_ serial: TouchSerial, at location: Point, into output: inout Output) {
        guard var touch = app.touches[serial] else { return }
        switch touch.phase {
        case .delayed:
            touch.lifted = true
            touch.location = location
            app.touches[serial] = touch
        case .shown:
            if touch.location != location {
                touch.location = location
                emitApp(.move, touch.contact, serial, at: location, into: &output)
            }
            liftApp(serial, touch, into: &output)
        case .liftHeld:
            break
        }
    }

    /// The contact was cancelled: the application's copy is cancelled, a delayed one is forgotten.
    mutating func appTouchCancelled(_ serial: TouchSerial, into output: inout Output) {
        guard let touch = app.touches.removeValue(forKey: serial) else { return }
        if touch.phase != .delayed { emitApp(.cancel, touch.contact, serial, at: nil, into: &output) }
    }

    /// Every contact lifted: the idle time starts, and a wake touch is over.
    mutating func appAllLifted() {
        guard app.hadContacts else { return }
        app.hadContacts = false
        app.idleSince = now
        app.swallowing = false
    }

    /// Notes that contacts are down (for ``appAllLifted()``).
    mutating func appContactsDown() {
        app.hadContacts = true
    }

    /// A recognizer recognized: with cancelsTouches, the application's copies of its touches are cancelled; the
    /// touches it (or another that cancels them) delayed are never shown.
    mutating func appGestureRecognized(_ index: Int, into output: inout Output) {
        let recognizer = recognizers[index].recognizer
        let sequence = recognizers[index].progress.sequence
        for serial in app.serials where sequence.contains(serial) {
            guard let touch = app.touches[serial] else { continue }
            switch touch.phase {
            case .delayed:
                if recognizer.cancelsTouches || recognizer.delaysTouchesBegan { app.touches[serial] = nil }
            case .shown, .liftHeld:
                guard recognizer.cancelsTouches else { continue }
                app.touches[serial] = nil
                emitApp(.cancel, touch.contact, serial, at: nil, into: &output)
            }
        }
    }

    /// After recognizers changed state: delayed touches no recognizer delays any more are shown, held lifts no
    /// recognizer holds any more are delivered.
    mutating func releaseAppTouches(into output: inout Output) {
        for serial in app.serials {
            guard let touch = app.touches[serial] else { continue }
            switch touch.phase {
            case .delayed:
                let stillDelayed = recognizers.contains {
                    $0.recognizer.delaysTouchesBegan && $0.state == .possible && $0.progress.sequence.contains(serial)
                }
                guard !stillDelayed else { continue }
                emitApp(.down, touch.contact, serial, at: touch.location, into: &output)
                if touch.lifted {
                    liftApp(serial, touch, into: &output)
                } else {
                    app.touches[serial]?.phase = .shown
                }
            case .liftHeld:
                guard !isLiftDelayed(serial) else { continue }
                app.touches[serial] = nil
                emitApp(.up, touch.contact, serial, at: nil, into: &output)
            case .shown:
                break
            }
        }
    }

    /// The application's lift: held while a recognizer that delays touches ended is undecided, else sent.
    private mutating func liftApp(_ serial: TouchSerial, _ touch: AppView.Touch, into output: inout Output) {
        if isLiftDelayed(serial) {
            var held = touch
            held.phase = .liftHeld
            app.touches[serial] = held
        } else {
            app.touches[serial] = nil
            emitApp(.up, touch.contact, serial, at: nil, into: &output)
        }
    }

    private func emitApp(
        _ phase: AppTouchRecord.Phase, _ contact: ContactID, _ serial: TouchSerial, at location: Point?,
        into output: inout Output
    ) {
        output.entries.append(
            .app(AppTouchRecord(time: now, contact: contact, touch: serial, phase: phase, location: location)))
    }
}

/// What the scene is certain to hand the application for a frame, known before the frame is handled: filter mode
/// forwards that first, and the rest of the frame's work follows (docs/kiosk.md, "Forward first"). Taken from the
/// scene after it changed (``Scene/appForecast``); it holds until the scene changes again, and never for a frame at or
/// after ``validUntil`` (a timer that may change what the application sees).
///
/// Certain are: a new touch that no control with `toApp == false` and no recognizer watching the spot may take, with
/// room under both contact limits and no wake touch due; the moves and lift of a touch the application has down that
/// no recognizer holds. Anything else in a frame (a cancel, a lift beside a new touch, a spot that may be held) makes
/// the whole frame uncertain: ``predict(_:)`` says nil and the scene alone decides it, as it always did. Where a
/// forecast is given, it is exactly what handling the frame hands the application (proven against the scene by the
/// model's tests).
public struct AppForecast: Hashable, Sendable {
    /// A touch the application has down whose moves and lift are certain: its number and where the application has it.
    public struct Continuing: Hashable, Sendable {
        public var touch: UInt64
        public var location: Point
    }

    /// The scene's time: an earlier frame is not forecast.
    public var now: Instant
    /// The scene's next timer: a frame at or after it is not forecast.
    public var validUntil: Instant?
    /// The number the next new touch gets.
    public var nextTouch: UInt64
    /// How many new touches may begin and reach the application at once (both contact limits, the wake touch).
    public var newTouchRoom: Int
    /// With nothing down, a new touch at or after this instant is a wake touch: not forecast.
    public var newTouchesBefore: Instant?
    /// Where a new touch may be held or kept from the application (output pixels, with a pixel to spare), and whether
    /// that is everywhere.
    public var holds: [Rect]
    public var holdsEverywhere: Bool
    /// The contacts down in the scene.
    public var contactsDown: [ContactID]
    public var continuing: [ContactID: Continuing]

    /// A forecast that forecasts nothing.
    public static let none = AppForecast(
        now: .zero, validUntil: nil, nextTouch: 0, newTouchRoom: 0, newTouchesBefore: nil, holds: [],
        holdsEverywhere: true, contactsDown: [], continuing: [:])

    /// What the application gets from `frame` when that is certain; nil when the scene must decide it.
    public func predict(_ frame: Frame) -> [AppTouchRecord]? {
        var records: [AppTouchRecord] = []
        return predict(frame, into: &records) ? records : nil
    }

    /// ``predict(_:)`` into `records` (emptied first, its room kept): true when certain, and `records` holds what the
    /// application gets; false when the scene must decide it.
    public func predict(_ frame: Frame, into records: inout [AppTouchRecord]) -> Bool {
        records.removeAll(keepingCapacity: true)
        guard !frame.samples.isEmpty, isCurrent(at: frame.time) else { return false }
        var began = 0
        var ended = false
        for (index, sample) in frame.samples.enumerated() {
            // A contact twice in one frame is not what the input layer gives: the scene decides.
            guard !frame.samples[..<index].contains(where: { $0.contact == sample.contact }),
                let made = self.records(for: sample, at: frame.time, began: began, ended: ended)
            else { return false }
            if let move = made.move { records.append(move) }
            records.append(made.record)
            if sample.phase == .began { began += 1 }
            if sample.phase == .ended { ended = true }
        }
        return true
    }

    /// What the application gets from the frame that holds `sample` alone, at `time`, when that is certain and is one
    /// record (a lift that also moved is two: nil): ``predict(_:into:)``'s decision, made without the frame or an
    /// array. Filter mode's edge asks it for a frame that changes one contact, before anything else, and compiles it into
    /// its own code (inlinable, with what it uses): a call into another module on that path costs the application's
    /// touch a few microseconds in an emulated guest, where the project measures it.
    @inlinable @inline(__always)
    public func predict(_ sample: ContactSample, at time: Instant) -> AppTouchRecord? {
        guard isCurrent(at: time), let made = records(for: sample, at: time, began: 0, ended: false), made.move == nil
        else { return nil }
        return made.record
    }

    /// Whether the forecast holds for a frame at `time`: not before the scene's time, nor at or after its next timer.
    @inlinable
    func isCurrent(at time: Instant) -> Bool {
        time >= now && validUntil.map({ time < $0 }) ?? true
    }

    /// What the application gets from one sample of a frame at `time` that `began` new touches and, when `ended`, a
    /// lift before it: the record, and for a lift that moved, the move before it; nil when the scene must decide the
    /// frame.
    @inlinable @inline(__always)
    func records(
        for sample: ContactSample, at time: Instant, began: Int, ended: Bool
    ) -> (move: AppTouchRecord?, record: AppTouchRecord)? {
        switch sample.phase {
        case .began:
            guard !ended, began < newTouchRoom, !holdsEverywhere, let location = sample.location,
                location.isFinite, !contactsDown.contains(sample.contact),
                !holds.contains(where: { $0.contains(location) })
            else { return nil }
            if contactsDown.isEmpty, began == 0, let before = newTouchesBefore, time >= before { return nil }
            let touch = nextTouch &+ UInt64(began)
            return (
                nil, AppTouchRecord(time: time, contact: sample.contact, touch: touch, phase: .down, location: location)
            )
        case .moved:
            guard let touch = continuing[sample.contact], let location = sample.location, location.isFinite
            else { return nil }
            return (
                nil,
                AppTouchRecord(
                    time: time, contact: sample.contact, touch: touch.touch, phase: .move, location: location)
            )
        case .ended:
            guard began == 0, let touch = continuing[sample.contact] else { return nil }
            var move: AppTouchRecord?
            if let location = sample.location {
                guard location.isFinite else { return nil }
                if location != touch.location {
                    move = AppTouchRecord(
                        time: time, contact: sample.contact, touch: touch.touch, phase: .move, location: location)
                }
            }
            return (
                move, AppTouchRecord(time: time, contact: sample.contact, touch: touch.touch, phase: .up, location: nil)
            )
        case .cancelled:
            return nil
        }
    }
}

extension Scene {
    /// What the scene is certain to hand the application for the next frame (``AppForecast``), as it stands now.
    public var appForecast: AppForecast {
        var forecast = AppForecast.none
        appForecast(into: &forecast)
        return forecast
    }

    /// ``appForecast`` written over `forecast`, whose arrays and map keep their room: made after every frame in filter
    /// mode, it then allocates nothing once a forecast has held as many holds and touches.
    public func appForecast(into forecast: inout AppForecast) {
        guard let settings = settings.app else {
            forecast = .none
            return
        }
        forecast.holds.removeAll(keepingCapacity: true)
        forecast.contactsDown.removeAll(keepingCapacity: true)
        forecast.continuing.removeAll(keepingCapacity: true)
        var room = self.settings.maximumContacts - contacts.count
        if settings.maximumContacts > 0 { room = Swift.min(room, settings.maximumContacts - app.touches.count) }
        if app.swallowing { room = 0 }
        var everywhere = false
        for index in slots.indices where !slots[index].control.toApp && isTouchable(index) {
            forecast.holds.append(Self.spared(slots[index].control.shape.boundingBox))
        }
        for index in recognizers.indices where isWatching(index) {
            // A swipe from an edge takes a sequence's first touch only on its strip (``takes(_:at:)``).
            if !recognizers[index].progress.isEngaged, case .swipe(let swipe) = recognizers[index].recognizer.kind,
                let edge = swipe.edge
            {
                forecast.holds.append(Self.spared(edge.strip))
                continue
            }
            guard let region = recognizers[index].region else {
                everywhere = true
                break
            }
            forecast.holds.append(Self.spared(region.boundingBox))
        }
        for (serial, touch) in app.touches where touch.phase == .shown {
            guard !recognizers.contains(where: { $0.progress.holds(serial) }) else { continue }
            forecast.continuing[touch.contact] = AppForecast.Continuing(touch: serial, location: touch.location)
        }
        var wake: Instant?
        if settings.swallowAfterIdle > 0 && !app.swallowing {
            wake = app.idleSince.advanced(by: settings.swallowAfterIdle)
        }
        forecast.contactsDown.append(contentsOf: contacts.keys)
        forecast.now = now
        forecast.validUntil = nextDeadline
        forecast.nextTouch = nextSerial
        forecast.newTouchRoom = Swift.max(0, room)
        forecast.newTouchesBefore = wake
        forecast.holdsEverywhere = everywhere
    }

    /// A shape's bounding box with a pixel to spare on each side: a point on a shape's edge is inside it.
    private static func spared(_ box: Rect) -> Rect {
        Rect(x: box.minX - 1, y: box.minY - 1, width: box.width + 2, height: box.height + 2)
    }
}
