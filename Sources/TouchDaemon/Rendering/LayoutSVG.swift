import TouchModel

/// Draws a configuration's layout as SVG in output pixels, so an integrator can lay it over a
/// screenshot of the UI: the output, groups (dashed), controls with kind, id and initial state,
/// each control's drag outset (the faint halo: while a finger is down, "inside" reaches that far),
/// and gesture regions (hatched) as the scene sees them: a gesture attached to a control or group covers that region
/// only, an edge swipe only its strip along the edge, and only on the screens where it is live.
///
/// The background is transparent unless a ``BackgroundImage`` is given. Labels sit on boxes placed by
/// ``LabelPlacer``: no two overlap, nor the legend.
struct LayoutSVG {
    let configuration: Configuration
    /// Only this screen's controls (and those in no screen); nil for every screen (a file without screens).
    var screen: String?
    /// A screenshot under the layout, stretched onto the output.
    var background: BackgroundImage? = nil

    private var width: Double { configuration.output.width }
    private var height: Double { configuration.output.height }
    /// Label size that stays readable from 800 px to 8K outputs.
    var fontSize: Double { Swift.max(12, Swift.min(width, height) / 50) }
    /// Inside a label's box, around its text.
    private var padding: Double { (fontSize / 4).rounded() }

    /// A label before placement: its lines (the first bold when `bold`), where it would like its box, and the point it
    /// is about (a leader line joins them when the box had to move away).
    struct Label {
        var lines: [String]
        var bold = false
        var color: String
        /// The preferred box's top-left corner.
        var preferred: Point
        var anchor: Point
        var name: String
    }

