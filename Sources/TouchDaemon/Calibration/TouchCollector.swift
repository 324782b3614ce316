import TouchModel

/// Turns one panel's touch events into calibration touches: one finger goes down, may move, and lifts; its position
/// is the mean of every position it reported (a finger settles and rolls a little). A second finger while one is down,
/// a cancelled contact or a contact with no finite position gives no touch, and the installer touches the target
/// again. Pure.
struct TouchCollector: Hashable, Sendable {
    /// What one event did.
    enum Outcome: Hashable, Sendable {
        case none
        /// A finger went down (the screen may show that it was seen).
        case began
        /// The finger lifted: libinput's normalised position, averaged.
        case touched(Point)
        /// The contact is not usable (why); the same target is asked again.
        case discarded(String)
    }

    /// The panel's touchd device id.
    let device: Int
    private var contact: Int?
    private var sumX = 0.0
    private var sumY = 0.0
    private var samples = 0
    private var spoiled: String?
    /// Contacts down on the panel, the tracked one included.
    private var down: Set<Int> = []

    init(device: Int) { self.device = device }

    mutating func handle(_ event: TouchEvent) -> Outcome {
        guard event.device == device else { return .none }
        switch event.kind {
        case .frame:
            return .none
        case .down:
            down.insert(event.seatSlot)
            guard contact == nil else {
                spoiled = "two fingers were down: touch with one finger"
                return .none
            }
            guard down.count == 1 else { return .none }
            contact = event.seatSlot
            (sumX, sumY, samples, spoiled) = (0, 0, 0, nil)
            add(event)
            return .began
        case .motion:
            if event.seatSlot == contact { add(event) }
            return .none
        case .up, .cancel:
            down.remove(event.seatSlot)
            guard event.seatSlot == contact else { return .none }
            contact = nil
            if event.kind == .cancel { return .discarded("the touch was cancelled") }
            if let spoiled { return .discarded(spoiled) }
            guard samples > 0 else { return .discarded("the panel reported no position for the touch") }
            let point = Point(x: sumX / Double(samples), y: sumY / Double(samples))
            return point.isFinite ? .touched(point) : .discarded("the panel reported no finite position")
        }
    }

    private mutating func add(_ event: TouchEvent) {
        guard let x = event.x, let y = event.y, x.isFinite, y.isFinite else { return }
        sumX += x
        sumY += y
        samples += 1
    }
}
