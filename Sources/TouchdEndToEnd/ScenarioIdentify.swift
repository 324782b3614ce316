import Foundation
import Glibc

/// `touchd identify` and filter mode's sibling grab (`touchd-e2e --identify`), on a panel made as a real USB panel
/// shows itself: through uhid, the kernel's HID drivers make a touchscreen (hid-multitouch) and, beside it, a mouse
/// (hid-generic) of the same make. On real hardware the two are interfaces of one USB device; uhid cannot make a USB
/// device, so here they are two HID devices whose `phys` says they share a USB port (`…-4/input0`, `…-4/input1`),
/// which is how identify ties them together when sysfs does not. A second panel (uinput) is there to tell apart.
///
/// Checks: identify lists the panel, its sibling mouse and the `[[device]]` entry each panel matches (text and
/// JSON); `--touch` names the panel each tap came from, with the position touchd maps it to; in filter mode with
/// `grab_siblings = true`, the mouse's events never reach `libinput debug-events`, and do again after a reload to
/// `false` and after touchd stops.
final class IdentifyRun {
    let options: Options
    let touchd: String
    private let scratch: ScratchDirectory
    private let notify: NotifyListener
    private var panel: UhidDevice?
    private var mouse: UhidDevice?
    private var second: VirtualTouchscreen?
    private var daemon: Daemon?
    private var events: Daemon?
    private var results: [(name: String, failure: String?)] = []
    private var notes: [String] = []

    static let panelName = "touchd-e2e identify panel"
    static let secondName = "touchd-e2e identify second panel"
    static let port = "usb-0000:00:14.0-4"

    init(options: Options, touchd: String) throws(DriverError) {
        self.options = options
        self.touchd = touchd
        scratch = try ScratchDirectory()
        notify = try NotifyListener(path: scratch.file("notify.sock"), verbose: options.verbose)
    }

    static func config(filter: Bool = false, grabSiblings: Bool = true) -> String {
        """
        # Written by touchd-e2e --identify.
        [output]
        width = 1000
        height = 800

        \(filter ? "[filter]\nenabled = true\ngrab_siblings = \(grabSiblings)\n" : "")
        [[device]]
        match_name = "\(panelName)"
        rotation = 90

        [[device]]
        match_name = "\(secondName)"
        region = { x = 500, y = 0, width = 500, height = 800 }

        """
    }

    func run() -> Int32 {
        let started = monotonicNow()
        do throws(Abort) {
            try setUp()
            try checkList()
            try checkTouch()
            try checkSiblingGrab()
        } catch {
            record("sequence", "stopped: \(error.reason)")
        }
        let failed = results.filter { $0.failure != nil }
        if !failed.isEmpty {
            daemon?.printTail(40)
            for line in events?.tail(40) ?? [] { Console.line("events| \(line)") }
        }
        events?.killAndReap()
        daemon?.killAndReap()
        second?.destroy()
        panel?.destroy()
        mouse?.destroy()
        notify.stop()
        for note in notes { Console.line("note: \(note)") }
        for (name, failure) in results {
            Console.line(failure.map { "FAIL \(name): \($0)" } ?? "PASS \(name)")
        }
        let seconds = Double(monotonicNow() - started) / 1_000_000
        Console.line("identify: \(results.count - failed.count)/\(results.count) checks passed in \(seconds) s")
        scratch.remove()
        return failed.isEmpty ? 0 : 1
    }

    private func record(_ name: String, _ failure: String?) {
        results.append((name, failure))
    }

    private func attempt<T>(_ body: () throws(DriverError) -> T) throws(Abort) -> T {
        do {
            return try body()
        } catch {
            throw Abort(error.description)
        }
    }

    // MARK: - Set-up

    private var panelSysname = "?"
    private var mouseSysname = "?"
    private var secondSysname = "?"

