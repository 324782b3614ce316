import Foundation
import FoundationXML
import Glibc
import Testing
import TouchModel

@testable import TouchDaemon

/// `touchd render` draws what runs, checked on the SVG's structure (parsed as XML): gesture regions as
/// the scene computes them, on the screens where they are live; label boxes that never overlap; a transparent
/// background or an embedded screenshot; one file per screen.
@Suite("touchd render: what it draws")
struct RenderLayoutTests {
    /// An SVG element: its name and attributes, in document order.
    struct Element {
        var name: String
        var attributes: [String: String]
        func number(_ key: String) -> Double? { attributes[key].flatMap(Double.init) }
    }

    /// Parses `svg` as XML; records an issue when it is not well-formed.
    static func elements(_ svg: String, sourceLocation: SourceLocation = #_sourceLocation) -> [Element] {
        final class Collector: NSObject, XMLParserDelegate {
            var elements: [Element] = []
            func parser(
                _ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                attributes: [String: String] = [:]
            ) {
                elements.append(Element(name: name, attributes: attributes))
            }
        }
        let parser = XMLParser(data: Data(svg.utf8))
        let collector = Collector()
        parser.delegate = collector
        #expect(
            parser.parse(), "not well-formed XML: \(String(describing: parser.parserError))",
            sourceLocation: sourceLocation)
        return collector.elements
    }

    static func labelBoxes(_ elements: [Element]) -> [Rect] {
        elements.filter { $0.name == "rect" && $0.attributes["class"] == "label-box" }.compactMap { element in
            guard let x = element.number("x"), let y = element.number("y"), let width = element.number("width"),
                let height = element.number("height")
            else { return nil }
            return Rect(x: x, y: y, width: width, height: height)
        }
    }

    /// Every pair of boxes apart, every box inside the output.
    static func expectApart(_ boxes: [Rect], in bounds: Rect, sourceLocation: SourceLocation = #_sourceLocation) {
        for (index, box) in boxes.enumerated() {
            #expect(
                box.minX >= bounds.minX && box.minY >= bounds.minY && box.maxX <= bounds.maxX + 1e-9
                    && box.maxY <= bounds.maxY + 1e-9, "\(box) outside \(bounds)", sourceLocation: sourceLocation)
            for other in boxes[(index + 1)...] {
                #expect(!LabelPlacer.overlap(box, other), "\(box) overlaps \(other)", sourceLocation: sourceLocation)
            }
        }
    }

    static func svg(_ configuration: Configuration, screen: String?, background: BackgroundImage? = nil) -> String {
        LayoutSVG(configuration: configuration, screen: screen, background: background).draw().svg
    }

    /// A portrait ticket machine with three screens, crowded buttons, a gesture on a group (an edge swipe), one on a
    /// control and one everywhere.
    static let ticketMachine = """
        [output]
        width = 1080
        height = 1920

        [targets.kiosk]
        socket = "/run/kiosk/touch.sock"
        responds_to = ["back", "zoom", "admin"]

        [[screen]]
        id = "home"
        groups = ["tickets"]

        [[screen]]
        id = "pay"
        groups = ["payment"]

        [[screen]]
        id = "help"
        groups = ["helpers"]

        [[group]]
        id = "tickets"
        frame = { x = 0, y = 200, width = 1080, height = 1400 }

        [[group]]
        id = "payment"
        frame = { x = 0, y = 400, width = 1080, height = 1000 }

        [[group]]
        id = "helpers"

        [[control]]
        id = "single"
        kind = "button"
        parent = "tickets"
        frame = { x = 60, y = 300, width = 440, height = 200 }

        [[control]]
        id = "day"
        kind = "button"
        parent = "tickets"
        frame = { x = 60, y = 520, width = 440, height = 40 }

        [[control]]
        id = "week"
        kind = "button"
        parent = "tickets"
        frame = { x = 60, y = 565, width = 440, height = 40 }

        [[control]]
        id = "month"
        kind = "button"
        parent = "tickets"
        frame = { x = 60, y = 610, width = 440, height = 40 }

        [[control]]
        id = "card"
        kind = "button"
        parent = "payment"
        frame = { x = 140, y = 600, width = 800, height = 300 }

        [[control]]
        id = "helpme"
        kind = "button"
        parent = "helpers"
        frame = { x = 340, y = 1700, width = 400, height = 150 }

        [[gesture]]
        id = "back"
        kind = "swipe"
        directions = ["right"]
        edge = "left"
        edge_margin = 40
        parent = "payment"
        actions = [{ events = ["recognized"], target = "kiosk", action = "back" }]

        [[gesture]]
        id = "zoom-card"
        kind = "pinch"
        control = "card"
        actions = [{ events = ["recognized"], target = "kiosk", action = "zoom" }]

        [[gesture]]
        id = "admin"
        kind = "long_press"
        fingers = 3
        frame = { x = 0, y = 0, width = 200, height = 200 }
        actions = [{ events = ["recognized"], target = "kiosk", action = "admin" }]

        """

    @Test(
        "a gesture on a control or group covers that region, an edge swipe its strip, on the screens where it is live")
    func gestureRegions() throws {
        let configuration = try EngineHarness.load(Self.ticketMachine)
        func gestures(_ screen: String) -> [String: Element] {
            let elements = Self.elements(Self.svg(configuration, screen: screen))
            return Dictionary(
                elements.compactMap { element in element.attributes["data-gesture"].map { ($0, element) } },
                uniquingKeysWith: { first, _ in first })
        }
        let home = gestures("home")
        let pay = gestures("pay")
        let help = gestures("help")
        // admin is in no group: live on every screen. back and zoom-card only where their group and control are.
        #expect(Set(home.keys) == ["admin"])
        #expect(Set(pay.keys) == ["admin", "back", "zoom-card"])
        #expect(Set(help.keys) == ["admin"])
        // zoom-card: the card's frame, not the whole output.
        let zoom = try #require(pay["zoom-card"])
        #expect(zoom.name == "rect")
        #expect(
            [zoom.number("x"), zoom.number("y"), zoom.number("width"), zoom.number("height")] == [140, 600, 800, 300])
        // back: the payment group's frame, clipped to the 40 px strip along the left edge.
        let back = try #require(pay["back"])
        #expect(
            [back.number("x"), back.number("y"), back.number("width"), back.number("height")] == [0, 400, 1080, 1000])
        #expect(back.attributes["clip-path"] == "url(#edge-0)")
        let elements = Self.elements(Self.svg(configuration, screen: "pay"))
        let clip = try #require(elements.firstIndex { $0.name == "clipPath" && $0.attributes["id"] == "edge-0" })
        let strip = elements[clip + 1]
        #expect(strip.name == "rect")
        #expect(
            [strip.number("x"), strip.number("y"), strip.number("width"), strip.number("height")] == [0, 0, 40, 1920])
    }

    @Test("no two label boxes overlap, nor the legend, on every screen of every example and a crowded layout")
    func labelsNeverOverlap() throws {
        var cases: [(Configuration, [String?])] = []
        for name in ["kiosk.toml", "filter-kiosk.toml"] {
            let path = TestSupport.packageRoot.appendingPathComponent("config/\(name)").path
            let configuration = try ConfigurationLoader.load(path: path).get()
            cases.append((configuration, configuration.screens.map(\.id)))
        }
        let ticket = try EngineHarness.load(Self.ticketMachine)
        cases.append((ticket, ticket.screens.map(\.id)))
        // 200 small buttons in a 20×10 grid on a small output: far more labels than room.
        var crowded = "[output]\nwidth = 800\nheight = 480\n"
        for index in 0..<200 {
            crowded += """
                [[control]]
                id = "button-number-\(index)"
                kind = "button"
                frame = { x = \(index % 20 * 40), y = \(index / 20 * 48), width = 36, height = 40 }

                """
        }
        let dense = try EngineHarness.load(crowded)
        cases.append((dense, [nil]))
        for (configuration, screens) in cases {
            for screen in screens {
                let drawn = LayoutSVG(configuration: configuration, screen: screen).draw()
                let boxes = Self.labelBoxes(Self.elements(drawn.svg))
                #expect(boxes.count >= 2)
                Self.expectApart(boxes, in: configuration.output.bounds)
                // Every label is either drawn or named as left out; the legend always is drawn.
                #expect(drawn.svg.contains("<g class=\"label\" id=\"legend\">"))
                if configuration.controls.count < 20 { #expect(drawn.omitted.isEmpty) }
            }
        }
        // The crowded one leaves some out, says which, and is the same every time.
        let first = LayoutSVG(configuration: dense, screen: nil).draw()
        #expect(!first.omitted.isEmpty)
        #expect(first.svg.contains("<desc>labels left out for lack of room: "))
        #expect(LayoutSVG(configuration: dense, screen: nil).draw().svg == first.svg)
    }

    @Test("the placer keeps random boxes apart, inside the picture, deterministically")
    func placerProperty() {
        let bounds = Rect(x: 0, y: 0, width: 1000, height: 600)
        func run() -> [Rect?] {
            var random = SplitMix(seed: 42)
            var placer = LabelPlacer(bounds: bounds, gap: 2, cellSize: 50)
            return (0..<300).map { _ in
                placer.place(
                    width: random.next(in: 10...300), height: random.next(in: 10...60),
                    preferred: Point(x: random.next(in: -100...1100), y: random.next(in: -100...700)))
            }
        }
        let placed = run()
        Self.expectApart(placed.compactMap { $0 }, in: bounds)
        #expect(placed.compactMap { $0 }.count > 20)
        #expect(run() == placed)
        var placer = LabelPlacer(bounds: bounds)
        #expect(placer.place(width: .nan, height: 10, preferred: Point(x: 0, y: 0)) == nil)
        #expect(placer.place(width: 10, height: -1, preferred: Point(x: 0, y: 0)) == nil)
    }

    /// A tiny deterministic generator for the placer's property test.
    struct SplitMix {
        var state: UInt64
        init(seed: UInt64) { state = seed }
        mutating func next(in range: ClosedRange<Double>) -> Double {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            z ^= z >> 31
            return range.lowerBound + Double(z >> 11) / Double(1 << 53) * (range.upperBound - range.lowerBound)
        }
    }

    @Test("the background is transparent unless a screenshot is given; a screenshot is embedded, never its path")
    func background() throws {
        let configuration = try EngineHarness.load(Self.ticketMachine)
        let plain = Self.elements(Self.svg(configuration, screen: "home"))
        let output = try #require(plain.first { $0.attributes["id"] == "output" })
        #expect(output.attributes["fill"] == "none")
        #expect(!plain.contains { $0.name == "image" })

        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        // A 1×1 PNG with a path full of characters that would break the SVG if they reached it.
        let png: [UInt8] = [
            0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52, 0, 0, 0, 1, 0, 0, 0, 1,
            8, 6, 0, 0, 0, 0x1F, 0x15, 0xC4, 0x89, 0, 0, 0, 13, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0xF8, 0x0F,
            0x00, 0x01, 0x01, 0x01, 0x00, 0x18, 0xDD, 0x8D, 0xB0, 0, 0, 0, 0, 0x49, 0x45, 0x4E, 0x44, 0xAE, 0x42, 0x60,
            0x82,
        ]
        let hostile = directory.appendingPathComponent("shot\"><script>x&amp;.png").path
        try Data(png).write(to: URL(fileURLWithPath: hostile))
        let run = try TouchdProcess.run([
            "render", "--config", TestSupport.kioskConfig, "--output", "-", "--background", hostile,
        ])
        #expect(run.status == 0)
        #expect(!run.standardOutput.contains("script") && !run.standardOutput.contains("shot"))
        let image = try #require(Self.elements(run.standardOutput).first { $0.name == "image" })
        #expect(image.attributes["xlink:href"] == "data:image/png;base64,\(Data(png).base64EncodedString())")
        #expect(image.attributes["preserveAspectRatio"] == "none")
        #expect(run.errorLines.contains("note: the background is 1×1, stretched onto the output (1920×1080)"))
    }

    @Test("a background that is not an image file is refused with a precise error and no output")
    func backgroundRefused() throws {
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        func render(_ background: String) throws -> TouchdProcess.Run {
            try TouchdProcess.run([
                "render", "--config", TestSupport.kioskConfig, "--output", "-", "--background", background,
            ])
        }
        let missing = directory.appendingPathComponent("missing.png").path
        let absent = try render(missing)
        #expect(absent.status == ExitStatus.noInput)
        #expect(absent.standardOutput == "")
        #expect(absent.errorLines == ["\(missing): error: cannot open the background: No such file or directory"])

        let text = directory.appendingPathComponent("notes.png").path
        try Data("<svg onload=alert(1)>".utf8).write(to: URL(fileURLWithPath: text))
        let notImage = try render(text)
        #expect(notImage.status == ExitStatus.data)
        #expect(
            notImage.errorLines == [
                "\(text): error: the background is not a PNG, JPEG, GIF or WebP image (by its first bytes)"
            ])

        // A FIFO would block a plain open; it is refused at once.
        let fifo = directory.appendingPathComponent("fifo").path
        #expect(mkfifo(fifo, 0o600) == 0)
        let pipe = try render(fifo)
        #expect(pipe.status == ExitStatus.data)
        #expect(pipe.errorLines == ["\(fifo): error: the background is a FIFO, not an image file"])

        let big = directory.appendingPathComponent("big.png").path
        #expect(FileManager.default.createFile(atPath: big, contents: nil))
        #expect(truncate(big, off_t(BackgroundImage.maximumBytes + 1)) == 0)  // sparse: no 32 MiB written
        let tooBig = try render(big)
        #expect(tooBig.status == ExitStatus.data)
        #expect(tooBig.standardError.contains("at most 33554432 (32 MiB) are embedded"))

        #expect(
            try render(directory.path).errorLines == [
                "\(directory.path): error: the background is a directory, not an image file"
            ])
    }

    @Test("--screen all writes one file per screen, named FILE-ID.svg; with - it is refused before anything is written")
    func everyScreen() throws {
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("layout.svg").path
        let run = try TouchdProcess.run([
            "render", "--config", TestSupport.kioskConfig, "--output", path, "--screen", "all",
        ])
        #expect(run.status == 0)
        let files = ["checkout", "attract"].map { directory.appendingPathComponent("layout-\($0).svg").path }
        #expect(run.standardOutput == "wrote \(files[0]): screen checkout\nwrote \(files[1]): screen attract\n")
        for (file, screen) in zip(files, ["checkout", "attract"]) {
            let svg = try String(contentsOfFile: file, encoding: .utf8)
            #expect(svg.contains("<title>touchd layout: screen \(screen)</title>"))
            _ = Self.elements(svg)
        }
        #expect(!FileManager.default.fileExists(atPath: path))

        let stdout = try TouchdProcess.run([
            "render", "--config", TestSupport.kioskConfig, "--output", "-", "--screen", "all",
        ])
        #expect(stdout.status == 64)
        #expect(stdout.standardOutput == "")
        #expect(stdout.standardError.contains("--screen all writes one file per screen"))

        #expect(Render.path("out/layout.svg", screen: "home") == "out/layout-home.svg")
        #expect(Render.path("a.b/layout", screen: "home") == "a.b/layout-home")
        #expect(Render.path(".svg", screen: "home") == ".svg-home")
    }

    /// Explore by touch's elements: drawn dotted on their own screen only, each with its activation point.
    @Test("elements are drawn on their screen with their activation points")
    func elements() throws {
        let path = TestSupport.packageRoot.appendingPathComponent("config/accessible-kiosk.toml").path
        let configuration = try ConfigurationLoader.load(path: path).get()
        for (screen, expected) in [("fares", ["single", "day"]), ("payment", ["card"])] {
            let drawn = Self.elements(Self.svg(configuration, screen: screen))
            let outlines = drawn.filter { $0.attributes["class"] == "element" }
            #expect(outlines.map { $0.attributes["data-element"] ?? "" } == expected)
            let points = drawn.filter { $0.attributes["class"] == "activation-point" }
            #expect(points.count == expected.count)
            if screen == "payment" {
                #expect(points.first?.number("cx") == 300 && points.first?.number("cy") == 275)
            }
            Self.expectApart(Self.labelBoxes(drawn), in: configuration.output.bounds)
        }
    }
}
