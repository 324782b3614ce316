import ArgumentParser
import Foundation

/// `touchd render`: a picture of the layout.
struct Render: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Draw the layout of a configuration as SVG.",
        discussion: """
            Draws the output rectangle, groups, controls (kind, id, initial state), each control's drag outset and \
            the gesture regions, in output pixels, so the picture can be laid over a screenshot of the UI.
            """
    )

    @OptionGroup var options: ConfigOption

    @Option(name: .long, help: ArgumentHelp("Where to write the SVG.", valueName: "file.svg"))
    var output: String

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The screen to draw (its controls and those in no screen), or 'all'. Default: the initial screen.",
            valueName: "id"))
    var screen: String?

    func run() throws {
        let configuration = try options.load()
        let screens = configuration.screens.map(\.id)
        var shown = screen == "all" ? nil : (screen ?? screens.first)
        if let screen, screen != "all", !screens.contains(screen) {
            let known = screens.isEmpty ? "none" : screens.joined(separator: ", ")
            throw ValidationError("unknown screen '\(screen)'; the configuration has: \(known)")
        }
        if screens.isEmpty { shown = nil }
        let svg = LayoutSVG(configuration: configuration, screen: shown).render()
        do {
            try Data(svg.utf8).write(to: URL(fileURLWithPath: output), options: .atomic)
        } catch {
            printError("\(output): error: cannot write: \(error.localizedDescription)")
            throw ExitCode(ExitStatus.cannotCreate)
        }
        print("wrote \(output): " + (shown.map { "screen \($0)" } ?? "every screen"))
        let others = screens.filter { $0 != shown }
        if shown != nil, !others.isEmpty {
            print(
                "other screens: \(others.joined(separator: ", ")) (draw one with --screen ID, or all with --screen all)"
            )
        }
    }
}