    private func setUp() throws(Abort) {
        let loaded = Tool.run(
            ["/usr/sbin/modprobe", "-a", "uhid", "hid-multitouch", "hid-generic"], verbose: options.verbose)
        guard loaded.succeeded else { throw Abort("modprobe: \(loaded.summary)") }
        panel = try attempt { () throws(DriverError) in
            try UhidDevice(
                name: Self.panelName, phys: Self.port + "/input0", descriptor: UhidDevice.touchscreenDescriptor)
        }
        mouse = try attempt { () throws(DriverError) in
            try UhidDevice(name: Self.panelName, phys: Self.port + "/input1", descriptor: UhidDevice.mouseDescriptor)
        }
        second = try attempt { () throws(DriverError) in
            try VirtualTouchscreen(name: Self.secondName, verbose: options.verbose)
        }
        _ = Tool.run([Tool.udevadm, "settle", "--timeout=10"], verbose: options.verbose)
        let found = poll(until: monotonicNow() + 10_000_000) { () -> (String, String)? in
            let nodes = Self.eventNodes()
            guard let touch = nodes.first(where: { $0.phys == Self.port + "/input0" }),
                let pointer = nodes.first(where: { $0.phys == Self.port + "/input1" })
            else { return nil }
            return (touch.sysname, pointer.sysname)
        }
        guard let found else { throw Abort("the kernel made no event nodes for the uhid panel: \(Self.eventNodes())") }
        (panelSysname, mouseSysname) = found
        secondSysname = second?.devnode.map { String($0.split(separator: "/").last ?? "") } ?? "?"
        try attempt { () throws(DriverError) in try writeFile(scratch.file("identify.toml"), Self.config()) }
        notes.append("uhid panel \(panelSysname), its mouse \(mouseSysname), second panel \(secondSysname)")
        sleep(microseconds: 300_000)
    }

