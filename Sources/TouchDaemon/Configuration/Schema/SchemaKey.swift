import TOML

/// How a key's value is read and checked, and how docs/configuration.md describes it.
struct Rule<Value>: Sendable {
    /// The type column of the key tables: `integer (ms)`.
    var type: String
    /// What values are allowed (`1…5000`), for the allowed column; nil when the type says it all.
    var allowed: String?
    /// Reads the value of `key`, which the table holds, reporting what is wrong with it (then nil).
    var read: @Sendable (_ table: TableReader, _ key: String) -> Value?
    /// A value as the default column shows it: `` `70` ``.
    var show: @Sendable (Value) -> String

    init(
        type: String, allowed: String? = nil, read: @escaping @Sendable (_ table: TableReader, _ key: String) -> Value?,
        show: @escaping @Sendable (Value) -> String = { _ in "" }
    ) {
        self.type = type
        self.allowed = allowed
        self.read = read
        self.show = show
    }
}

/// One row of a key table: everything the docs and the unknown-key check need to know about a key, whatever its
/// value's type.
struct KeyDescriptor: Sendable {
    /// The key's name (three for a shape: `frame`, `circle`, `polygon`).
    var names: [String]
    /// The key column when it is not the names: `*any event name*`.
    var title: String?
    var type: String
    /// The default column: `required`, a value, or what being absent means.
    var defaultText: String
    /// The values allowed.
    var allowed: String?
    /// The kinds of entry the key belongs to (`tap`, `swipe`; `slider`); nil for every kind.
    var kinds: [String]?
    /// One line on what the key does, where the table says it.
    var doc: String?
    var example: String
}

/// A key as the schema declares it; its ``descriptor`` is its row in the docs.
protocol SchemaKey: Sendable {
    var descriptor: KeyDescriptor { get }
}

/// A key that may be missing: required (its absence is a problem) or optional (its absence means nothing is set).
/// ``TableReader/read(_:)-(Key<Value>)`` reads it.
struct Key<Value>: SchemaKey {
    let name: String
    let rule: Rule<Value>
    let isRequired: Bool
    let descriptor: KeyDescriptor

    /// `absent` is what the default column says when the key is optional (`absent (any name)`).
    init(
        _ name: String, _ rule: Rule<Value>, required: Bool = false, absent: String = "absent",
        kinds: [String]? = nil, allowed: String? = nil, doc: String? = nil, example: String
    ) {
        self.name = name
        self.rule = rule
        isRequired = required
        descriptor = KeyDescriptor(
            names: [name], type: rule.type, defaultText: required ? "required" : absent,
            allowed: allowed ?? rule.allowed, kinds: kinds, doc: doc, example: example)
    }
}

/// A key with a default: reading it gives a value whether or not the file writes it (`reader[setting]`).
struct Setting<Value: Sendable>: SchemaKey {
    let name: String
    let rule: Rule<Value>
    let defaultValue: Value
    let descriptor: KeyDescriptor

    /// `shown` replaces the default as the default column shows it (`` `0` (no limit) ``).
    init(
        _ name: String, _ rule: Rule<Value>, default defaultValue: Value, shown: String? = nil,
        kinds: [String]? = nil, allowed: String? = nil, doc: String? = nil, example: String
    ) {
        self.name = name
        self.rule = rule
        self.defaultValue = defaultValue
        descriptor = KeyDescriptor(
            names: [name], type: rule.type, defaultText: shown ?? rule.show(defaultValue),
            allowed: allowed ?? rule.allowed, kinds: kinds, doc: doc, example: example)
    }
}

/// The shape of a control, group or gesture: at most one of `frame`, `circle` and `polygon`, read with the output's
/// size (ShapeReader.swift).
struct ShapeKey: SchemaKey {
    static let names = ["frame", "circle", "polygon"]

    let isRequired: Bool
    let descriptor: KeyDescriptor

