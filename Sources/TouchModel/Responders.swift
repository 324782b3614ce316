/// Somewhere actions can go: a socket, a command, a control-socket subscriber. The model only
/// needs its name and which actions it responds to (UIKit's `responds(to:)`).
public struct Target: Hashable, Sendable {
    /// Which actions a target implements.
    public struct Actions: Hashable, Sendable {
        /// The names, sorted so that a frame checks them without hashing (``SortedSet``); nil for every action.
        package var names: SortedSet<String>?

        /// Every action (a control-socket subscriber, for instance).
        public static let all = Actions(names: nil)

        /// Only these.
        public static func only(_ names: [String]) -> Actions { Actions(names: SortedSet(names)) }
    }

    public var name: String
    public var actions: Actions

    public init(name: String, actions: Actions) {
        self.name = name
        self.actions = actions
    }

    public init(name: String, respondsTo actions: [String]) {
        self.init(name: name, actions: .only(actions))
    }

    /// Whether this target implements `action`.
    public func responds(to action: String) -> Bool {
        actions.names?.contains(action) ?? true
    }
}

/// A container of controls and groups: a link of the responder chain and, when it has a shape,
/// a clip for hit-testing (a touch outside a group never reaches the controls inside it).
public struct Group: Hashable, Sendable {
    public var id: String
    public var parent: String?
    /// The group's outline; nil for a group that only organises the responder chain.
    public var shape: Shape?
    /// The handler target of this group as a responder.
    public var target: String?

    public init(id: String, parent: String? = nil, shape: Shape? = nil, target: String? = nil) {
        self.id = id
        self.parent = parent
        self.shape = shape
        self.target = target
    }
}

/// A named set of groups of which one is shown at a time; controls inside the groups of an
/// inactive screen cannot be touched. Controls outside every screen's groups are always active.
public struct Screen: Hashable, Sendable {
    public var id: String
    public var groups: [String]
    /// The handler target of this screen as a responder.
    public var target: String?

    public init(id: String, groups: [String], target: String? = nil) {
        self.id = id
        self.groups = groups
        self.target = target
    }
}

/// A link of a control's responder chain: control → enclosing groups (innermost first) → the
/// active screen → the application.
public enum Responder: Hashable, Sendable, CustomStringConvertible {
    case control(String)
    case group(String)
    case screen(String)
    case application
    /// A gesture recognizer with an explicit target (its nil-target actions start the chain at
    /// its control or group instead).
    case gesture(String)

    /// The responder's id as printed (`application` for the application).
    public var id: String {
        switch self {
        case .control(let id), .group(let id), .screen(let id), .gesture(let id): id
        case .application: "application"
        }
    }

    public var description: String { id }
}
