import Foundation
import Testing
import TouchModel

@testable import TouchDaemon

/// `touchd check`'s warnings about a layout that loads but cannot work as written (LayoutChecks): exit 0, a
/// `warning:` line with line:column for each.
@Suite("check: layout warnings")
struct LayoutWarningTests {
    @Test("check prints the layout warnings with line:column and still exits 0")
    func checkWarns() throws {
        let source = TestSupport.resourceDirectory("BrokenConfigs").appendingPathComponent("warn-layout.toml")
        // A copy with a known mode: a group-writable checkout would add the file-permission warning.
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("layout.toml").path
        try FileManager.default.copyItem(atPath: source.path, toPath: path)
        #expect(chmod(path, 0o644) == 0)
        let expected = TestSupport.expectations(in: [UInt8](try Data(contentsOf: source)))
            .map { $0.replacingOccurrences(of: "PATH", with: path, options: .anchored) }
        #expect(expected.count == 4)
        let run = try TouchdProcess.run(["check", "--config", path])
        #expect(run.status == 0)
        #expect(run.errorLines == expected)
        #expect(run.standardOutput.hasPrefix("\(path): ok\n"))
    }

    static func load(_ text: String) throws -> Configuration {
        try ConfigurationLoader.load(text: "[output]\nwidth = 1000\nheight = 1000\n" + text, path: "t.toml").get()
    }

    @Test("no warning without screens, for a group inside a listed one, or for one that holds a listed group")
    func unlistedGroups() throws {
        let none = try Self.load("[[group]]\nid = \"a\"\n")
        #expect(none.warnings.isEmpty)
        let nested = try Self.load(
            """
            [[screen]]
            id = "s"
            groups = ["inner"]
            [[group]]
            id = "outer"
            [[group]]
            id = "inner"
            parent = "outer"
            [[group]]
            id = "child"
            parent = "inner"
            [[group]]
            id = "lost"
            [[group]]
            id = "lost-child"
            parent = "lost"
            """)
        // outer only organises the listed inner; child is inside it; lost and its child make one line.
        #expect(nested.warnings.map(\.keyPath) == ["group[3]"])
    }