    /// The event nodes sysfs lists: sysname, phys and name of each.
    static func eventNodes() -> [(sysname: String, phys: String, name: String)] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/sys/class/input")) ?? []
        return names.filter { $0.hasPrefix("event") }.sorted().map { sysname in
            func read(_ attribute: String) -> String {
                let text =
                    (try? String(contentsOfFile: "/sys/class/input/\(sysname)/device/\(attribute)", encoding: .utf8))
                return text?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
            }
            return (sysname, read("phys"), read("name"))
        }
    }

    // MARK: - The list

    private func identify(_ extra: [String]) throws(Abort) -> ToolResult {
        let result = Tool.run(
            [touchd, "identify", "--config", scratch.file("identify.toml")] + extra, limit: 30_000_000,
            verbose: options.verbose)
        for line in result.output { Console.line("identify| \(line)") }
        return result
    }

    private func checkList() throws(Abort) {
        let text = try identify([])
        var failures: [String] = []
        if !text.succeeded { failures.append("exit: \(text.summary)") }
        let lines = text.output
        func block(_ sysname: String) -> [String] {
            guard let start = lines.firstIndex(where: { $0.hasPrefix(sysname + "  ") }) else { return [] }
            let rest = lines[(start + 1)...]
            return [lines[start]] + rest.prefix { $0.hasPrefix("  ") }
        }
        let panelBlock = block(panelSysname)
        if panelBlock.isEmpty { failures.append("no block for the panel \(panelSysname)") }
        if !panelBlock.contains(where: { $0.contains("reports:") && $0.contains("touchscreen") }) {
            failures.append("the panel is not reported as a touchscreen")
        }
        if !panelBlock.contains(where: { $0.contains("matches device[0]") }) {
            failures.append("the panel does not name device[0]")
        }
        if !panelBlock.contains(where: { $0.contains("touchd matrix: [0 -1 1; 1 0 0]") }) {
            failures.append("the panel's matrix is not rotation 90's")
        }
        if !panelBlock.contains(where: {
            $0.hasPrefix("  sibling: \(mouseSysname) ") && $0.contains("a pointer")
        }) {
            failures.append("the panel's sibling mouse \(mouseSysname) is not listed")
        }
        let secondBlock = block(secondSysname)
        if !secondBlock.contains(where: { $0.contains("matches device[1]") }) {
            failures.append("the second panel does not name device[1]")
        }
        if secondBlock.contains(where: { $0.hasPrefix("  sibling:") }) {
            failures.append("the second panel has a sibling")
        }
        if !block(mouseSysname).contains(where: { $0.contains("reports:") && $0.contains("mouse") }) {
            failures.append("the mouse node is not reported as a mouse")
        }
        record(
            "identify lists the panel, its sibling mouse and the [[device]] entry each panel matches",
            failures.isEmpty ? nil : failures.joined(separator: "; "))

        let json = try identify(["--json"])
        var jsonFailures: [String] = []
        if !json.succeeded { jsonFailures.append("exit: \(json.summary)") }
        let panelLine = json.output.first { $0.contains("\"sysname\":\"\(panelSysname)\"") } ?? ""
        for expected in [
            "\"type\":\"node\"", "\"touchscreen\":true", "\"used\":true", "\"entry\":0",
            "\"siblings\":[{\"sysname\":\"\(mouseSysname)\"", "\"pointer\":true",
        ] where !panelLine.contains(expected) {
            jsonFailures.append("the panel's line lacks \(expected)")
        }
        for line in json.output where (try? JSONSerialization.jsonObject(with: Data(line.utf8))) == nil {
            jsonFailures.append("not JSON: \(line)")
        }
        record(
            "identify --json: one valid object per node, the panel's entry and sibling",
            jsonFailures.isEmpty ? nil : jsonFailures.joined(separator: "; "))
    }

    // MARK: - --touch

    private func checkTouch() throws(Abort) {
        let process = try attempt { () throws(DriverError) in
            try Daemon(
                executable: touchd,
                arguments: [
                    "identify", "--config", scratch.file("identify.toml"), "--touch", "--count", "2", "--timeout",
                    "20",
                ],
                environment: [:], removing: Scenario.scrubbedEnvironment,
                echoPrefix: options.verbose ? "identify| " : nil, published: false)
        }
        defer { process.killAndReap() }
        let waiting = poll(until: monotonicNow() + 15_000_000) {
            process.output.first(from: 0) { $0.hasPrefix("waiting for") }
        }
        guard waiting != nil else {
            record("identify --touch names the panel each tap came from", "it never said it waits: \(process.tail(10))")
            return
        }
        sleep(microseconds: 300_000)
        // The uhid panel at 25 % across and 50 % down; rotation 90 puts it at (500, 200) of the 1000×800 output.
        try attempt { () throws(DriverError) in try panel?.tap(x: 1024, y: 2048) }
        sleep(microseconds: 200_000)
        try attempt { () throws(DriverError) in
            _ = try second?.write([.down(slot: 0, x: 250, y: 500)])
            _ = try second?.write([.up(slot: 0)])
        }
        let status = process.waitForExit(until: monotonicNow() + 10_000_000)
        process.waitForOutputEnd(until: monotonicNow() + 2_000_000)
        let touches = process.output.all.filter { $0.hasPrefix("touch: ") }
        for line in process.output.all { Console.line("identify-touch| \(line)") }
        var failures: [String] = []
        if status != .exited(0) { failures.append("exit: \(status?.description ?? "still running")") }
        if touches.count != 2 { failures.append("\(touches.count) touch lines, not 2") }
        if let first = touches.first {
            if !first.hasPrefix("touch: \(panelSysname) \(Self.panelName): raw (0.25") {
                failures.append("the first tap is not the uhid panel's at 0.25: \(first)")
            }
            if !first.contains("→ output (500.0, 200.0)") || !first.contains("device[0]") {
                failures.append("the first tap is not mapped to (500, 200) through device[0]: \(first)")
            }
        }
        if touches.count > 1 {
            if !touches[1].hasPrefix("touch: \(secondSysname) \(Self.secondName): raw")
                || !touches[1].contains("device[1]")
            {
                failures.append("the second tap is not the second panel's through device[1]: \(touches[1])")
            }
        }
        record(
            "identify --touch names the panel each tap came from, raw and mapped",
            failures.isEmpty ? nil : failures.joined(separator: "; "))
    }

    // MARK: - Filter mode's sibling grab

    /// debug-events' POINTER_MOTION lines from the mouse since `cursor`, waiting at most `within`.
    private func mouseMotion(from cursor: Int, within: Microseconds) -> Int {
        let found = poll(until: monotonicNow() + within) { () -> Int? in
            let count =
                events?.output.since(cursor).filter { line in
                    line.contains("POINTER_MOTION")
                        && line.drop { $0 == "-" || $0 == " " }.hasPrefix(mouseSysname + " ")
                }.count ?? 0
            return count > 0 ? count : nil
        }
        return found ?? 0
    }

    private func moveMouse() throws(Abort) {
        try attempt { () throws(DriverError) in
            for _ in 0..<3 {
                try mouse?.send([2, 0, 5, 5])
                sleep(microseconds: 20_000)
            }
        }
    }

    private func reload(_ text: String) throws(Abort) {
        let cursor = notify.inbox.count
        try attempt { () throws(DriverError) in try writeFile(scratch.file("identify.toml"), text) }
        daemon?.send(SIGHUP)
        let done = poll(until: monotonicNow() + 10_000_000) {
            notify.inbox.first(from: cursor) { $0.value("READY") == "1" }
        }
        guard done != nil else { throw Abort("the reload did not finish: \(daemon?.tail(10) ?? [])") }
        sleep(microseconds: 300_000)
    }

    private func checkSiblingGrab() throws(Abort) {
        events = try attempt { () throws(DriverError) in
            try Daemon(
                executable: "/usr/bin/stdbuf", arguments: ["-oL", "/usr/bin/libinput", "debug-events"],
                environment: [:], removing: Scenario.scrubbedEnvironment,
                echoPrefix: options.verbose ? "events| " : nil, published: false)
        }
        _ = poll(until: monotonicNow() + 10_000_000) {
            events?.output.first(from: 0) { $0.contains(mouseSysname + " ") && $0.contains("DEVICE_ADDED") }
        }
        sleep(microseconds: 300_000)
        var cursor = events?.output.count ?? 0
        try moveMouse()
        let before = mouseMotion(from: cursor, within: 3_000_000)
        record(
            "without touchd the sibling mouse's motion reaches debug-events (the control case)",
            before > 0 ? nil : "no POINTER_MOTION from \(mouseSysname)")

        try attempt { () throws(DriverError) in
            try writeFile(scratch.file("identify.toml"), Self.config(filter: true, grabSiblings: true))
        }
        let notifyCursor = notify.inbox.count
        daemon = try attempt { () throws(DriverError) in
            try Daemon(
                executable: touchd, arguments: ["run", "--config", scratch.file("identify.toml")],
                environment: ["NOTIFY_SOCKET": notify.path], removing: Scenario.scrubbedEnvironment,
                echoPrefix: options.verbose ? "touchd| " : nil)
        }
        currentDaemon.withLock { $0 = daemon }
        let filtering = poll(until: monotonicNow() + Limits.readiness) {
            notify.inbox.first(from: notifyCursor) { $0.value("STATUS")?.contains("filtering 2") == true }
        }
        guard filtering != nil else { throw Abort("touchd did not report 'filtering 2': \(daemon?.tail(20) ?? [])") }
        let logged = poll(until: monotonicNow() + 5_000_000) {
            daemon?.output.first(from: 0) { $0.contains("sibling node grabbed") && $0.contains(mouseSysname) }
        }
        if let logged { Console.line("touchd| \(logged.element)") }
        sleep(microseconds: 300_000)
        cursor = events?.output.count ?? 0
        try moveMouse()
        let grabbed = mouseMotion(from: cursor, within: 1_500_000)
        var failures: [String] = []
        if logged == nil { failures.append("touchd did not log the sibling's grab") }
        if grabbed > 0 { failures.append("\(grabbed) POINTER_MOTION lines from \(mouseSysname) reached debug-events") }
        record(
            "filter mode with grab_siblings = true: the sibling mouse's motion never reaches debug-events",
            failures.isEmpty ? nil : failures.joined(separator: "; "))

        try reload(Self.config(filter: true, grabSiblings: false))
        cursor = events?.output.count ?? 0
        try moveMouse()
        let released = mouseMotion(from: cursor, within: 3_000_000)
        record(
            "a reload to grab_siblings = false hands the sibling back to the compositor",
            released > 0 ? nil : "no POINTER_MOTION from \(mouseSysname) after the reload")

        try reload(Self.config(filter: true, grabSiblings: true))
        cursor = events?.output.count ?? 0
        try moveMouse()
        let regrabbed = mouseMotion(from: cursor, within: 1_500_000)
        daemon?.send(SIGTERM)
        let stopped = daemon?.waitForExit(until: monotonicNow() + 5_000_000)
        sleep(microseconds: 300_000)
        cursor = events?.output.count ?? 0
        try moveMouse()
        let afterStop = mouseMotion(from: cursor, within: 3_000_000)
        var stopFailures: [String] = []
        if regrabbed > 0 { stopFailures.append("a reload back to true did not grab it again") }
        if stopped != .exited(0) { stopFailures.append("touchd's stop: \(stopped?.description ?? "still running")") }
        if afterStop == 0 { stopFailures.append("no POINTER_MOTION from \(mouseSysname) after touchd stopped") }
        record(
            "a reload back to true grabs the sibling again; touchd's stop releases it",
            stopFailures.isEmpty ? nil : stopFailures.joined(separator: "; "))
    }
}

