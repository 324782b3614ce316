/// The key tables of docs/configuration.md, rendered from ``Schema``. Each sits between `<!-- keys:NAME -->` and
/// `<!-- /keys -->`; ConfigurationDocsTests fails when one differs from the schema, and
/// `TOUCHD_UPDATE_DOCS=1 swift test --filter ConfigurationDocsTests` writes them anew.
enum ConfigurationDocs {
    /// Which keys of a table a block shows.
    enum Rows: Sendable {
        /// Every key, those of some kinds marked `` `tap` only``.
        case all
        /// The keys of every kind.
        case common
        /// The keys of one kind only, unmarked.
        case kind(String)
    }

    /// The blocks, by NAME.
    static let blocks: [(name: String, schema: TableSchema, rows: Rows)] =
        [
            ("output", Schema.output.schema, .all),
            ("input", Schema.input.schema, .all),
            ("device", Schema.device.schema, .all),
            ("tracking", Schema.tracking.schema, .all),
            ("control_socket", Schema.controlSocket.schema, .all),
            ("filter", Schema.filter.schema, .all),
            ("targets", Schema.target.schema, .common),
        ] + Schema.targetKinds.map { ("targets.\($0.name)", Schema.target.schema, .kind($0.name)) } + [
            ("application", Schema.application.schema, .all),
            ("application_events", Schema.applicationEvents.schema, .all),
            ("screen", Schema.screen.schema, .all),
            ("group", Schema.group.schema, .all),
            ("control", Schema.control.schema, .all),
            ("control.actions", Schema.controlAction.schema, .all),
            ("gesture", Schema.gesture.schema, .all),
            ("gesture.actions", Schema.gestureAction.schema, .all),
            ("idle", Schema.idle.schema, .all),
            ("accessibility", Schema.accessibility.schema, .all),
            ("element", Schema.element.schema, .all),
        ]

    static let end = "<!-- /keys -->"

    static func start(_ name: String) -> String { "<!-- keys:\(name) -->" }

    /// The markdown table of `schema`'s keys.
    static func table(_ schema: TableSchema, rows: Rows) -> String {
        let keys = schema.keys.filter { key in
            switch rows {
            case .all: true
            case .common: key.kinds == nil
            case .kind(let kind): key.kinds?.contains(kind) == true
            }
        }
        var lines = ["| key | type | default | allowed | example |", "|---|---|---|---|---|"]
        for key in keys {
            var allowed = [String]()
            if case .all = rows, let kinds = key.kinds { allowed.append(list(kinds.map { "`\($0)`" }) + " only") }
            if let values = key.allowed { allowed.append(values) }
            var text = allowed.joined(separator: "; ")
            if let doc = key.doc { text = text.isEmpty ? doc : "\(text): \(doc)" }
            let title = key.title ?? key.names.map { "`\($0)`" }.joined(separator: " / ")
            let cells = [title, key.type, key.defaultText, text, "`\(key.example)`"]
            lines.append("|" + cells.map { $0.isEmpty ? " " : " \($0) " }.joined(separator: "|") + "|")
        }
        return lines.joined(separator: "\n")
    }

    /// `text` (docs/configuration.md) with every block replaced by its table, and what is wrong with the blocks: a
    /// NAME the schema has no table for, a block that does not end, a table the text has no block for.
    static func render(_ text: String) -> (text: String, problems: [String]) {
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var problems: [String] = []
        var seen: Set<String> = []
        var index = 0
        while index < lines.count {
            defer { index += 1 }
            guard let match = lines[index].wholeMatch(of: /<!-- keys:(\S+) -->/) else { continue }
            let name = String(match.1)
            guard let block = blocks.first(where: { $0.name == name }) else {
                problems.append("line \(index + 1): no key table is called '\(name)'")
                continue
            }
            guard let close = lines[(index + 1)...].firstIndex(of: end) else {
                problems.append("line \(index + 1): '\(start(name))' has no '\(end)' after it")
                break
            }
            seen.insert(name)
            let table = self.table(block.schema, rows: block.rows).split(separator: "\n").map(String.init)
            lines.replaceSubrange((index + 1)..<close, with: table)
            index += table.count + 1
        }
        for block in blocks where !seen.contains(block.name) {
            problems.append("no '\(start(block.name))' block for the table \(block.name)")
        }
        return (lines.joined(separator: "\n"), problems)
    }

    /// `a`, `a and b`, `a, b and c`.
    private static func list(_ items: [String]) -> String {
        guard let last = items.last, items.count > 1 else { return items.first ?? "" }
        return items.dropLast().joined(separator: ", ") + " and " + last
    }
}
