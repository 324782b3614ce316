import Foundation
import Testing
import TouchModel

@testable import TouchDaemon

/// `touchd identify`'s report: which entry each touchscreen matches, its matrices, its siblings, the text and JSON
/// forms, and the `--touch` lines. Made from sysfs-like facts, no device needed.
@Suite("touchd identify")
struct IdentifyTests {
    static let configuration = """
        [output]
        width = 1000
        height = 800

        [filter]
        enabled = true

        [[device]]
        match_name = "Other*"

        [[device]]
        match_name = "ILITEK*"
        rotation = 90
        calibration = [1.0, 0.0, 0.01, 0.0, 1.0, 0.0]

        """

    static func device(_ node: InputNode, id: Int, touchscreen: Bool, matrix: [Double]? = nil) -> DeviceInfo {
        DeviceInfo(
            id: id, name: node.name, sysname: node.sysname, vendor: node.vendor, product: node.product,
            devnode: node.devnode, links: [], isTouchscreen: touchscreen, touchCount: touchscreen ? 10 : 0,
            libinputCalibration: matrix)
    }

    static func report(configuration text: String? = configuration) throws -> IdentifyReport {
        let configuration = try text.map { try EngineHarness.load($0) }
        let nodes = [InputNodeTests.keyboard, InputNodeTests.panel, InputNodeTests.mouse]
        return IdentifyReport(
            nodes: nodes,
            devices: [
                device(InputNodeTests.panel, id: 1, touchscreen: true, matrix: [0, -1, 1, 1, 0, 0]),
                device(InputNodeTests.mouse, id: 2, touchscreen: false),
            ],
            unreadable: ["event1": "Permission denied"], configuration: configuration)
    }

    @Test("the panel names the entry it matches, both matrices, its region and its sibling mouse")
    func text() throws {
        let text = try Self.report().text
        let expected = """
            event1  AT Translated Set 2 keyboard  0001:0001
              node: /dev/input/event1
              phys: isa0060/serio0/input0
              reports: keyboard, key, not opened by libinput (Permission denied)
            event3  ILITEK Multi-Touch  222a:0001
              node: /dev/input/event3
              phys: usb-0000:00:14.0-4/input0
              reports: touchscreen, multitouch (10 slots)
              libinput matrix: [0 -1 1; 1 0 0] (udev LIBINPUT_CALIBRATION_MATRIX)
              touchd: matches device[1] (match_name = "ILITEK*")
              touchd matrix: [0 -1 1; 1 0 0.01] (calibration [1 0 0.01; 0 1 0], rotation 90°), region 0,0 1000×800
              sibling: event4 ILITEK Multi-Touch Mouse (same USB device): a pointer: the compositor shows a cursor for it, and a panel that also reports touches through it clicks twice per tap; grabbed in filter mode (grab_siblings)
            event4  ILITEK Multi-Touch Mouse  222a:0001
              node: /dev/input/event4
              phys: usb-0000:00:14.0-4/input1
              reports: mouse

            """
        #expect(text == expected)
    }

    @Test("without a configuration: no entry, no grab, and a line that says so")
    func withoutConfiguration() throws {
        let text = try Self.report(configuration: nil).text
        #expect(!text.contains("touchd:"))
        #expect(!text.contains("grabbed in filter mode"))
        #expect(text.hasSuffix("no configuration read: no [[device]] column (--config names one)\n"))
    }

    @Test("a touchscreen no entry matches says why; grab_siblings = false grabs nothing")
    func ignored() throws {
        let text = try Self.report(
            configuration: """
                [output]
                width = 1000
                height = 800

                [filter]
                enabled = true
                grab_siblings = false

                [[device]]
                match_name = "Other*"

                """
        ).text
        #expect(text.contains("  touchd: not used: no [[device]] entry matches it\n"))
        #expect(!text.contains("grabbed in filter mode"))
    }

