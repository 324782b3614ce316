import Foundation
import TOML
import Testing

@testable import TouchDaemon

/// The configuration schema (Configuration/Schema/) is the one place a key is declared: the key tables of
/// docs/configuration.md are rendered from it, and every table's unknown keys and suggestions come from it.
@Suite("Configuration: the schema and the docs")
struct ConfigurationDocsTests {
    static let docs = TestSupport.packageRoot.appendingPathComponent("docs/configuration.md")

    /// `TOUCHD_UPDATE_DOCS=1 swift test --filter ConfigurationDocsTests` writes the tables instead of failing.
    @Test("docs/configuration.md holds exactly the key tables the schema renders")
    func keyTablesMatchTheSchema() throws {
        let text = try String(contentsOf: Self.docs, encoding: .utf8)
        let (rendered, problems) = ConfigurationDocs.render(text)
        #expect(problems.isEmpty, "\(problems)")
        guard rendered != text else { return }
        if ProcessInfo.processInfo.environment["TOUCHD_UPDATE_DOCS"] == "1" {
            try rendered.write(to: Self.docs, atomically: true, encoding: .utf8)
            return
        }
        // Each block that drifted, as it should read.
        let current = text.split(separator: "\n", omittingEmptySubsequences: false)
        let expected = rendered.split(separator: "\n", omittingEmptySubsequences: false)
        var drifted: [String] = []
        for block in ConfigurationDocs.blocks {
            let table = ConfigurationDocs.table(block.schema, rows: block.rows)
            guard let start = current.firstIndex(of: Substring(ConfigurationDocs.start(block.name))),
                let end = current[start...].firstIndex(of: Substring(ConfigurationDocs.end)),
                current[(start + 1)..<end].joined(separator: "\n") == table
            else {
                drifted.append("\(ConfigurationDocs.start(block.name))\n\(table)\n\(ConfigurationDocs.end)")
                continue
            }
        }
        Issue.record(
            """
            docs/configuration.md's key tables differ from the schema (\(current.count) lines, \(expected.count) \
            expected); run TOUCHD_UPDATE_DOCS=1 swift test --filter ConfigurationDocsTests to write them. The tables \
            as they should read:
            \(drifted.joined(separator: "\n\n"))
            """)
    }

    @Test("a block for a table that does not exist, or that does not end, is named")
    func brokenBlocks() {
        let text = "a\n<!-- keys:nothing -->\n<!-- /keys -->\n<!-- keys:output -->\n| x |\n"
        let problems = ConfigurationDocs.render(text).problems
        #expect(problems.contains("line 2: no key table is called 'nothing'"))
        #expect(problems.contains("line 4: '<!-- keys:output -->' has no '<!-- /keys -->' after it"))
        #expect(problems.contains("no '<!-- keys:gesture -->' block for the table gesture"))
    }

