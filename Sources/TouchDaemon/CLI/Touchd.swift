import ArgumentParser

/// The `touchd` command, the program's entry point.
///
/// Subcommands (`check`, `simulate`, `render`, `run`, `ctl`) go into `subcommands` as they are written. The root is
/// an `AsyncParsableCommand` so that asynchronous subcommands such as `run` can hang off it. `touchd` alone prints its
/// help.
@main
struct Touchd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "touchd",
        abstract: "A daemon that turns a Linux touchscreen into UIKit-style controls declared in a TOML file.",
        version: version,
        subcommands: [Check.self, Simulate.self, Render.self]
    )
}
