import ArgumentParser

/// The `touchd` command, the program's entry point.
///
/// Subcommands (`check`, `simulate`, `render`, `run`, `ctl`) go into `subcommands` as they are written. `touchd`
/// alone prints its help.
///
/// The root is a synchronous `ParsableCommand` on purpose: `run` must block SIGHUP, SIGINT and SIGTERM on the main
/// thread before any other thread exists, and an asynchronous `main` would run subcommands on a pool thread while the
/// main thread kept the default handlers (a SIGHUP would then kill the daemon instead of reloading it).
@main
struct Touchd: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "touchd",
        abstract: "A daemon that turns a Linux touchscreen into UIKit-style controls declared in a TOML file.",
        version: version,
        subcommands: [
            Run.self, Check.self, Simulate.self, Render.self, Identify.self, Calibrate.self, Ctl.self, Speak.self,
            SpeechModule.self, GenerateManual.self,
        ]
    )
}
