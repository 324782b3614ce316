import TestKit
import Testing
import TouchModel

@testable import TouchDaemon

/// The input layer's pure half: which devices are used, how their contacts become frames, and what happens on
/// unplug and reload (fault-cases.md D3, D7, D8, D10, D11, D14).
struct TouchRouterTests {
    static let output = Configuration.Output(width: 1000, height: 500, rotation: .normal, calibration: nil)

    static func device(
        _ id: Int, name: String = "ILITEK ILITEK-TP", vendor: Int = 0x222a, product: Int = 0x0001,
        touch: Bool = true, links: [String] = []
    ) -> DeviceInfo {
        DeviceInfo(
            id: id, name: name, sysname: "event\(id)", vendor: vendor, product: product, widthMillimetres: 300,
            heightMillimetres: 150, devnode: "/dev/input/event\(id)", links: links, isTouchscreen: touch,
            touchCount: touch ? 10 : 0)
    }

    static func touch(
        _ kind: TouchEvent.Kind, device: Int = 1, slot: Int = 0, time: UInt64 = 1000, x: Double? = nil,
        y: Double? = nil
    ) -> InputEvent {
        .touch(TouchEvent(device: device, kind: kind, seatSlot: slot, slot: slot, time: time, x: x, y: y))
    }

    static func frames(_ notes: [TouchRouter.Note]) -> [Frame] {
        notes.compactMap {
            if case .frame(let frame, _) = $0 { frame } else { nil }
        }
    }

    @Test func touchscreensAreUsedAndOtherDevicesIgnored() {
        var router = TouchRouter(output: Self.output, allowList: [])
        #expect(router.handle(.deviceAdded(Self.device(1)), now: 0) == [.accepted(Self.device(1))])
        let keyboard = Self.device(2, name: "AT Translated Set 2 keyboard", touch: false)
        #expect(router.handle(.deviceAdded(keyboard), now: 0) == [.ignored(keyboard, reason: "not a touchscreen")])
        #expect(router.touchscreens == [Self.device(1)])
    }

