import ArgumentParser

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

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Where to write the SVG: a regular file (replaced whole; a symbolic link is followed to one), or - for "
                + "standard output. Devices, FIFOs and sockets are refused.",
            valueName: "file.svg"))
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
        let destination: OutputFile.Destination
        switch OutputFile.write(Array(svg.utf8), to: output) {
        case .failure(let failure):
            printError("\(output): error: \(failure)")
            throw ExitCode(ExitStatus.cannotCreate)
        case .success(let written): destination = written
        }
        // With the SVG on standard output, the notes go to standard error so that the picture stays whole.
        func note(_ line: String) {
            if destination == .standardOutput { printError(line) } else { print(line) }
        }
        let what = shown.map { "screen \($0)" } ?? "every screen"
        switch destination {
        case .standardOutput: note("wrote standard output: \(what)")
        case .file(output): note("wrote \(output): \(what)")
        case .file(let target): note("wrote \(output) (the file it links to, \(target)): \(what)")
        }
        let others = screens.filter { $0 != shown }
        if shown != nil, !others.isEmpty {
            note(
                "other screens: \(others.joined(separator: ", ")) (draw one with --screen ID, or all with --screen all)"
            )
        }
    }
}