    @Test("--json: one valid object per node, with the entry, matrices and siblings")
    func json() throws {
        let lines = try Self.report().jsonLines
        #expect(lines.count == 3)
        let objects = try lines.map {
            try #require(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
        let panel = objects[1]
        #expect(panel["sysname"] as? String == "event3")
        #expect(panel["vendor"] as? String == "222a")
        #expect(panel["touchscreen"] as? Bool == true)
        #expect(panel["slots"] as? Int == 10)
        #expect(panel["entry"] as? Int == 1)
        #expect(panel["rotation"] as? Int == 90)
        #expect(panel["touchd_matrix"] as? [Double] == [0, -1, 1, 1, 0, 0.01])
        #expect(panel["libinput_matrix"] as? [Double] == [0, -1, 1, 1, 0, 0])
        let siblings = try #require(panel["siblings"] as? [[String: Any]])
        #expect(siblings.first?["sysname"] as? String == "event4")
        #expect(siblings.first?["reason"] as? String == "same USB device")
        #expect(siblings.first?["grabbed_in_filter_mode"] as? Bool == true)
        #expect(objects[0]["unreadable"] as? String == "Permission denied")
        #expect(objects[0]["siblings"] == nil)
    }

    @Test("--touch: the device a touch came from, raw and mapped through its entry")
    func touchLines() throws {
        let report = try Self.report()
        #expect(
            report.touchLine(sysname: "event3", name: "ILITEK Multi-Touch", x: 0.25, y: 0.5, json: false)
                == "touch: event3 ILITEK Multi-Touch: raw (0.2500, 0.5000) → output (500.0, 208.0), device[1]"
                + " (match_name = \"ILITEK*\")")
        let json = report.touchLine(sysname: "event3", name: "ILITEK Multi-Touch", x: 0.25, y: 0.5, json: true)
        let object = try #require(JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        #expect(object["type"] as? String == "touch")
        #expect(object["x"] as? Double == 500)
        #expect(object["y"] as? Double == 208)
        #expect(object["raw_x"] as? Double == 0.25)
        let unknown = report.touchLine(sysname: "event9", name: "Hot-plugged", x: 0.1, y: 0.2, json: false)
        #expect(unknown == "touch: event9 Hot-plugged: raw (0.1000, 0.2000)")
    }

    @Test(
        "fixed decimals",
        arguments: [(0.25, 4, "0.2500"), (-0.00001, 4, "0.0000"), (-1.5, 1, "-1.5"), (208, 1, "208.0")])
    func fixed(value: Double, digits: Int, text: String) {
        #expect(IdentifyReport.fixed(value, digits: digits) == text)
    }

    @Test("the router and identify share one rule for which entry a device matches")
    func decision() throws {
        let configuration = try EngineHarness.load(Self.configuration)
        let panel = Self.device(InputNodeTests.panel, id: 1, touchscreen: true)
        #expect(
            TouchRouter.decide(panel, allowList: configuration.devices, ignoresVirtual: false) == .used(entry: 1))
        #expect(TouchRouter.decide(panel, allowList: [], ignoresVirtual: false) == .used(entry: nil))
        var virtual = panel
        virtual.isVirtual = true
        guard case .ignored = TouchRouter.decide(virtual, allowList: configuration.devices, ignoresVirtual: true) else {
            Issue.record("a virtual device is used under ignore_virtual")
            return
        }
    }

    @Test("[filter] grab_siblings is true unless the file says false")
    func grabSiblingsKey() throws {
        #expect(try EngineHarness.load(Self.configuration).filter.grabSiblings)
        let off = try EngineHarness.load(
            Self.configuration.replacingOccurrences(of: "enabled = true", with: "enabled = true\ngrab_siblings = false")
        )
        #expect(!off.filter.grabSiblings)
        #expect(Configuration.Filter().grabSiblings)
    }

    @Test("check says whether filter mode grabs the siblings")
    func checkSummary() throws {
        let on = try EngineHarness.load(Self.configuration)
        #expect(on.summary.contains { $0.contains("sibling pointer nodes grabbed too (grab_siblings") })
        let off = try EngineHarness.load(
            Self.configuration.replacingOccurrences(
                of: "enabled = true", with: "enabled = true\ngrab_siblings = false"))
        #expect(off.summary.contains { $0.contains("left to the compositor (grab_siblings = false)") })
    }
}