    @Test("a block is replaced by its table, and the text around it is kept")
    func rendering() {
        let text = "before\n<!-- keys:application -->\nold\nrows\n<!-- /keys -->\nafter"
        let rendered = ConfigurationDocs.render(text).text
        #expect(
            rendered == """
                before
                <!-- keys:application -->
                | key | type | default | allowed | example |
                |---|---|---|---|---|
                | `target` | string | absent: the chain ends without a handler | the name of a declared target | `target = "kiosk"` |
                <!-- /keys -->
                after
                """)
    }

    /// Every table the decoder reads, with the kinds its keys may name.
    static let tables: [(name: String, schema: TableSchema, kinds: [String])] = [
        ("root", Schema.root.schema, []), ("output", Schema.output.schema, []), ("input", Schema.input.schema, []),
        ("device", Schema.device.schema, []), ("tracking", Schema.tracking.schema, []),
        ("control_socket", Schema.controlSocket.schema, []), ("filter", Schema.filter.schema, []),
        ("target", Schema.target.schema, Schema.targetKinds.map(\.name)),
        ("application", Schema.application.schema, []), ("screen", Schema.screen.schema, []),
        ("group", Schema.group.schema, []),
        ("control", Schema.control.schema, Schema.controlKinds.map(\.name.rawValue)),
        ("control action", Schema.controlAction.schema, []),
        ("gesture", Schema.gesture.schema, Schema.gestureKinds.map(\.name)),
        ("gesture action", Schema.gestureAction.schema, []), ("idle action", Schema.idleAction.schema, []),
        ("idle", Schema.idle.schema, []), ("rect", Schema.rect.schema, []), ("circle", Schema.circle.schema, []),
    ]

    @Test("every key is declared once per table, and only for kinds its table has")
    func keysAreWellFormed() {
        for table in Self.tables {
            let names = table.schema.keys.flatMap(\.names)
            #expect(Set(names).count == names.count, "\(table.name): \(names)")
            for key in table.schema.keys {
                #expect(!key.type.isEmpty && !key.defaultText.isEmpty, "\(table.name).\(key.names)")
                for kind in key.kinds ?? [] {
                    #expect(table.kinds.contains(kind), "\(table.name).\(key.names): no kind '\(kind)'")
                }
            }
        }
    }

    /// Unknown keys are found, and suggested, the same way in every table: from the schema.
    @Test("in every table, a misspelt key is unknown and its spelling is suggested")
    func misspeltKeysInEveryTable() throws {
        for table in Self.tables {
            for name in table.schema.keys.flatMap(\.names) where name.count >= 4 {
                // One letter doubled: one edit from the key, and from no other key of the tables.
                let typo = String(name.prefix(2)) + String(name.dropFirst(1))
                let message = try Self.finish(table.schema, "\(typo) = 1")
                #expect(
                    message == ["\(typo): unknown key '\(typo)' (did you mean '\(name)'?)"],
                    "\(table.name)")
            }
        }
    }

    @Test("the loader reads every table with its schema: a misspelt key anywhere gets its suggestion")
    func misspeltKeysThroughTheLoader() {
        let text = """
            outptu = 1
            [output]
            width = 100
            height = 100
            widht = 1
            [input]
            saet = "seat0"
            [[device]]
            match_name = "x"
            match_nmae = "x"
            region = { x = 0, y = 0, width = 10, height = 10, heigth = 1 }
            [tracking]
            max_contact = 1
            [control_socket]
            max_client = 1
            [filter]
            cancel_wiht = "lift"
            [targets.k]
            socket = "/run/kiosk/k.sock"
            responds_to = ["a"]
            socket_typ = "stream"
            [targets.e]
            exec = ["/bin/true"]
            responds_to = ["a"]
            timeout = 1
            [application]
            targte = "k"
            [[screen]]
            id = "s"
            groups = ["g"]
            initail = true
            [[group]]
            id = "g"
            to_ap = true
            [[control]]
            id = "c"
            frame = { x = 0, y = 0, width = 10, height = 10 }
            selectd = true
            actions = [{ events = ["touchDown"], acton = "a" }]
            [[gesture]]
            id = "p"
            kind = "pinch"
            circle = { cx = 5, cy = 5, r = 5, cxx = 1 }
            fingres = 2
            actions = [{ evnets = ["began"], action = "a" }]
            [idle]
            timeout = 1
            """
        let problems = Set(TestSupport.problemLines(ConfigurationLoader.load(text: text, path: "t.toml")))
        let expected = [
            "outptu": "output", "output.widht": "width", "input.saet": "seat", "device[0].match_nmae": "match_name",
            "device[0].region.heigth": "height", "tracking.max_contact": "max_contacts",
            "control_socket.max_client": "max_clients", "filter.cancel_wiht": "cancel_with",
            "targets.k.socket_typ": "socket_type", "targets.e.timeout": "timeout_ms", "application.targte": "target",
            "screen[0].initail": "initial", "group[0].to_ap": "to_app", "control[0].selectd": "selected",
            "control[0].actions[0].acton": "action", "gesture[0].circle.cxx": "cx", "gesture[0].fingres": "fingers",
            "gesture[0].actions[0].evnets": "events", "idle.timeout": "timeout_s",
        ]
        for (path, key) in expected {
            let typo = String(path.split(separator: ".").last ?? "")
            #expect(
                problems.contains { $0.contains(": error: \(path): unknown key '\(typo)' (did you mean '\(key)'?)") },
                "\(path): \(problems.sorted())")
        }
    }

    @Test("a key of another kind is refused as the table says, and only once the kind is known")
    func keysOfOtherKinds() throws {
        #expect(
            try Self.finish(Schema.gesture.schema, "taps = 2", kind: "swipe")
                == ["taps: 'taps' does not apply to a swipe gesture"])
        #expect(
            try Self.finish(Schema.control.schema, "segments = 2", kind: "slider")
                == ["segments: 'segments' does not apply to a slider"])
        #expect(try Self.finish(Schema.target.schema, "shell = true", kind: "socket") == ["shell: unknown key 'shell'"])
        // An unknown kind (missing, invalid, or two kinds at once) is its own problem.
        #expect(try Self.finish(Schema.gesture.schema, "taps = 2", kind: nil) == [])
        // A misspelling is suggested among the keys of the entry's kind only.
        #expect(
            try Self.finish(Schema.gesture.schema, "min = 1", kind: "long_press")
                == ["min: unknown key 'min' (did you mean 'minimum_duration_ms'?)"])
        #expect(
            try Self.finish(Schema.gesture.schema, "min = 1", kind: nil) == ["min: unknown key 'min'"])
    }

    /// The problems `finish` reports for a table holding `text`, read with `schema` as an entry of `kind`.
    static func finish(_ schema: TableSchema, _ text: String, kind: String? = nil) throws -> [String] {
        let table = try TOMLParser.parse(text)
        let log = ProblemLog(root: table)
        let reader = TableReader(table, path: "", log: log, schema: schema)
        reader.kind = kind
        reader.finish()
        return log.problems.map { "\($0.keyPath ?? ""): \($0.message)" }
    }

    @Test("each kind of gesture makes the model's recognizer of that kind")
    func gestureKinds() throws {
        for kind in Schema.gestureKinds {
            let text = "[output]\nwidth = 100\nheight = 100\n[[gesture]]\nid = \"g\"\nkind = \"\(kind.name)\"\n"
            let configuration = try ConfigurationLoader.load(text: text, path: "g.toml").get()
            #expect(configuration.gestures.map(\.kind.name) == [kind.name])
            #expect(configuration.gestures.map(\.fingers) == [kind.minimumFingers])
        }
    }

    @Test("each kind of target is the one kind key a target gives")
    func targetKinds() throws {
        let text = """
            [output]
            width = 100
            height = 100
            [targets.s]
            socket = "/run/kiosk/s.sock"
            responds_to = []
            [targets.e]
            exec = ["/bin/true"]
            responds_to = []
            """
        let configuration = try ConfigurationLoader.load(text: text, path: "t.toml").get()
        #expect(Set(configuration.targets.map(\.kind.name)) == Set(Schema.targetKinds.map(\.name)))
        #expect(configuration.targets.allSatisfy { $0.name == String($0.kind.name.prefix(1)) })
    }

    @Test("an absent section takes the schema's defaults, as an empty one does")
    func defaultsAreTheSchemas() throws {
        let empty = try ConfigurationLoader.load(
            text: "[output]\nwidth = 100\nheight = 100\n[tracking]\n[control_socket]\n[filter]\n[idle]\n",
            path: "e.toml"
        ).get()
        let absent = try ConfigurationLoader.load(text: "[output]\nwidth = 100\nheight = 100\n", path: "a.toml").get()
        #expect(empty.tracking == absent.tracking)
        #expect(empty.controlSocket == absent.controlSocket)
        #expect(empty.filter == absent.filter)
        #expect(empty.idle == absent.idle)
        #expect(absent.tracking.maximumContacts == Schema.tracking.maximumContacts.defaultValue)
        #expect(absent.controlSocket.path == "/run/touchd/control.sock")
    }
}
