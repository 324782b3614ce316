import TouchModel

extension Configuration {
    /// `[accessibility]`: explore by touch with speech (docs/accessibility.md). The times are microseconds.
    struct Accessibility: Hashable, Sendable {
        var enabled = Schema.accessibility.enabled.defaultValue
        /// The `[[gesture]]` whose recognition enters speech mode, and leaves it.
        var startGesture: String?
        /// Plugging headphones in enters speech mode; unplugging leaves it when they started it.
        var startOnHeadphones = Schema.accessibility.startOnHeadphones.defaultValue
        /// 0: never.
        var exitAfterIdle = Schema.accessibility.exitAfterIdle.defaultValue
        /// nil: speech-dispatcher's own (``resolvedSpeechSocket(environment:)``).
        var speechSocket: String?
        var introduction = Schema.accessibility.introduction.defaultValue
        var farewell = Schema.accessibility.farewell.defaultValue
        var doubleTapTimeout = Schema.accessibility.doubleTapTimeout.defaultValue
        var doubleTapSlopMillimetres = Schema.accessibility.doubleTapSlop.defaultValue
        var hintDelay = Schema.accessibility.hintDelay.defaultValue
        var swipeDistanceMillimetres = Schema.accessibility.swipeDistance.defaultValue
        var swipeTime = Schema.accessibility.swipeTime.defaultValue
        var hysteresis = Schema.accessibility.hysteresis.defaultValue
        var pixelsPerMillimetre = Schema.accessibility.pixelsPerMillimetre.defaultValue
        /// The language of a screen without its own `lang`.
        var language = Schema.accessibility.language.defaultValue
        /// Touches that begin in one of these reach the application in speech mode too.
        var passthrough: [Rect] = []

        /// The model's settings, distances in output pixels.
        var exploreSettings: ExploreByTouch.Settings {
            ExploreByTouch.Settings(
                doubleTapTimeout: doubleTapTimeout, doubleTapSlop: doubleTapSlopMillimetres * pixelsPerMillimetre,
                swipeDistance: swipeDistanceMillimetres * pixelsPerMillimetre, swipeTime: swipeTime,
                hysteresis: hysteresis, hintDelay: hintDelay)
        }

        /// Where the speech server listens: `speech_socket`, else speech-dispatcher's own rule (`SPEECHD_ADDRESS`
        /// as `unix_socket:PATH`, else `$XDG_RUNTIME_DIR/speech-dispatcher/speechd.sock`); nil when none of them
        /// gives an absolute path (a system service without `XDG_RUNTIME_DIR` must say `speech_socket`).
        func resolvedSpeechSocket(environment: [String: String]) -> String? {
            if let speechSocket { return speechSocket }
            if let address = environment["SPEECHD_ADDRESS"], address.hasPrefix("unix_socket:") {
                let path = String(address.dropFirst("unix_socket:".count))
                if path.hasPrefix("/") { return path }
            }
            if let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") {
                return (runtime.hasSuffix("/") ? runtime : runtime + "/") + "speech-dispatcher/speechd.sock"
            }
            return nil
        }
    }

    /// What speech mode says for a control or an element.
    struct Speech: Hashable, Sendable {
        var label: String?
        var hint: String?
    }

    /// `[[element]]`: something the application draws that the customer must reach.
    struct Element: Hashable, Sendable {
        var id: String
        var shape: Shape
        var speech: Speech
        var role: String
        /// Where activation taps the application (the shape's centre unless declared).
        var activationPoint: Point
        /// nil: every screen.
        var screen: String?
        var isPrivate: Bool
    }

    /// A screen's `title` and `lang`.
    struct ScreenSpeech: Hashable, Sendable {
        var title: String?
        var language: String?
    }
}

/// One thing speech mode reads out on a screen: a touchd control or an application element.
struct SpeechItem: Hashable, Sendable {
    enum Source: Hashable, Sendable {
        case control(String)
        /// An index into ``Configuration/elements``.
        case element(Int)
    }

    var source: Source
    var shape: Shape
    /// Which of two overlapping items a finger finds (``ExploreByTouch/Item/rank``): controls above elements, and
    /// among controls the scene's order (higher `z`, then later declared).
    var rank: Int
}

extension Configuration {
    /// What speech mode says a control is.
    static func role(of control: Control) -> String {
        switch control.kind {
        case .button: "button"
        case .toggle: "switch"
        case .slider: "slider"
        case .segmented: "adjustable"
        }
    }

    /// The items of `screen` (nil: no screens declared) in reading order: rows from the top (an item whose top lies
    /// above the middle of a row's first item is in that row), each from the left.
    func speechItems(onScreen screen: String?) -> [SpeechItem] {
        let contexts = LayoutChecks.contexts(of: controls, groups: groups, screens: screens)
        var items: [SpeechItem] = []
        for (index, (control, context)) in zip(controls, contexts).enumerated()
        where screen.map(context.screens.contains) ?? true {
            // z is −1000…1000 and there are at most 10,000 controls: ranks stay far from overflowing.
            let rank = (1 << 40) + (control.z + 1_000) * 100_000 + index
            items.append(SpeechItem(source: .control(control.id), shape: control.shape, rank: rank))
        }
        for (index, element) in elements.enumerated() where element.screen == nil || element.screen == screen {
            items.append(SpeechItem(source: .element(index), shape: element.shape, rank: index))
        }
        return Self.readingOrder(items.map(\.shape.boundingBox)).map { items[$0] }
    }

    /// Indices of `boxes` in reading order.
    static func readingOrder(_ boxes: [Rect]) -> [Int] {
        let byTop = boxes.indices.sorted { (boxes[$0].minY, boxes[$0].minX, $0) < (boxes[$1].minY, boxes[$1].minX, $1) }
        var rows: [[Int]] = []
        for index in byTop {
            if let first = rows.last?.first, boxes[index].minY < boxes[first].minY + boxes[first].height / 2 {
                rows[rows.count - 1].append(index)
            } else {
                rows.append([index])
            }
        }
        return rows.flatMap { row in row.sorted { (boxes[$0].minX, $0) < (boxes[$1].minX, $1) } }
    }

    /// `check`'s lines: each screen's reading order, as speech mode walks it with swipes.
    var readingOrderSummary: [String] {
        guard accessibility.enabled else { return [] }
        let screenIDs: [String?] = screens.isEmpty ? [nil] : screens.map(\.id)
        return screenIDs.map { screen in
            let names = speechItems(onScreen: screen).map { item in
                switch item.source {
                case .control(let id): controlSpeech[id]?.label.map { "\"\($0)\" (\(id))" } ?? id
                case .element(let index):
                    elements[index].speech.label.map { "\"\($0)\" (\(elements[index].id))" }
                        ?? elements[index].id
                }
            }
            let title = screen.flatMap { screenSpeech[$0]?.title }.map { " \"\($0)\"" } ?? ""
            let language = screen.flatMap { screenSpeech[$0]?.language }.map { " [\($0)]" } ?? ""
            return "reading order of \(screen.map { "screen \($0)" } ?? "the output")\(title)\(language): "
                + (names.isEmpty ? "nothing to read" : names.joined(separator: ", "))
        }
    }
}
