import TouchModel

/// Draws a configuration's layout as SVG in output pixels, so an integrator can lay it over a
/// screenshot of the UI: the output, groups (dashed), controls with kind, id and initial state,
/// each control's drag outset (the faint halo: while a finger is down, "inside" reaches that far),
/// and gesture regions (hatched).
struct LayoutSVG {
    let configuration: Configuration
    /// Only this screen's controls (and those in no screen); nil for every screen.
    var screen: String?

    private var width: Double { configuration.output.width }
    private var height: Double { configuration.output.height }
    /// Label size that stays readable from 800 px to 8K outputs.
    private var fontSize: Double { Swift.max(12, Swift.min(width, height) / 50) }

    func render() -> String {
        var svg = """
            <?xml version="1.0" encoding="UTF-8"?>
            <svg xmlns="http://www.w3.org/2000/svg" width="\(n(width))" height="\(n(height))" \
            viewBox="0 0 \(n(width)) \(n(height))" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" \
            font-size="\(n(fontSize))">
            <defs><pattern id="hatch" width="12" height="12" patternUnits="userSpaceOnUse" \
            patternTransform="rotate(45)"><line x1="0" y1="0" x2="0" y2="12" stroke="#8e44ad" stroke-width="4" \
            stroke-opacity="0.35"/></pattern><pattern id="touchd-only" width="16" height="16" \
            patternUnits="userSpaceOnUse"><path d="M0 0L16 16M16 0L0 16" stroke="#c0392b" stroke-width="2" \
            stroke-opacity="0.45"/></pattern></defs>
            <title>touchd layout\(screen.map { ": screen \(escape($0))" } ?? "")</title>
            <rect x="0" y="0" width="\(n(width))" height="\(n(height))" fill="#fbfbf8" stroke="#222" stroke-width="2"/>

            """
        let groupScreens = screensByGroup()
        let shownGroups = Set(configuration.groups.map(\.id).filter { isShown(groupID: $0, groupScreens) })

        svg += "<g id=\"groups\">\n"
        for group in configuration.groups where shownGroups.contains(group.id) {
            guard let shape = group.shape else { continue }
            svg += path(
                shape, attributes: "fill=\"none\" stroke=\"#7f8c8d\" stroke-width=\"2\" stroke-dasharray=\"10 6\"")
            let box = shape.boundingBox
            let screens = groupScreens[group.id].map { " · screen \($0.joined(separator: ", "))" } ?? ""
            svg += label(
                "group \(group.id)\(screens)", x: box.minX + 6, y: box.minY + fontSize * 1.1, color: "#7f8c8d",
                anchor: "start")
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
            let box = control.shape.boundingBox
            let center = Point(x: box.minX + box.width / 2, y: box.minY + box.height / 2)
            svg += label(control.id, x: center.x, y: center.y, color: "#111", weight: "bold")
            svg += label(details(control), x: center.x, y: center.y + fontSize * 1.2, color: "#333")
        }
        svg += "</g>\n<g id=\"gestures\">\n"
        for gesture in configuration.gestures {
            let shape = gesture.shape ?? .rect(configuration.output.bounds)
            svg += path(shape, attributes: "fill=\"url(#hatch)\" stroke=\"#8e44ad\" stroke-width=\"2\"")
            let box = shape.boundingBox
            svg += label(
                "gesture \(gesture.id): \(gesture.kind.rawValue), \(gesture.fingers) finger\(gesture.fingers == 1 ? "" : "s")",
                x: box.minX + 6, y: box.maxY - fontSize * 0.5, color: "#8e44ad", anchor: "start")
        }
        svg += "</g>\n"
        svg += label(
            "\(n(width))×\(n(height)) · halo: drag outset · dashed outline: disabled · hatched: gesture region"
                + (filtering ? " · red cross-hatch: never reaches the application (to_app = false)" : ""),
            x: width - 8, y: height - 8, color: "#555", anchor: "end")
        svg += "</svg>\n"
        return svg
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

    private func label(
        _ text: String, x: Double, y: Double, color: String, anchor: String = "middle", weight: String = "normal"
    ) -> String {
        "<text x=\"\(n(x))\" y=\"\(n(y))\" fill=\"\(color)\" text-anchor=\"\(anchor)\" font-weight=\"\(weight)\" "
            + "stroke=\"#fbfbf8\" stroke-width=\"3\" paint-order=\"stroke\">\(escape(text))</text>\n"
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

    private func n(_ value: Double) -> String {
        guard value.isFinite else { return "0" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return String((value * 100).rounded() / 100)
    }

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
