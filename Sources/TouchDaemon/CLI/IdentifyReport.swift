import TouchModel

/// What `touchd identify` says about the seat's event nodes, made from what udev and libinput reported and the
/// configuration, if any. Pure: the command gathers the facts, this decides and formats them.
struct IdentifyReport {
    /// One event node with everything `identify` knows about it.
    struct Entry: Hashable, Sendable {
        var node: InputNode
        /// libinput's description, when libinput opened the node.
        var device: DeviceInfo?
        /// Why libinput could not open the node (`Permission denied`), when it did not and the reason is known.
        var unreadable: String?
        /// Whether the configuration uses it, and how; nil without a configuration or for nodes that are not
        /// touchscreens.
        var usage: Usage?
        /// For a touchscreen: the other nodes of the same physical device.
        var siblings: [InputNode.Sibling]

        /// libinput's answer when it opened the node, udev's otherwise.
        var isTouchscreen: Bool { device?.isTouchscreen ?? node.kinds.contains(.touchscreen) }
    }

    enum Usage: Hashable, Sendable {
        /// touchd uses it through `[[device]]` entry `entry` (nil: no entries, every touchscreen is used), mapped by
        /// `mapper`.
        case used(entry: Int?, mapper: CoordinateMapper)
        case ignored(reason: String)
    }

    var entries: [Entry]
    /// The configuration's `[[device]]` entries, to name them; empty without a configuration.
    var allowList: [Configuration.DeviceMatch]
    /// Whether a configuration was read.
    var hasConfiguration: Bool
    /// `[filter] enabled` and `grab_siblings`: which siblings a running touchd grabs.
    var grabsSiblings: Bool

    init(
        nodes: [InputNode], devices: [DeviceInfo], unreadable: [String: String] = [:], configuration: Configuration?
    ) {
        let bySysname = Dictionary(devices.map { ($0.sysname, $0) }, uniquingKeysWith: { first, _ in first })
        allowList = configuration?.devices ?? []
        hasConfiguration = configuration != nil
        grabsSiblings = configuration.map { $0.filter.enabled && $0.filter.grabSiblings } ?? false
        entries = nodes.map { node in
            let device = bySysname[node.sysname]
            var entry = Entry(
                node: node, device: device, unreadable: device == nil ? unreadable[node.sysname] : nil, usage: nil,
                siblings: [])
            if entry.isTouchscreen { entry.siblings = InputNode.siblings(of: node, among: nodes) }
            if let configuration, entry.isTouchscreen {
                entry.usage = Self.usage(node: node, device: device, configuration: configuration)
            }
            return entry
        }
    }

    /// The configuration's decision for a touchscreen, with the router's own rule; a node libinput did not open is
    /// described from udev's facts.
    private static func usage(node: InputNode, device: DeviceInfo?, configuration: Configuration) -> Usage {
        let info =
            device
            ?? DeviceInfo(
                id: 0, name: node.name, sysname: node.sysname, vendor: node.vendor, product: node.product,
                devnode: node.devnode, links: node.links, isTouchscreen: true, touchCount: 0,
                isVirtual: node.isVirtual)
        switch TouchRouter.decide(info, allowList: configuration.devices, ignoresVirtual: configuration.ignoreVirtual) {
        case .ignored(let reason):
            return .ignored(reason: reason)
        case .used(let entry):
            let match = entry.map { configuration.devices[$0] }
            return .used(entry: entry, mapper: CoordinateMapper(output: configuration.output, device: match))
        }
    }

    /// The entry for a sysname.
    func entry(sysname: String) -> Entry? {
        entries.first { $0.node.sysname == sysname }
    }

    /// `device[0] (match_name = "ILITEK*", match_vendor = 0x222a)`: the entry as `check` names it, with its matchers.
    func describeEntry(_ index: Int) -> String {
        guard allowList.indices.contains(index) else { return "device[\(index)]" }
        let match = allowList[index]
        var parts: [String] = []
        if let name = match.name { parts.append("match_name = \(Self.quoted(name))") }
        if let vendor = match.vendor { parts.append("match_vendor = 0x\(DeviceInfo.hex(vendor))") }
        if let product = match.product { parts.append("match_product = 0x\(DeviceInfo.hex(product))") }
        if let path = match.path { parts.append("match_path = \(Self.quoted(path))") }
        return parts.isEmpty ? "device[\(index)]" : "device[\(index)] (\(parts.joined(separator: ", ")))"
    }

    // MARK: - Text