    /// The SVG text, and the labels that fitted nowhere (render notes them).
    func draw() -> (svg: String, omitted: [String]) {
        var svg = """
            <?xml version="1.0" encoding="UTF-8"?>
            <svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" \
            width="\(n(width))" height="\(n(height))" \
            viewBox="0 0 \(n(width)) \(n(height))" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" \
            font-size="\(n(fontSize))">
            <defs><pattern id="hatch" width="12" height="12" patternUnits="userSpaceOnUse" \
            patternTransform="rotate(45)"><line x1="0" y1="0" x2="0" y2="12" stroke="#8e44ad" stroke-width="4" \
            stroke-opacity="0.35"/></pattern><pattern id="touchd-only" width="16" height="16" \
            patternUnits="userSpaceOnUse"><path d="M0 0L16 16M16 0L0 16" stroke="#c0392b" stroke-width="2" \
            stroke-opacity="0.45"/></pattern></defs>
            <title>touchd layout\(screen.map { ": screen \(escape($0))" } ?? "")</title>

            """
        if let background {
            // Embedded: the path never reaches the SVG, only base64 (BackgroundImage).
            svg +=
                "<image id=\"background\" x=\"0\" y=\"0\" width=\"\(n(width))\" height=\"\(n(height))\" "
                + "preserveAspectRatio=\"none\" xlink:href=\"\(background.dataURI)\"/>\n"
        }
        // Transparent inside: only the output's outline, so the picture can lie over a screenshot.
        svg +=
            "<rect id=\"output\" x=\"0\" y=\"0\" width=\"\(n(width))\" height=\"\(n(height))\" fill=\"none\" "
            + "stroke=\"#222\" stroke-width=\"2\"/>\n"
        var labels: [Label] = []
        let groupScreens = screensByGroup()
        let shownGroups = Set(configuration.groups.map(\.id).filter { isShown(groupID: $0, groupScreens) })

        svg += "<g id=\"groups\">\n"
        for group in configuration.groups where shownGroups.contains(group.id) {
            guard let shape = group.shape else { continue }
            svg += path(
                shape, attributes: "fill=\"none\" stroke=\"#7f8c8d\" stroke-width=\"2\" stroke-dasharray=\"10 6\"")
            let box = shape.boundingBox
            let screens = groupScreens[group.id].map { " · screen \($0.joined(separator: ", "))" } ?? ""
            labels.append(
                Label(
                    lines: ["group \(group.id)\(screens)"], color: "#5d6d7e",
                    preferred: Point(x: box.minX + 4, y: box.minY + 4), anchor: Point(x: box.minX, y: box.minY),
                    name: "group \(group.id)"))
        }
        svg += "</g>\n<g id=\"outsets\">\n"
        let controls = configuration.controls.filter { isShown(control: $0, groupScreens, shownGroups) }
        for control in controls where control.dragOutset > 0 {
            svg += outset(control.shape, by: control.dragOutset)
        }
        svg += "</g>\n<g id=\"controls\">\n"
        // Bottom first, so that what lies on top is drawn on top.
        let stacked = controls.enumerated().sorted { ($0.element.z, $0.offset) < ($1.element.z, $1.offset) }
        for (_, control) in stacked {
            let color = self.color(control)
            let dash = control.isEnabled ? "" : " stroke-dasharray=\"6 4\""
            svg += path(
                control.shape,
                attributes:
                    "fill=\"\(color)\" fill-opacity=\"\(control.isEnabled ? "0.30" : "0.10")\" stroke=\"\(color)\" stroke-width=\"3\"\(dash)"
            )
            if filtering && !control.toApp {
                // Filter mode: touches that begin here never reach the application (docs/kiosk.md).
                svg += path(
                    control.shape, attributes: "class=\"to-app-false\" fill=\"url(#touchd-only)\" stroke=\"none\"")
            }
        }
        // Labels of the top-most controls first: they get the best places.
        for (_, control) in stacked.reversed() {
            let box = control.shape.boundingBox
            let center = Point(x: box.minX + box.width / 2, y: box.minY + box.height / 2)
            let lines = [control.id, details(control)]
            let size = labelSize(lines, bold: true)
            labels.append(
                Label(
                    lines: lines, bold: true, color: "#111",
                    preferred: Point(x: center.x - size.width / 2, y: center.y - size.height / 2), anchor: center,
                    name: control.id))
        }
        svg += "</g>\n<g id=\"gestures\">\n"
        for (index, gesture) in configuration.gestures.enumerated() where isLive(gesture, groupScreens, shownGroups) {
            let shape = region(of: gesture)
            var box = shape.boundingBox
            var clip = ""
            if let strip = edgeStrip(of: gesture) {
                svg +=
                    "<clipPath id=\"edge-\(index)\"><rect x=\"\(n(strip.minX))\" y=\"\(n(strip.minY))\" "
                    + "width=\"\(n(strip.width))\" height=\"\(n(strip.height))\"/></clipPath>\n"
                clip = " clip-path=\"url(#edge-\(index))\""
                box = intersection(box, strip) ?? strip
            }
            svg += path(
                shape,
                attributes:
                    "class=\"gesture\" data-gesture=\"\(escape(gesture.id))\" fill=\"url(#hatch)\" stroke=\"#8e44ad\" "
                    + "stroke-width=\"2\"\(clip)")
            let lines = [gestureSummary(gesture)]
            let size = labelSize(lines, bold: false)
            labels.append(
                Label(
                    lines: lines, color: "#6c3483",
                    preferred: Point(x: box.minX + 4, y: box.maxY - size.height - 4),
                    anchor: Point(x: box.minX + box.width / 2, y: box.minY + box.height / 2),
                    name: "gesture \(gesture.id)"))
        }
        svg += "</g>\n"
        let elements = configuration.elements.filter { element in
            screen == nil || element.screen == nil || element.screen == screen
        }
        if !elements.isEmpty {
            // Explore by touch: what the application draws, as declared, with where a double tap taps it.
            svg += "<g id=\"elements\">\n"
            for element in elements {
                svg += path(
                    element.shape,
                    attributes:
                        "class=\"element\" data-element=\"\(escape(element.id))\" fill=\"none\" stroke=\"#16a085\" "
                        + "stroke-width=\"3\" stroke-dasharray=\"2 5\"")
                let point = element.activationPoint
                svg +=
                    "<circle class=\"activation-point\" cx=\"\(n(point.x))\" cy=\"\(n(point.y))\" r=\"6\" "
                    + "fill=\"#16a085\"/>\n"
                let box = element.shape.boundingBox
                let lines = ["element \(element.id)", element.speech.label.map { "“\($0)”" } ?? element.role]
                labels.append(
                    Label(
                        lines: lines, color: "#0e6655", preferred: Point(x: box.minX + 4, y: box.minY + 4),
                        anchor: Point(x: box.minX, y: box.minY), name: "element \(element.id)"))
            }
            svg += "</g>\n"
        }
        // What the legend should hide least: the controls drawn, and the gestures' regions.
        var obstacles = controls.map(\.shape.boundingBox) + elements.map(\.shape.boundingBox)
        for gesture in configuration.gestures where isLive(gesture, groupScreens, shownGroups) && gesture.shape != nil {
            obstacles.append(region(of: gesture).boundingBox)
        }
        let placed = place(labels, avoiding: obstacles)
        svg += placed.svg
        svg += "</svg>\n"
        return (svg, placed.omitted)
    }