/// A HID device made through `/dev/uhid`: the kernel's HID drivers bind it as they would a USB device of the same
/// report descriptor (bus USB).
final class UhidDevice {
    private let fd: Int32
    let name: String

    /// `struct uhid_event`'s size: a 4-byte type and the largest request, `uhid_create2_req` (276 bytes and a 4096-byte
    /// descriptor).
    static let eventSize = 4 + 276 + 4096
    static let create2: UInt32 = 11
    static let input2: UInt32 = 12
    static let destroy: UInt32 = 1

    init(name: String, phys: String, descriptor: [UInt8], vendor: UInt32 = 0x2575, product: UInt32 = 0x0401)
        throws(DriverError)
    {
        self.name = name
        fd = open("/dev/uhid", O_RDWR | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { throw DriverError("/dev/uhid: \(describe(errno: errno))") }
        var event = [UInt8](repeating: 0, count: Self.eventSize)
        Self.put(Self.create2, at: 0, in: &event)
        Self.put(string: name, at: 4, size: 128, in: &event)
        Self.put(string: phys, at: 4 + 128, size: 64, in: &event)
        Self.put(string: "E2E-0001", at: 4 + 192, size: 64, in: &event)
        Self.put16(UInt16(descriptor.count), at: 4 + 256, in: &event)
        Self.put16(3, at: 4 + 258, in: &event)  // BUS_USB
        Self.put(vendor, at: 4 + 260, in: &event)
        Self.put(product, at: 4 + 264, in: &event)
        Self.put(1, at: 4 + 268, in: &event)
        event.replaceSubrange((4 + 276)..<(4 + 276 + descriptor.count), with: descriptor)
        try write(event, "UHID_CREATE2")
    }

    /// Sends one input report (its first byte the report id).
    func send(_ report: [UInt8]) throws(DriverError) {
        var event = [UInt8](repeating: 0, count: Self.eventSize)
        Self.put(Self.input2, at: 0, in: &event)
        Self.put16(UInt16(report.count), at: 4, in: &event)
        event.replaceSubrange(6..<(6 + report.count), with: report)
        try write(event, "UHID_INPUT2")
    }

    /// A tap of one finger at (`x`, `y`) of 0…4095 on the touchscreen collection: down, then lift.
    func tap(x: Int, y: Int) throws(DriverError) {
        let (xl, xh, yl, yh) = (UInt8(x & 0xff), UInt8(x >> 8), UInt8(y & 0xff), UInt8(y >> 8))
        try send([1, 1, 0, xl, xh, yl, yh, 1])
        sleep(microseconds: 30_000)
        try send([1, 0, 0, xl, xh, yl, yh, 1])
    }

    func destroy() {
        var event = [UInt8](repeating: 0, count: Self.eventSize)
        Self.put(Self.destroy, at: 0, in: &event)
        try? write(event, "UHID_DESTROY")
        close(fd)
    }

    private func write(_ event: [UInt8], _ what: String) throws(DriverError) {
        let written = event.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        guard written == event.count else { throw DriverError("\(what): \(describe(errno: errno))") }
    }

    private static func put(_ value: UInt32, at offset: Int, in bytes: inout [UInt8]) {
        for index in 0..<4 { bytes[offset + index] = UInt8((value >> (8 * UInt32(index))) & 0xff) }
    }

    private static func put16(_ value: UInt16, at offset: Int, in bytes: inout [UInt8]) {
        bytes[offset] = UInt8(value & 0xff)
        bytes[offset + 1] = UInt8(value >> 8)
    }

    private static func put(string: String, at offset: Int, size: Int, in bytes: inout [UInt8]) {
        for (index, byte) in string.utf8.prefix(size - 1).enumerated() { bytes[offset + index] = byte }
    }

    /// A touchscreen of one finger per report: report 1 is tip switch, contact id, X and Y (0…4095, 16 bits each,
    /// 200 × 150 mm) and the contact count. No feature report: hid-multitouch would ask for it at probe, and uhid's
    /// reply would have to come from this driver.
    static let touchscreenDescriptor: [UInt8] = [
        0x05, 0x0D, 0x09, 0x04, 0xA1, 0x01,  // Digitizer, Touch Screen, Collection (Application)
        0x85, 0x01,  // Report ID 1
        0x09, 0x22, 0xA1, 0x02,  // Finger, Collection (Logical)
        0x09, 0x42, 0x15, 0x00, 0x25, 0x01, 0x75, 0x01, 0x95, 0x01, 0x81, 0x02,  // Tip Switch
        0x75, 0x07, 0x95, 0x01, 0x81, 0x03,  // padding
        0x09, 0x51, 0x25, 0x0F, 0x75, 0x08, 0x95, 0x01, 0x81, 0x02,  // Contact Identifier
        0x05, 0x01, 0x26, 0xFF, 0x0F, 0x75, 0x10, 0x95, 0x01,  // Generic Desktop, 0…4095, 16 bits
        0x55, 0x0E, 0x65, 0x11,  // unit exponent −2, centimetres
        0x35, 0x00, 0x46, 0xD0, 0x07, 0x09, 0x30, 0x81, 0x02,  // X, 20.00 cm
        0x46, 0xDC, 0x05, 0x09, 0x31, 0x81, 0x02,  // Y, 15.00 cm
        0xC0,  // End Collection
        0x05, 0x0D, 0x09, 0x54, 0x25, 0x0A, 0x75, 0x08, 0x95, 0x01, 0x81, 0x02,  // Contact Count
        0xC0,  // End Collection
    ]

    /// A three-button mouse: report 2 is the buttons, then relative X and Y.
    static let mouseDescriptor: [UInt8] = [
        0x05, 0x01, 0x09, 0x02, 0xA1, 0x01,  // Generic Desktop, Mouse, Collection (Application)
        0x85, 0x02,  // Report ID 2
        0x09, 0x01, 0xA1, 0x00,  // Pointer, Collection (Physical)
        0x05, 0x09, 0x19, 0x01, 0x29, 0x03, 0x15, 0x00, 0x25, 0x01, 0x95, 0x03, 0x75, 0x01, 0x81, 0x02,
        0x95, 0x01, 0x75, 0x05, 0x81, 0x03,
        0x05, 0x01, 0x09, 0x30, 0x09, 0x31, 0x15, 0x81, 0x25, 0x7F, 0x75, 0x08, 0x95, 0x02, 0x81, 0x06,
        0xC0, 0xC0,
    ]
}