    @Test func samplesWaitForTheFrameAndAreMappedOntoTheOutput() {
        var router = TouchRouter(output: Self.output, allowList: [])
        _ = router.handle(.deviceAdded(Self.device(1)), now: 0)
        #expect(router.handle(Self.touch(.down, slot: 0, x: 0.5, y: 0.5), now: 0).isEmpty)
        #expect(router.handle(Self.touch(.down, slot: 1, x: 0.1, y: 0.2), now: 0).isEmpty)
        let notes = router.handle(Self.touch(.frame, slot: -1, time: 1234), now: 0)
        #expect(
            Self.frames(notes) == [
                Frame(
                    time: Instant(microseconds: 1234),
                    samples: [.began(0, at: Point(x: 500, y: 250)), .began(1, at: Point(x: 100, y: 100))])
            ])
        #expect(router.activeContacts == [0, 1])
        _ = router.handle(Self.touch(.up, slot: 0), now: 0)
        let up = Self.frames(router.handle(Self.touch(.frame, slot: -1, time: 2000), now: 0))
        #expect(up == [Frame(time: Instant(microseconds: 2000), samples: [.ended(0)])])
        #expect(router.activeContacts == [1])
    }

    /// The router lends a device's array of samples to the frame that carries them and reuses it for the next batch:
    /// a frame that is kept must not change, and each batch holds only its own samples.
    @Test func aKeptFrameKeepsItsSamplesWhileTheNextBatchIsRead() {
        var router = TouchRouter(output: Self.output, allowList: [])
        _ = router.handle(.deviceAdded(Self.device(1)), now: 0)
        _ = router.handle(Self.touch(.down, slot: 0, x: 0.5, y: 0.5), now: 0)
        let first = Self.frames(router.handle(Self.touch(.frame), now: 0))
        _ = router.handle(Self.touch(.motion, slot: 0, x: 0.25, y: 0.5), now: 0)
        _ = router.handle(Self.touch(.down, slot: 1, x: 0.75, y: 0.5), now: 0)
        let second = Self.frames(router.handle(Self.touch(.frame, time: 2000), now: 0))
        // A frame with nothing since the last one is not passed on, and does not pass the last batch on again.
        #expect(Self.frames(router.handle(Self.touch(.frame, time: 3000), now: 0)).isEmpty)
        _ = router.handle(Self.touch(.up, slot: 0), now: 0)
        let third = Self.frames(router.handle(Self.touch(.frame, time: 4000), now: 0))
        #expect(first.map { $0.samples.map(\.phase) } == [[.began]])
        #expect(second.map { $0.samples.map(\.phase) } == [[.moved, .began]])
        #expect(second.map { $0.samples.map(\.contact) } == [[0, 1]])
        #expect(third.map { $0.samples.map(\.phase) } == [[.ended]])
        #expect(third.map { $0.samples.map(\.contact) } == [[0]])
    }

    @Test func anEmptyFrameIsNotPassedOn() {
        var router = TouchRouter(output: Self.output, allowList: [])
        _ = router.handle(.deviceAdded(Self.device(1)), now: 0)
        #expect(router.handle(Self.touch(.frame, slot: -1), now: 0).isEmpty)
    }

    /// D8: a single-touch device reports slot −1; the seat slot is the key.
    @Test func singleTouchDevicesAreKeyedBySeatSlot() {
        var router = TouchRouter(output: Self.output, allowList: [])
        _ = router.handle(.deviceAdded(Self.device(1)), now: 0)
        let down = InputEvent.touch(
            TouchEvent(device: 1, kind: .down, seatSlot: 3, slot: -1, time: 10, x: 0, y: 0))
        _ = router.handle(down, now: 0)
        let frames = Self.frames(router.handle(Self.touch(.frame, slot: -1, time: 10), now: 0))
        #expect(frames.first?.samples == [.began(3, at: Point(x: 0, y: 0))])
    }

    /// D11: positions beyond the device's range map outside the output, where they touch nothing; non-finite
    /// positions become samples the scene rejects with a diagnostic.
    @Test func outOfRangeAndNonFinitePositionsDoNotTrap() {
        var router = TouchRouter(output: Self.output, allowList: [])
        _ = router.handle(.deviceAdded(Self.device(1)), now: 0)
        _ = router.handle(Self.touch(.down, slot: 0, x: 7.5, y: -3), now: 0)
        _ = router.handle(Self.touch(.down, slot: 1, x: .infinity, y: .nan), now: 0)
        _ = router.handle(Self.touch(.down, slot: 2, x: 1e308, y: -1e308), now: 0)
        let samples = Self.frames(router.handle(Self.touch(.frame, slot: -1), now: 0)).first?.samples ?? []
        #expect(samples.count == 3)
        #expect(samples[0].location == Point(x: 7500, y: -1500))
        #expect(samples[1].location?.isFinite == false)
        #expect(samples[2].location?.isFinite == false)
    }

    /// D3: a device removed with contacts down cancels them, even if libinput sent no TOUCH_CANCEL first.
    @Test func unplugCancelsTheDevicesContacts() {
        var router = TouchRouter(output: Self.output, allowList: [])
        _ = router.handle(.deviceAdded(Self.device(1)), now: 0)
        _ = router.handle(.deviceAdded(Self.device(2)), now: 0)
        _ = router.handle(Self.touch(.down, device: 1, slot: 0, x: 0.5, y: 0.5), now: 0)
        _ = router.handle(Self.touch(.frame, device: 1, slot: -1), now: 0)
        _ = router.handle(Self.touch(.down, device: 2, slot: 1, x: 0.5, y: 0.5), now: 0)
        _ = router.handle(Self.touch(.frame, device: 2, slot: -1), now: 0)
        let notes = router.handle(.deviceRemoved(id: 1), now: 5000)
        #expect(
            notes == [
                .frame(
                    Frame(time: Instant(microseconds: 5000), samples: [.cancelled(0)]), device: Self.device(1).sysname),
                .removed(Self.device(1), wasUsed: true),
            ])
        #expect(router.activeContacts == [1])
        #expect(router.touchscreens == [Self.device(2)])
        // Removing it again, or an unknown device, is harmless.
        #expect(router.handle(.deviceRemoved(id: 1), now: 5000).isEmpty)
    }

    /// libinput's own TOUCH_CANCEL before DEVICE_REMOVED: the contact is cancelled once, not twice.
    @Test func libinputCancelThenRemovalCancelsOnce() {
        var router = TouchRouter(output: Self.output, allowList: [])
        _ = router.handle(.deviceAdded(Self.device(1)), now: 0)
        _ = router.handle(Self.touch(.down, slot: 0, x: 0.5, y: 0.5), now: 0)
        _ = router.handle(Self.touch(.frame, slot: -1), now: 0)
        _ = router.handle(Self.touch(.cancel, slot: 0), now: 0)
        let cancelled = Self.frames(router.handle(Self.touch(.frame, slot: -1, time: 3000), now: 0))
        #expect(cancelled.first?.samples == [.cancelled(0)])
        #expect(router.handle(.deviceRemoved(id: 1), now: 4000) == [.removed(Self.device(1), wasUsed: true)])
    }

    /// D14: the allow-list matches names and paths as globs, ids exactly, every given matcher at once.
    @Test(arguments: [
        (Configuration.DeviceMatch(name: "ILITEK*"), true),
        (Configuration.DeviceMatch(name: "eGalax*"), false),
        (Configuration.DeviceMatch(vendor: 0x222a, product: 0x0001), true),
        (Configuration.DeviceMatch(name: "ILITEK*", vendor: 0x0eef), false),
        (Configuration.DeviceMatch(path: "/dev/input/by-path/*-event"), true),
        (Configuration.DeviceMatch(path: "pci-0000:00:14.0-usb-0:1:1.0"), true),
        (Configuration.DeviceMatch(path: "/dev/input/event1"), true),
        (Configuration.DeviceMatch(path: "/dev/input/event2"), false),
    ])
    func allowList(match: Configuration.DeviceMatch, used: Bool) {
        var router = TouchRouter(output: Self.output, allowList: [match])
        let device = Self.device(
            1, links: ["/dev/input/by-path/pci-0000:00:14.0-usb-0:1:1.0-event", "pci-0000:00:14.0-usb-0:1:1.0"])
        let notes = router.handle(.deviceAdded(device), now: 0)
        #expect(notes == [used ? .accepted(device) : .ignored(device, reason: "no [[device]] entry matches it")])
        // Events of an ignored device never reach the scene.
        _ = router.handle(Self.touch(.down, slot: 0, x: 0.5, y: 0.5), now: 0)
        #expect(Self.frames(router.handle(Self.touch(.frame, slot: -1), now: 0)).isEmpty == !used)
    }

    /// Several touchscreens each cover their own part of the output.
    @Test func deviceRegionsSplitTheOutput() {
        let left = Configuration.DeviceMatch(name: "left", region: Rect(x: 0, y: 0, width: 500, height: 500))
        let right = Configuration.DeviceMatch(name: "right", region: Rect(x: 500, y: 0, width: 500, height: 500))
        var router = TouchRouter(output: Self.output, allowList: [left, right])
        _ = router.handle(.deviceAdded(Self.device(1, name: "left")), now: 0)
        _ = router.handle(.deviceAdded(Self.device(2, name: "right")), now: 0)
        _ = router.handle(Self.touch(.down, device: 2, slot: 0, x: 0.5, y: 0.5), now: 0)
        let frames = Self.frames(router.handle(Self.touch(.frame, device: 2, slot: -1), now: 0))
        #expect(frames.first?.samples == [.began(0, at: Point(x: 750, y: 250))])
    }

    /// A reload orphans the contacts that are down: the caller cancels them in the old scene, and the router drops
    /// their remaining events until they lift, so the new scene never sees a touch that began nowhere.
    @Test func reloadOrphansContactsUntilTheyLift() {
        var router = TouchRouter(output: Self.output, allowList: [])
        _ = router.handle(.deviceAdded(Self.device(1)), now: 0)
        _ = router.handle(Self.touch(.down, slot: 0, x: 0.5, y: 0.5), now: 0)
        _ = router.handle(Self.touch(.frame, slot: -1), now: 0)
        #expect(router.activeContacts == [0])
        #expect(router.reconfigure(output: Self.output, allowList: []).isEmpty)
        #expect(router.activeContacts.isEmpty)
        _ = router.handle(Self.touch(.motion, slot: 0, x: 0.6, y: 0.6), now: 0)
        _ = router.handle(Self.touch(.up, slot: 0), now: 0)
        #expect(router.handle(Self.touch(.frame, slot: -1), now: 0).isEmpty)
        #expect(router.droppedEvents == 2)
        // The slot is free again: a new touch in it reaches the scene.
        _ = router.handle(Self.touch(.down, slot: 0, x: 0.5, y: 0.5), now: 0)
        #expect(Self.frames(router.handle(Self.touch(.frame, slot: -1), now: 0)).count == 1)
    }

    /// P1: after a suspend the daemon orphans the contacts that were down (and cancels them in the scene); a finger
    /// that lifted while the system slept sends its lift after resume, and that lift must never reach the scene.
    @Test func contactsDownAtSuspendAreOrphanedUntilTheyLift() {
        var router = TouchRouter(output: Self.output, allowList: [])
        _ = router.handle(.deviceAdded(Self.device(1)), now: 0)
        _ = router.handle(Self.touch(.down, slot: 0, x: 0.5, y: 0.5), now: 0)
        _ = router.handle(Self.touch(.down, slot: 1, x: 0.2, y: 0.2), now: 0)
        _ = router.handle(Self.touch(.frame, slot: -1), now: 0)
        #expect(router.orphanActiveContacts() == [0, 1])
        #expect(router.activeContacts.isEmpty)
        #expect(router.orphanActiveContacts().isEmpty)
        _ = router.handle(Self.touch(.up, slot: 0), now: 0)
        _ = router.handle(Self.touch(.motion, slot: 1, x: 0.3, y: 0.3), now: 0)
        #expect(router.handle(Self.touch(.frame, slot: -1), now: 0).isEmpty)
        // A new touch in the lifted slot is a fresh contact.
        _ = router.handle(Self.touch(.down, slot: 0, x: 0.5, y: 0.5), now: 0)
        let frames = Self.frames(router.handle(Self.touch(.frame, slot: -1), now: 0))
        #expect(frames.first?.samples == [.began(0, at: Point(x: 500, y: 250))])
    }

    /// Each quarter turn as libinput's rotation matrices turn a normalised point, then onto the 1000×500 output.
    @Test(arguments: [
        (Configuration.Rotation.normal, Point(x: 250, y: 50)), (.right, Point(x: 900, y: 125)),
        (.inverted, Point(x: 750, y: 450)), (.left, Point(x: 100, y: 375)),
    ])
    func rotationTurnsThePointClockwise(_ rotation: Configuration.Rotation, _ expected: Point) {
        var output = Self.output
        output.rotation = rotation
        #expect(CoordinateMapper(output: output).map(x: 0.25, y: 0.1) == expected)
    }

    /// Filter mode forwards the application's touches in device coordinates: `unmap` must undo `map` exactly, for
    /// every rotation, a calibration matrix and a device region, or the twin's touches land elsewhere.
    @Test(arguments: Configuration.Rotation.allCases)
    func unmapUndoesMap(_ rotation: Configuration.Rotation) throws {
        var output = Self.output
        output.rotation = rotation
        output.calibration = [1.1, 0.05, -0.02, -0.03, 0.95, 0.04]
        var random = SeededGenerator(seed: 7)
        // The output's settings alone, and `[[device]]` entries with their own rotation, calibration and region (each
        // key replacing the output's on its own), as the router builds its mapper per device.
        var devices: [Configuration.DeviceMatch?] = [nil]
        for deviceRotation in Configuration.Rotation.allCases {
            devices.append(Configuration.DeviceMatch(name: "a", rotation: deviceRotation))
            devices.append(
                Configuration.DeviceMatch(
                    name: "b", region: Rect(x: 500, y: 0, width: 500, height: 500), rotation: deviceRotation,
                    calibration: [0.9, -0.1, 0.1, 0.2, 1.05, -0.05]))
        }
        devices.append(Configuration.DeviceMatch(name: "c", calibration: [-1, 0, 1, 0, 1, 0]))
        for region in [nil, Rect(x: 100, y: 50, width: 400, height: 300)] {
            devices.append(Configuration.DeviceMatch(name: "d", region: region))
        }
        for device in devices {
            let mapper = CoordinateMapper(output: output, device: device)
            #expect(mapper.rotation == device?.rotation ?? rotation)
            #expect(mapper.calibration == device?.calibration ?? output.calibration)
            for _ in 0..<200 {
                let x = Double.random(in: -0.1...1.1, using: &random)
                let y = Double.random(in: -0.1...1.1, using: &random)
                let point = try #require(mapper.map(x: x, y: y))
                let back = try #require(mapper.unmap(point))
                #expect(
                    abs(back.x - x) < 1e-9 && abs(back.y - y) < 1e-9,
                    "\(String(describing: device)) \(x),\(y) → \(back)")
                // The matrix check and the log print is the same transformation.
                let m = mapper.matrix
                let region = mapper.region
                let expected = Point(
                    x: region.minX + (m[0] * x + m[1] * y + m[2]) * region.width,
                    y: region.minY + (m[3] * x + m[4] * y + m[5]) * region.height)
                #expect(abs(expected.x - point.x) < 1e-9 && abs(expected.y - point.y) < 1e-9)
            }
        }
        // A matrix with no inverse forwards nothing rather than a wrong place.
        output.calibration = [1, 2, 0, 2, 4, 0]
        #expect(CoordinateMapper(output: output).unmap(Point(x: 10, y: 10)) == nil)
    }

    /// A `[[device]]` entry's rotation and calibration apply to the devices it matches only; the
    /// others keep `[output]`'s. A panel mounted upside down beside a normal one.
    @Test func perDeviceRotationAndCalibration() {
        var output = Self.output
        output.rotation = .right
        let allowList = [
            Configuration.DeviceMatch(
                name: "upside-down", region: Rect(x: 0, y: 0, width: 500, height: 500), rotation: .inverted),
            Configuration.DeviceMatch(name: "mirrored", calibration: [-1, 0, 1, 0, 1, 0]),
            Configuration.DeviceMatch(name: "*"),
        ]
        var router = TouchRouter(output: output, allowList: allowList)
        _ = router.handle(.deviceAdded(Self.device(1, name: "upside-down")), now: 0)
        _ = router.handle(.deviceAdded(Self.device(2, name: "mirrored")), now: 0)
        _ = router.handle(.deviceAdded(Self.device(3, name: "plain")), now: 0)
        var began: [Point] = []
        for device in 1...3 {
            _ = router.handle(Self.touch(.down, device: device, slot: device, x: 0.25, y: 0.1), now: 0)
            for frame in Self.frames(router.handle(Self.touch(.frame, device: device, slot: -1), now: 0)) {
                began += frame.samples.filter { $0.phase == .began }.compactMap(\.location)
            }
        }
        #expect(
            began == [
                // 180° on its region: (1 − 0.25, 1 − 0.1) of 500×500.
                Point(x: 375, y: 450),
                // Mirrored (x → 1 − x), then the output's 90°: (1 − y, x) = (0.9, 0.75) of 1000×500.
                Point(x: 900, y: 375),
                // The output's 90° alone: (1 − 0.1, 0.25).
                Point(x: 900, y: 125),
            ])
        #expect(router.mapper(for: 1)?.matrix == [-1, 0, 1, 0, -1, 1])
        #expect(router.mapper(for: 2)?.matrix == [0, -1, 1, -1, 0, 1])
        #expect(router.mapper(for: 3)?.matrix == Configuration.Rotation.right.matrix)
    }

    /// The combined matrix printed for a device: touchd's after libinput's own (udev's LIBINPUT_CALIBRATION_MATRIX).
    @Test func matricesComposeInOrderAndPrintReadably() {
        let udev: [Double] = [0, 1, 0, -1, 0, 1]  // libinput's 270° matrix
        let touchd = Configuration.Rotation.right.matrix  // 90° undoes it
        #expect(CoordinateMapper.compose(touchd, after: udev) == CoordinateMapper.identity)
        #expect(CoordinateMapper.describe([1, -0.0, 0, 0, 0.123456, -2]) == "[1 0 0; 0 0.1235 -2]")
        #expect(CoordinateMapper.describe([.nan, 0, 0, 0, 1, 0]) == "[? 0 0; 0 1 0]")
        #expect(CoordinateMapper.describe([]) == "[?]")
    }

    /// D5: lost events cancel the contacts of the device that lost them (of every device when unknown) and orphan
    /// them until they lift; the other device's contact goes on.
    @Test func lostEventsCancelAndOrphanTheDevicesContacts() {
        var router = TouchRouter(output: Self.output, allowList: [])
        _ = router.handle(.deviceAdded(Self.device(1)), now: 0)
        _ = router.handle(.deviceAdded(Self.device(2, name: "other")), now: 0)
        _ = router.handle(Self.touch(.down, device: 1, slot: 0, x: 0.5, y: 0.5), now: 0)
        _ = router.handle(Self.touch(.frame, device: 1, slot: -1), now: 0)
        _ = router.handle(Self.touch(.down, device: 2, slot: 1, x: 0.5, y: 0.5), now: 0)
        _ = router.handle(Self.touch(.frame, device: 2, slot: -1), now: 0)
        let lost = Self.frames(router.handle(.eventsLost(device: 1), now: 5))
        #expect(lost.map(\.samples) == [[.cancelled(0)]])
        #expect(router.activeContacts == [1])
        _ = router.handle(Self.touch(.up, device: 1, slot: 0), now: 6)
        #expect(router.handle(Self.touch(.frame, device: 1, slot: -1), now: 6).isEmpty)
        // Unknown device (live input): every contact still down.
        #expect(Self.frames(router.handle(.eventsLost(device: nil), now: 7)).map(\.samples) == [[.cancelled(1)]])
        #expect(router.activeContacts.isEmpty)
    }

    /// A uinput clone of the panel: its name and ids are the panel's, only its sysfs path and its
    /// `by-path` link (none: it is on no port) tell it apart.
    static let virtualReason = "a virtual input device, not a panel on a port ([input] ignore_virtual)"

    static func clone(_ id: Int) -> DeviceInfo {
        var device = Self.device(id)
        device.isVirtual = DeviceInfo.isVirtual(syspath: "/sys/devices/virtual/input/input\(id)/event\(id)")
        return device
    }

    @Test(
        "syspaths: under /sys/devices/virtual/ is virtual, a physical port is not",
        arguments: [
            ("/sys/devices/virtual/input/input42/event7", true),
            ("/sys/devices/virtual/misc/uinput", true),
            ("/sys/devices/pci0000:00/0000:00:14.0/usb1/1-1/1-1:1.0/0003:222A:0001.0001/input/input9/event5", false),
            ("/sys/devices/platform/soc/fe205000.i2c/i2c-1/1-0038/input/input3/event3", false),
            ("/sys/devices/virtualx/input/input1/event1", false),
        ])
    func virtualSyspaths(_ syspath: String, _ isVirtual: Bool) {
        #expect(DeviceInfo.isVirtual(syspath: syspath) == isVirtual)
    }

    @Test("[input] ignore_virtual: a virtual touchscreen is never used, even when an entry matches its name and ids")
    func ignoreVirtual() {
        let match = Configuration.DeviceMatch(name: "ILITEK*", vendor: 0x222a, product: 0x0001)
        var router = TouchRouter(output: Self.output, allowList: [match], ignoresVirtual: true)
        #expect(router.handle(.deviceAdded(Self.device(1)), now: 0) == [.accepted(Self.device(1))])
        #expect(
            router.handle(.deviceAdded(Self.clone(2)), now: 0) == [.ignored(Self.clone(2), reason: Self.virtualReason)])
        #expect(router.touchscreens == [Self.device(1)])
        // Its touches go nowhere.
        _ = router.handle(Self.touch(.down, device: 2, slot: 0, x: 0.5, y: 0.5), now: 0)
        #expect(router.handle(Self.touch(.frame, device: 2, slot: -1), now: 0).isEmpty)

        // Off (the default, which the VM tests' uinput panels need): used like any touchscreen.
        var permissive = TouchRouter(output: Self.output, allowList: [match])
        #expect(permissive.handle(.deviceAdded(Self.clone(2)), now: 0) == [.accepted(Self.clone(2))])

        // A reload that turns it on lets the clone go.
        let notes = permissive.reconfigure(output: Self.output, allowList: [match], ignoresVirtual: true)
        #expect(notes == [.ignored(Self.clone(2), reason: Self.virtualReason)])
        #expect(permissive.touchscreens.isEmpty)
    }

    @Test("ignore_virtual is read from [input], defaults to false, and reaches the engine's router")
    func ignoreVirtualKey() throws {
        let text = EngineHarness.configuration()
        #expect(try EngineHarness.load(text).ignoreVirtual == false)
        let on = text.replacingOccurrences(of: "[tracking]", with: "[input]\nignore_virtual = true\n\n[tracking]")
        #expect(try EngineHarness.load(on).ignoreVirtual == true)
        var driver = try EngineHarness.Driver(on)
        _ = driver.engine.handle([.deviceAdded(Self.clone(2))], now: driver.now)
        #expect(driver.engine.router.touchscreens.isEmpty)
        _ = driver.engine.handle([.deviceAdded(Self.device(1))], now: driver.now)
        #expect(driver.engine.router.touchscreens.map(\.id) == [1])
    }

    @Test func reloadReportsDevicesWhoseUseChanged() {
        var router = TouchRouter(output: Self.output, allowList: [])
        _ = router.handle(.deviceAdded(Self.device(1)), now: 0)
        _ = router.handle(.deviceAdded(Self.device(2, name: "eGalax")), now: 0)
        let notes = router.reconfigure(output: Self.output, allowList: [Configuration.DeviceMatch(name: "eGalax")])
        #expect(notes == [.ignored(Self.device(1), reason: "no [[device]] entry matches it")])
        #expect(router.touchscreens == [Self.device(2, name: "eGalax")])
    }
}
