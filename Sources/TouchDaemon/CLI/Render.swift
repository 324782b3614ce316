import ArgumentParser

/// `touchd render`: a picture of the layout.
struct Render: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Draw the layout of a configuration as SVG.",
        discussion: """
            Draws the output rectangle, groups, controls (kind, id, initial state), each control's drag outset and \
            the gesture regions as they run (a gesture on a control or group covers that region, an edge swipe its \
            strip, on the screens where it is live) and the application's elements declared for explore by touch \
            (with the point a double tap taps), in output pixels, on a transparent background so the picture \
            can be laid over a screenshot of the UI (or give the screenshot with --background). Labels never \
            overlap each other or the legend.
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
            "The screen to draw (its controls and those in no screen), or 'all' for one file per screen, each named "
                + "after --output with -ID before its extension (layout.svg: layout-checkout.svg, …). 'all' needs a "
                + "file: standard output holds one SVG document. Default: the initial screen.",
            valueName: "id"))
    var screen: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "A screenshot (PNG, JPEG, GIF or WebP, at most 32 MiB) to draw under the layout, stretched onto the "
                + "output. It is embedded in the SVG (base64), so the SVG stands alone and never names the path. "
                + "Default: a transparent background.",
            valueName: "image"))
    var background: String?

    func validate() throws {
        if screen == "all", output == "-" {
            throw ValidationError(
                "--screen all writes one file per screen, and standard output holds one SVG document: give "
                    + "--output FILE.svg (FILE-ID.svg for each screen), or --screen ID with --output -")
        }
    }

    /// The file for `screen` when `--screen all`: `-ID` before the last extension of the file name, if it has one.
    static func path(_ output: String, screen: String) -> String {
        let slash = output.lastIndex(of: "/")
        let name = slash.map { output[output.index(after: $0)...] } ?? output[...]
        if let dot = name.lastIndex(of: "."), dot != name.startIndex {
            return String(output[..<dot]) + "-" + screen + String(output[dot...])
        }
        return output + "-" + screen
    }

    func run() throws {
        let configuration = try options.load()
        let screens = configuration.screens.map(\.id)
        if let screen, screen != "all", !screens.contains(screen) {
            guard !screens.isEmpty else {
                throw ValidationError(
                    "--screen \(screen): the configuration has no [[screen]], so there is one picture with every "
                        + "control; leave --screen out")
            }
            throw ValidationError(
                "unknown screen '\(screen)'\(didYouMean(screen, in: screens)); the configuration has: "
                    + "\(screens.joined(separator: ", ")) (or all)")
        }
        var image: BackgroundImage?
        if let background {
            switch BackgroundImage.load(path: background) {
            case .failure(let failure):
                printError("\(background): error: \(failure)")
                throw ExitCode(failure.status)
            case .success(let loaded): image = loaded
            }
        }
        // One picture per screen for all; a file without screens has one picture, every control on it.
        let pictures: [(screen: String?, path: String)]
        if screens.isEmpty {
            pictures = [(nil, output)]
        } else if screen == "all" {
            pictures = screens.map { ($0, Self.path(output, screen: $0)) }
        } else {
            pictures = [(screen ?? screens[0], output)]
        }
        // With the SVG on standard output, the notes go to standard error so that the picture stays whole.
        func note(_ line: String) {
            if output == "-" { printError(line) } else { print(line) }
        }
        if let image, let size = image.size,
            Double(size.width) != configuration.output.width || Double(size.height) != configuration.output.height
        {
            note(
                "note: the background is \(size.width)×\(size.height), stretched onto the output "
                    + "(\(LayoutSVG.number(configuration.output.width))×\(LayoutSVG.number(configuration.output.height)))"
            )
        }
        for picture in pictures {
            let layout = LayoutSVG(configuration: configuration, screen: picture.screen, background: image)
            let drawn = layout.draw()
            let destination: OutputFile.Destination
            switch OutputFile.write(Array(drawn.svg.utf8), to: picture.path) {
            case .failure(let failure):
                printError("\(picture.path): error: \(failure)")
                throw ExitCode(ExitStatus.cannotCreate)
            case .success(let written): destination = written
            }
            let what = picture.screen.map { "screen \($0)" } ?? "every control (no screens)"
            switch destination {
            case .standardOutput: note("wrote standard output: \(what)")
            case .file(picture.path): note("wrote \(picture.path): \(what)")
            case .file(let target): note("wrote \(picture.path) (the file it links to, \(target)): \(what)")
            }
            if !drawn.omitted.isEmpty {
                let named = drawn.omitted.prefix(5).joined(separator: ", ")
                let more = drawn.omitted.count > 5 ? " and \(drawn.omitted.count - 5) more" : ""
                note("note: no room for \(drawn.omitted.count) label(s): \(named)\(more) (see the SVG's <desc>)")
            }
        }
        let others = screens.filter { $0 != pictures.first?.screen }
        if pictures.count == 1, pictures[0].screen != nil, !others.isEmpty {
            note(
                "other screens: \(others.joined(separator: ", ")) (draw one with --screen ID, or all with --screen all)"
            )
        }
    }
}