    /// The report as text, a block per node.
    var text: String {
        var lines: [String] = []
        for entry in entries {
            lines.append(contentsOf: textLines(entry))
        }
        let touchscreens = entries.filter(\.isTouchscreen)
        if touchscreens.isEmpty {
            lines.append("no touchscreen on the seat")
        } else if !hasConfiguration {
            lines.append("no configuration read: no [[device]] column (--config names one)")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    private func textLines(_ entry: Entry) -> [String] {
        let node = entry.node
        var lines = [
            "\(node.sysname)  \(TerminalText.escaped(node.name))  \(DeviceInfo.hex(node.vendor)):\(DeviceInfo.hex(node.product))"
        ]
        lines.append("  node: \(node.devnode ?? "none")" + (node.isVirtual ? " (virtual)" : ""))
        lines.append(
            "  phys: \(node.phys.isEmpty ? "none" : TerminalText.escaped(node.phys))"
                + (node.uniq.isEmpty ? "" : ", uniq: \(TerminalText.escaped(node.uniq))"))
        lines.append("  reports: \(reports(entry))")
        if entry.isTouchscreen {
            lines.append("  libinput matrix: \(libinputMatrix(entry))")
            switch entry.usage {
            case nil:
                break
            case .ignored(let reason):
                lines.append("  touchd: not used: \(reason)")
            case .used(let index, let mapper):
                let through = index.map { "matches \(describeEntry($0))" } ?? "used (no [[device]] entries)"
                lines.append("  touchd: \(through)")
                lines.append(
                    "  touchd matrix: \(CoordinateMapper.describe(mapper.matrix)) (calibration"
                        + " \(CoordinateMapper.describe(mapper.calibration)), rotation \(mapper.rotation.rawValue)°),"
                        + " region \(Self.describe(mapper.region))")
            }
            for sibling in entry.siblings {
                let grabbed = grabsSiblings && sibling.isGrabbable ? "; grabbed in filter mode (grab_siblings)" : ""
                lines.append(
                    "  sibling: \(sibling.node.sysname) \(TerminalText.escaped(sibling.node.name)) (\(sibling.reason.rawValue)):"
                        + " \(sibling.effect)\(grabbed)")
            }
        }
        return lines
    }

    private func reports(_ entry: Entry) -> String {
        var parts = entry.node.sortedKinds.map(\.rawValue)
        if entry.node.hasSlots {
            let slots = entry.device.map(\.touchCount).flatMap { $0 > 0 ? $0 : nil }
            parts.append("multitouch" + (slots.map { " (\($0) slots)" } ?? " (slots)"))
        }
        if parts.isEmpty { parts.append("nothing udev classifies") }
        if entry.device == nil {
            parts.append("not opened by libinput" + (entry.unreadable.map { " (\($0))" } ?? ""))
        } else if entry.device?.isTouchscreen == false && entry.node.kinds.contains(.touchscreen) {
            parts.append("libinput does not take it as a touchscreen")
        }
        return parts.joined(separator: ", ")
    }

    private func libinputMatrix(_ entry: Entry) -> String {
        if let matrix = entry.device?.libinputCalibration {
            return CoordinateMapper.describe(matrix) + " (udev LIBINPUT_CALIBRATION_MATRIX)"
        }
        if let property = entry.node.calibrationProperty {
            return "udev LIBINPUT_CALIBRATION_MATRIX=\(TerminalText.escaped(property))"
                + (entry.device == nil ? " (libinput did not open the node)" : " (libinput ignores it)")
        }
        return "identity"
    }

    static func describe(_ rect: Rect) -> String {
        "\(Configuration.number(rect.minX)),\(Configuration.number(rect.minY)) \(Configuration.number(rect.width))×\(Configuration.number(rect.height))"
    }

    static func quoted(_ text: String) -> String {
        var json = ""
        JSONLine.appendString(text, to: &json)
        return json
    }

    // MARK: - JSON

    /// One JSON object per node, one per line.
    var jsonLines: [String] {
        entries.map(json)
    }

    private func json(_ entry: Entry) -> String {
        let node = entry.node
        var line = JSONLine()
        line.add("type", "node")
        line.add("sysname", node.sysname)
        line.add("devnode", node.devnode)
        line.add("name", node.name)
        line.add("vendor", DeviceInfo.hex(node.vendor))
        line.add("product", DeviceInfo.hex(node.product))
        line.add("phys", node.phys)
        line.add("uniq", node.uniq)
        line.add("virtual", node.isVirtual)
        line.add("reports", strings: node.sortedKinds.map(\.rawValue))
        // libinput's count of contacts for a touchscreen it opened; null for anything else (unknown, or no touch).
        line.add("slots", json: entry.isTouchscreen ? entry.device.map { String($0.touchCount) } ?? "null" : "null")
        line.add("touchscreen", entry.isTouchscreen)
        line.add("libinput", entry.device != nil)
        if let unreadable = entry.unreadable { line.add("unreadable", unreadable) }
        if entry.isTouchscreen {
            line.add(
                "libinput_matrix", json: Self.jsonMatrix(entry.device?.libinputCalibration ?? CoordinateMapper.identity)
            )
            if let property = node.calibrationProperty { line.add("udev_calibration_matrix", property) }
            switch entry.usage {
            case nil:
                break
            case .ignored(let reason):
                line.add("used", false)
                line.add("reason", reason)
            case .used(let index, let mapper):
                line.add("used", true)
                line.add("entry", json: index.map(String.init) ?? "null")
                line.add("entry_description", index.map(describeEntry))
                line.add("touchd_matrix", json: Self.jsonMatrix(mapper.matrix))
                line.add("calibration", json: Self.jsonMatrix(mapper.calibration))
                line.add("rotation", mapper.rotation.rawValue)
                var region = JSONLine()
                region.add("x", mapper.region.minX)
                region.add("y", mapper.region.minY)
                region.add("width", mapper.region.width)
                region.add("height", mapper.region.height)
                line.add("region", json: region.line)
            }
            let siblings = entry.siblings.map { sibling in
                var item = JSONLine()
                item.add("sysname", sibling.node.sysname)
                item.add("name", sibling.node.name)
                item.add("reason", sibling.reason.rawValue)
                item.add("pointer", sibling.node.isPointer)
                item.add("effect", sibling.effect)
                item.add("grabbed_in_filter_mode", grabsSiblings && sibling.isGrabbable)
                return item.line
            }
            line.add("siblings", json: JSONLine.array(siblings))
        }
        return line.line
    }

    static func jsonMatrix(_ matrix: [Double]) -> String {
        JSONLine.array(matrix.map(JSONLine.number))
    }

    // MARK: - Touches

    /// What `identify --touch` prints for a touch-down at the normalised position (`x`, `y`) on `sysname`.
    func touchLine(sysname: String, name: String, x: Double, y: Double, json asJSON: Bool) -> String {
        var mapped: Point?
        var usedThrough: String?
        var ignoredBecause: String?
        switch entry(sysname: sysname)?.usage {
        case .used(let index, let mapper)?:
            mapped = mapper.map(x: x, y: y)
            usedThrough = index.map(describeEntry) ?? "no [[device]] entries"
        case .ignored(let reason)?:
            ignoredBecause = reason
        case nil:
            break
        }
        if asJSON {
            var line = JSONLine()
            line.add("type", "touch")
            line.add("sysname", sysname)
            line.add("name", name)
            line.add("raw_x", x)
            line.add("raw_y", y)
            if let mapped {
                line.add("x", mapped.x)
                line.add("y", mapped.y)
            }
            if hasConfiguration {
                line.add("used", usedThrough != nil)
                if let usedThrough { line.add("entry", usedThrough) }
                if let ignoredBecause { line.add("reason", ignoredBecause) }
            }
            return line.line
        }
        var text = "touch: \(sysname) \(TerminalText.escaped(name)): raw (\(Self.fixed(x)), \(Self.fixed(y)))"
        if let mapped {
            text += " → output (\(Self.fixed(mapped.x, digits: 1)), \(Self.fixed(mapped.y, digits: 1)))"
        }
        if let usedThrough { text += ", \(usedThrough)" }
        if let ignoredBecause { text += ", not used by touchd: \(ignoredBecause)" }
        return text
    }

    /// A number with a fixed count of decimals, for columns that line up.
    static func fixed(_ value: Double, digits: Int = 4) -> String {
        guard value.isFinite else { return "?" }
        var scale = 1.0
        for _ in 0..<digits { scale *= 10 }
        let scaled = (abs(value) * scale).rounded()
        guard scaled < 1e15 else { return String(value) }
        let whole = Int64(scaled)
        let integer = whole / Int64(scale)
        let fraction = String(whole % Int64(scale))
        let sign = value < 0 && whole != 0 ? "-" : ""
        guard digits > 0 else { return sign + String(integer) }
        return sign + String(integer) + "." + String(repeating: "0", count: digits - fraction.count) + fraction
    }
}