    // MARK: - Labels

    /// The legend's items, wrapped into lines that fit the output's width.
    private var legendLines: [String] {
        var items = [
            "\(n(width))×\(n(height))" + (screen.map { " · screen \($0)" } ?? ""), "halo: drag outset",
            "dashed outline: disabled", "hatched: gesture region",
        ]
        if filtering { items.append("red cross-hatch: never reaches the application (to_app = false)") }
        if !configuration.elements.isEmpty {
            items.append("dotted green: application element, dot: its activation point")
        }
        var lines: [String] = []
        let room = width - 16 - 2 * padding
        for item in items {
            if let last = lines.last, textWidth(last + " · " + item, bold: false) <= room {
                lines[lines.count - 1] = last + " · " + item
            } else {
                lines.append(item)
            }
        }
        return lines
    }

    /// The size of a label's box: the widest line (estimated generously; the text is fitted to it) and a line
    /// height per line, plus the padding.
    func labelSize(_ lines: [String], bold: Bool) -> (width: Double, height: Double) {
        let widest = lines.enumerated().map { textWidth($0.element, bold: bold && $0.offset == 0) }.max() ?? 0
        return (widest + 2 * padding, Double(lines.count) * lineHeight + 2 * padding)
    }

    private var lineHeight: Double { (fontSize * 1.25).rounded(.up) }

    /// An estimate of a line's width: DejaVu Sans averages about 0.6 em a character (bold 0.66). Each line is drawn
    /// with `textLength` set to this width, so the text fills exactly the box it was given whatever the font.
    private func textWidth(_ text: String, bold: Bool) -> Double {
        (Double(text.count) * fontSize * (bold ? 0.66 : 0.6)).rounded(.up)
    }

    /// Places the legend in the corner where it covers the least of `obstacles` (bottom-right, bottom-left,
    /// top-right, top-left on a tie), then every label in order, and draws them last, on top of everything.
    private func place(_ labels: [Label], avoiding obstacles: [Rect]) -> (svg: String, omitted: [String]) {
        var placer = LabelPlacer(bounds: configuration.output.bounds, gap: 2, cellSize: fontSize * 4)
        var svg = "<g id=\"labels\">\n"
        var omitted: [String] = []
        let legend = legendLines
        let legendSize = labelSize(legend, bold: false)
        let right = Swift.max(0, width - legendSize.width - 6)
        let bottom = Swift.max(0, height - legendSize.height - 6)
        let left = Swift.min(6, right)
        let top = Swift.min(6, bottom)
        let corners = [(right, bottom), (left, bottom), (right, top), (left, top)].map {
            Rect(x: $0.0, y: $0.1, width: legendSize.width, height: legendSize.height)
        }
        func covered(_ box: Rect) -> Double {
            obstacles.reduce(0) { sum, obstacle in
                sum + (intersection(box, obstacle).map { $0.width * $0.height } ?? 0)
            }
        }
        let legendBox = corners.min { covered($0) < covered($1) } ?? corners[0]
        if let box = placer.placeExactly(legendBox) {
            svg += draw(
                Label(lines: legend, color: "#444", preferred: box.origin, anchor: box.origin, name: "legend"), in: box,
                id: "legend")
        }
        for label in labels {
            let size = labelSize(label.lines, bold: label.bold)
            guard let box = placer.place(width: size.width, height: size.height, preferred: label.preferred) else {
                omitted.append(label.name)
                continue
            }
            // A label that had to move more than a line away points at what it names.
            let moved = abs(box.minX - label.preferred.x) + abs(box.minY - label.preferred.y)
            if moved > lineHeight * 1.5 {
                let from = Point(
                    x: Swift.min(Swift.max(label.anchor.x, box.minX), box.maxX),
                    y: Swift.min(Swift.max(label.anchor.y, box.minY), box.maxY))
                svg +=
                    "<line class=\"leader\" x1=\"\(n(from.x))\" y1=\"\(n(from.y))\" x2=\"\(n(label.anchor.x))\" "
                    + "y2=\"\(n(label.anchor.y))\" stroke=\"\(label.color)\" stroke-width=\"1\" stroke-opacity=\"0.7\"/>\n"
            }
            svg += draw(label, in: box, id: nil)
        }
        if !omitted.isEmpty {
            svg += "<desc>labels left out for lack of room: \(escape(omitted.joined(separator: ", ")))</desc>\n"
        }
        svg += "</g>\n"
        return (svg, omitted)
    }