    @Test("a cover must hold the whole shape, be enabled, lie above and be live on the same screens")
    func hiddenControls() throws {
        func warned(_ text: String) throws -> [String] {
            try Self.load(text).warnings.map(\.message)
        }
        let below = "[[control]]\nid = \"below\"\nframe = { x = 100, y = 100, width = 100, height = 100 }\n"
        // Declared later at equal z: above.
        #expect(
            try warned(below + "[[control]]\nid = \"above\"\nframe = { x = 0, y = 0, width = 500, height = 500 }\n")
                .count == 1)
        // Declared earlier at equal z: below it.
        #expect(
            try warned("[[control]]\nid = \"under\"\nframe = { x = 0, y = 0, width = 500, height = 500 }\n" + below)
                .isEmpty)
        // A group clip around the cover that does not hold the control: touches outside the clip reach it.
        #expect(
            try warned(
                below
                    + """
                    [[group]]
                    id = "clip"
                    frame = { x = 0, y = 0, width = 150, height = 500 }
                    [[control]]
                    id = "above"
                    parent = "clip"
                    frame = { x = 0, y = 0, width = 500, height = 500 }
                    """
            ).isEmpty)
        // A concave polygon around it is not certain to cover it: no warning.
        #expect(
            try warned(
                below
                    + "[[control]]\nid = \"above\"\npolygon = [[0, 0], [500, 0], [500, 500], [150, 150], [0, 500]]\n"
            ).isEmpty)
        // A convex one is.
        #expect(
            try warned(below + "[[control]]\nid = \"above\"\npolygon = [[0, 0], [500, 0], [500, 500], [0, 500]]\n")
                .count == 1)
    }

    @Test(
        "covers: certain containment only",
        arguments: [
            (
                Shape.rect(Rect(x: 0, y: 0, width: 10, height: 10)),
                Shape.rect(Rect(x: 0, y: 0, width: 10, height: 10)), true
            ),
            (.rect(Rect(x: 0, y: 0, width: 10, height: 10)), .rect(Rect(x: 1, y: 1, width: 10, height: 5)), false),
            (
                .circle(Circle(center: Point(x: 0, y: 0), radius: 10)),
                .rect(Rect(x: -7, y: -7, width: 14, height: 14)), true
            ),
            (
                .circle(Circle(center: Point(x: 0, y: 0), radius: 10)),
                .rect(Rect(x: -8, y: -8, width: 16, height: 16)), false
            ),
            (
                .circle(Circle(center: Point(x: 0, y: 0), radius: 10)),
                .circle(Circle(center: Point(x: 5, y: 0), radius: 5)), true
            ),
            (
                .circle(Circle(center: Point(x: 0, y: 0), radius: 10)),
                .circle(Circle(center: Point(x: 5, y: 0), radius: 6)), false
            ),
            // A pentagram turns the same way at every vertex but is not convex.
            (
                .polygon(
                    Polygon(vertices: [
                        Point(x: 50, y: 0), Point(x: 80, y: 100), Point(x: 0, y: 40), Point(x: 100, y: 40),
                        Point(x: 20, y: 100),
                    ])), .rect(Rect(x: 45, y: 45, width: 10, height: 10)), false
            ),
            (
                .polygon(Polygon(vertices: [Point(x: 0, y: 0), Point(x: 100, y: 0), Point(x: 50, y: 100)])),
                .circle(Circle(center: Point(x: 50, y: 30), radius: 1)), false
            ),
        ])
    func covers(_ outer: Shape, _ inner: Shape, _ expected: Bool) {
        #expect(LayoutChecks.covers(outer, inner) == expected)
    }

    /// A group's `to_app = false` without filter mode is one mistake, warned about once, however
    /// many controls inherit it (it was once per control).
    @Test("a group's to_app that has no effect is warned about once, not once per control")
    func groupToAppWarnsOnce() throws {
        let configuration = try Self.load(
            """
            [[group]]
            id = "bar"
            to_app = false
            [[control]]
            id = "b1"
            parent = "bar"
            frame = { x = 0, y = 0, width = 10, height = 10 }
            [[control]]
            id = "b2"
            parent = "bar"
            frame = { x = 20, y = 0, width = 10, height = 10 }
            [[control]]
            id = "b3"
            parent = "bar"
            frame = { x = 40, y = 0, width = 10, height = 10 }
            """)
        #expect(configuration.warnings.map(\.keyPath) == ["group[0].to_app"])
    }

    /// `check` was silent where a layout cannot work as drawn. Each case is one file and the
    /// warnings it must give (their key paths, and words that must be in the message).
    @Test(
        "check warns about a partial overlap, a wake touch that idle cannot match, a spaced program, a shared socket dir",
        arguments: [
            (
                """
                [[control]]
                id = "pay"
                frame = { x = 0, y = 0, width = 200, height = 100 }
                [[control]]
                id = "cancel"
                frame = { x = 150, y = 0, width = 200, height = 100 }
                [[control]]
                id = "panel"
                frame = { x = 500, y = 500, width = 400, height = 400 }
                [[control]]
                id = "inside"
                frame = { x = 600, y = 600, width = 50, height = 50 }
                [[control]]
                id = "dial"
                circle = { cx = 700, cy = 100, r = 50 }
                z = 1
                [[control]]
                id = "under"
                frame = { x = 740, y = 60, width = 100, height = 80 }
                """,
                ["control[0]", "control[5]"],
                ["touches go to 'cancel' (same z, declared later)", "touches go to 'dial' (z 1 above 0)"]
            ),
            (
                "[filter]\nenabled = true\nswallow_after_idle_s = 120\n[idle]\ntimeout_s = 60\n"
                    + "actions = [{ events = [\"idle\"], action = \"attract\" }]\n",
                ["filter.swallow_after_idle_s"], ["120 s is longer than [idle] timeout_s (60 s)"]
            ),
            (
                "[filter]\nenabled = true\nswallow_after_idle_s = 30\n[idle]\ntimeout_s = 60\n",
                ["filter.swallow_after_idle_s"], ["30 s is shorter than [idle] timeout_s (60 s)", "tap is lost"]
            ),
            (
                "[filter]\nenabled = true\nswallow_after_idle_s = 60\n[idle]\ntimeout_s = 60\n", [], []
            ),
            (
                "[targets.attract]\nexec = [\"/usr/local/bin/attract start\", \"--loop\"]\nresponds_to = [\"a\"]\n",
                ["targets.attract.exec[0]"],
                [#"split the command into separate elements: exec = ["/usr/local/bin/attract", "start", "--loop"]"#]
            ),
            (
                "[control_socket]\nsocket = \"/tmp/touchd.sock\"\n",
                ["control_socket.socket"],
                [
                    "touchd run will not create its control socket here: /tmp is writable by group or others "
                        + "(mode 1777)",
                    #"socket = "/run/touchd/control.sock""#,
                ]
            ),
        ])
    func layoutThatCannotWorkAsDrawn(_ text: String, _ keyPaths: [String], _ words: [String]) throws {
        let configuration = try Self.load(text)
        #expect(configuration.warnings.map(\.keyPath) == keyPaths, "\(configuration.warnings)")
        let messages = configuration.warnings.map(\.message).joined(separator: "\n")
        for word in words {
            #expect(messages.contains(word), "\(messages)")
        }
    }
}