    init(required: Bool = false, absent: String = "absent", allowed: String, example: String) {
        isRequired = required
        descriptor = KeyDescriptor(
            names: Self.names, type: "[shape](#shapes-and-coordinates)", defaultText: required ? "required" : absent,
            allowed: allowed, example: example)
    }
}

/// A table whose keys are names the file chooses (`[targets]`, `[application_events]`, `environment`): the row
/// documents every one of them, and the decoder reads each.
struct AnyNameKey: SchemaKey {
    let descriptor: KeyDescriptor

    init(title: String, type: String, default: String = "—", allowed: String, example: String) {
        descriptor = KeyDescriptor(
            names: [], title: title, type: type, defaultText: `default`, allowed: allowed, example: example)
    }
}

/// The keys of one kind of table, as the decoder and the docs see them.
struct TableSchema: Sendable {
    /// In the order of the docs.
    let keys: [KeyDescriptor]
    /// What a key of another kind of entry is told (`'taps' does not apply to a swipe gesture`); nil: it is an
    /// unknown key, as anything not in ``keys``.
    let otherKind: (@Sendable (_ key: String, _ kind: String) -> String)?
    /// Any name is a key (``AnyNameKey``): the decoder reads each, and reports what it does not read.
    let anyName: Bool
    private let byName: [String: KeyDescriptor]

    init(
        keys: [KeyDescriptor], otherKind: (@Sendable (_ key: String, _ kind: String) -> String)? = nil
    ) {
        self.keys = keys
        self.otherKind = otherKind
        anyName = keys.contains { $0.names.isEmpty }
        byName = Dictionary(
            keys.flatMap { key in key.names.map { ($0, key) } }, uniquingKeysWith: { first, _ in first })
    }

    func descriptor(_ name: String) -> KeyDescriptor? { byName[name] }

    /// The key names an entry of `kind` may hold (nil: of any kind), in the docs' order, for did-you-mean.
    func names(for kind: String?) -> [String] {
        keys.filter { key in kind.map { key.kinds?.contains($0) ?? true } ?? true }.flatMap(\.names)
    }
}

/// A struct whose stored properties are the keys of one table (``SchemaKey``), in the docs' order.
protocol KeyTable: Sendable {}

/// A table's keys, typed for the decoder (`Schema.tracking.dragOutset`), with their ``TableSchema``. The schema is
/// read off the keys' struct (its stored properties, in order), so declaring a key is all it takes for the
/// unknown-key check and the docs to know it.
@dynamicMemberLookup
struct Section<Keys: KeyTable>: Sendable {
    let keys: Keys
    let schema: TableSchema

    init(_ keys: Keys, otherKind: (@Sendable (_ key: String, _ kind: String) -> String)? = nil) {
        self.keys = keys
        schema = TableSchema(
            keys: Mirror(reflecting: keys).children.compactMap { ($0.value as? any SchemaKey)?.descriptor },
            otherKind: otherKind)
    }

    subscript<Value>(dynamicMember path: KeyPath<Keys, Value>) -> Value { keys[keyPath: path] }
}

extension TableReader {
    /// The key's value when the file gives a valid one; nil when it is absent (a problem if it is required) or
    /// refused (the problem is reported).
    func read<Value>(_ key: Key<Value>) -> Value? {
        read(key, as: key.rule)
    }

    /// The key's value read by another rule than its own, for a key whose values depend on the entry (a slider's or
    /// a segmented control's `value`).
    func read<Value, Other>(_ key: Key<Other>, as rule: Rule<Value>) -> Value? {
        guard contains(key.name) else {
            if key.isRequired { reportTable("missing required key '\(key.name)'") }
            return nil
        }
        return rule.read(self, key.name)
    }

    /// The value the file gives, valid, or nil (absent or refused); the default is not applied.
    func read<Value>(_ setting: Setting<Value>) -> Value? {
        contains(setting.name) ? setting.rule.read(self, setting.name) : nil
    }

    /// The value the file gives, or the default when it gives none (or one that is refused: the problem is reported).
    subscript<Value>(_ setting: Setting<Value>) -> Value {
        read(setting) ?? setting.defaultValue
    }
}