    /// A label: its box (class `label-box`, what the tests check for overlaps), then each line fitted to the box.
    private func draw(_ label: Label, in box: Rect, id: String?) -> String {
        var svg =
            "<g class=\"label\"\(id.map { " id=\"\($0)\"" } ?? "")>"
            + "<rect class=\"label-box\" x=\"\(n(box.minX))\" y=\"\(n(box.minY))\" width=\"\(n(box.width))\" "
            + "height=\"\(n(box.height))\" rx=\"3\" fill=\"#ffffff\" fill-opacity=\"0.8\"/>"
            + "<text fill=\"\(label.color)\">"
        for (index, line) in label.lines.enumerated() {
            let bold = label.bold && index == 0
            let baseline = box.minY + padding + Double(index) * lineHeight + fontSize
            svg +=
                "<tspan x=\"\(n(box.minX + padding))\" y=\"\(n(baseline))\" "
                + "textLength=\"\(n(textWidth(line, bold: bold)))\" lengthAdjust=\"spacingAndGlyphs\""
                + (bold ? " font-weight=\"bold\"" : "") + ">\(escape(line))</tspan>"
        }
        return svg + "</text></g>\n"
    }

    // MARK: - Gestures

    /// The region whose touch-downs the recognizer sees, as the scene computes it: its own shape, else its control's
    /// or group's, else the whole output.
    private func region(of gesture: Configuration.Gesture) -> Shape {
        if let shape = gesture.shape { return shape }
        if let id = gesture.control, let control = configuration.controls.first(where: { $0.id == id }) {
            return control.shape
        }
        if let id = gesture.parent, let shape = configuration.groups.first(where: { $0.id == id })?.shape {
            return shape
        }
        return .rect(configuration.output.bounds)
    }

    /// An edge swipe's strip: where every finger must land (within `edge_margin` of that output edge).
    private func edgeStrip(of gesture: Configuration.Gesture) -> Rect? {
        guard case .swipe(let swipe) = gesture.kind, let edge = swipe.edge else { return nil }
        let margin = Swift.min(edge.margin, Swift.max(width, height))
        switch edge.side {
        case .left: return Rect(x: 0, y: 0, width: Swift.min(margin, width), height: height)
        case .right:
            return Rect(x: Swift.max(0, width - margin), y: 0, width: Swift.min(margin, width), height: height)
        case .top: return Rect(x: 0, y: 0, width: width, height: Swift.min(margin, height))
        case .bottom:
            return Rect(x: 0, y: Swift.max(0, height - margin), width: width, height: Swift.min(margin, height))
        }
    }

    /// Whether the recognizer watches on the screen drawn: a control's gesture where the control is, a group's where
    /// the group is, any other on every screen.
    private func isLive(
        _ gesture: Configuration.Gesture, _ groupScreens: [String: [String]], _ shownGroups: Set<String>
    ) -> Bool {
        guard screen != nil else { return true }
        if let id = gesture.control, let control = configuration.controls.first(where: { $0.id == id }) {
            return isShown(control: control, groupScreens, shownGroups)
        }
        if let parent = gesture.parent { return shownGroups.contains(parent) }
        return true
    }

    private func gestureSummary(_ gesture: Configuration.Gesture) -> String {
        var text =
            "gesture \(gesture.id): \(gesture.kind.name), \(gesture.fingers) finger\(gesture.fingers == 1 ? "" : "s")"
        if case .swipe(let swipe) = gesture.kind, let edge = swipe.edge { text += ", \(edge.side.rawValue) edge" }
        if let control = gesture.control {
            text += " · on \(control)"
            if configuration.controls.first(where: { $0.id == control })?.isEnabled == false {
                text += " (off while it is disabled)"
            }
        } else if let parent = gesture.parent {
            text += " · on group \(parent)"
        }
        return text
    }

    private func intersection(_ a: Rect, _ b: Rect) -> Rect? {
        let minX = Swift.max(a.minX, b.minX)
        let minY = Swift.max(a.minY, b.minY)
        let maxX = Swift.min(a.maxX, b.maxX)
        let maxY = Swift.min(a.maxY, b.maxY)
        guard maxX > minX, maxY > minY else { return nil }
        return Rect(x: minX, y: minY, width: maxX - minX, height: maxY - minY)
    }

    // MARK: - Pieces

    /// Filter mode: `to_app = false` controls are marked.
    private var filtering: Bool { configuration.filter.enabled }

    private func details(_ control: Control) -> String {
        var parts = [control.kind.name]
        switch control.kind {
        case .slider(let slider):
            parts.append("\(n(slider.minimum))…\(n(slider.maximum)) = \(n(control.value))")
            parts.append(slider.axis.rawValue)
            if !slider.isContinuous { parts.append("on release") }
        case .segmented(let segmented):
            parts.append("\(segmented.count) segments = \(n(control.value))")
        case .button, .toggle:
            break
        }
        if control.isSelected { parts.append("selected") }
        if !control.isEnabled { parts.append("disabled") }
        if filtering && !control.toApp { parts.append("touchd only") }
        return parts.joined(separator: " · ")
    }

    private func color(_ control: Control) -> String {
        switch control.kind {
        case .button: "#2e86de"
        case .toggle: "#27ae60"
        case .slider: "#e67e22"
        case .segmented: "#c0392b"
        }
    }

    private func path(_ shape: Shape, attributes: String) -> String {
        switch shape {
        case .rect(let rect):
            "<rect x=\"\(n(rect.minX))\" y=\"\(n(rect.minY))\" width=\"\(n(rect.width))\" height=\"\(n(rect.height))\" \(attributes)/>\n"
        case .circle(let circle):
            "<circle cx=\"\(n(circle.center.x))\" cy=\"\(n(circle.center.y))\" r=\"\(n(circle.radius))\" \(attributes)/>\n"
        case .polygon(let polygon):
            "<polygon points=\"\(points(polygon))\" \(attributes)/>\n"
        }
    }

    /// The area a tracked contact counts as inside: the rectangle grown with square corners (as
    /// UIKit), the circle grown, the polygon grown by its distance (a round-joined stroke).
    private func outset(_ shape: Shape, by amount: Double) -> String {
        let style =
            "fill=\"#f1c40f\" fill-opacity=\"0.12\" stroke=\"#f1c40f\" stroke-opacity=\"0.6\" stroke-width=\"1\""
        switch shape {
        case .rect(let rect):
            return path(
                .rect(
                    Rect(
                        x: rect.minX - amount, y: rect.minY - amount, width: rect.width + 2 * amount,
                        height: rect.height + 2 * amount)), attributes: style)
        case .circle(let circle):
            return path(.circle(Circle(center: circle.center, radius: circle.radius + amount)), attributes: style)
        case .polygon(let polygon):
            // No fill: the wide stroke alone covers the band, and a fill under it would show as a second tone.
            return "<polygon points=\"\(points(polygon))\" fill=\"none\" stroke=\"#f1c40f\" "
                + "stroke-opacity=\"0.12\" stroke-width=\"\(n(2 * amount))\" stroke-linejoin=\"round\"/>\n"
        }
    }

    private func points(_ polygon: Polygon) -> String {
        polygon.vertices.map { "\(n($0.x)),\(n($0.y))" }.joined(separator: " ")
    }

    // MARK: - Screens

    private func screensByGroup() -> [String: [String]] {
        var result: [String: [String]] = [:]
        for screen in configuration.screens {
            for group in screen.groups { result[group, default: []].append(screen.id) }
        }
        return result
    }

    /// Whether a group belongs to the chosen screen, directly or through an enclosing group.
    private func isShown(groupID: String, _ groupScreens: [String: [String]]) -> Bool {
        guard let screen else { return true }
        var next: String? = groupID
        var seen: Set<String> = []
        var inAnyScreen = false
        while let id = next, seen.insert(id).inserted {
            if let screens = groupScreens[id] {
                if screens.contains(screen) { return true }
                inAnyScreen = true
            }
            next = configuration.groups.first { $0.id == id }?.parent
        }
        return !inAnyScreen
    }

    private func isShown(control: Control, _ groupScreens: [String: [String]], _ shownGroups: Set<String>) -> Bool {
        guard screen != nil, let parent = control.parent else { return true }
        return shownGroups.contains(parent)
    }

    /// A number as render prints it: an integer when it is one, else up to 2 decimals.
    static func number(_ value: Double) -> String {
        guard value.isFinite else { return "0" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return String((value * 100).rounded() / 100)
    }

    private func n(_ value: Double) -> String { Self.number(value) }

    private func escape(_ text: String) -> String {
        var result = ""
        for character in text {
            switch character {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&quot;"
            default: result.append(character)
            }
        }
        return result
    }
}
