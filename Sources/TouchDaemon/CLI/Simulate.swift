import ArgumentParser
import Foundation
import TouchModel

/// `touchd simulate`: the whole model on scripted or recorded touches, as JSON Lines.
struct Simulate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run a configuration on scripted or recorded touches and print what the controls did.",
        discussion: """
            INPUT is a touch script (one sample per line: TIME_MS down|move|up|cancel CONTACT [X Y], in output \
            pixels) or a YAML file written by `libinput record`, whose device axes are mapped onto the configured \
            output. Prints one JSON object per line: control events, resolved actions and diagnostics, in the \
            order they happen. Nothing is executed.
            """
    )

    @OptionGroup var options: ConfigOption

    @Argument(help: ArgumentHelp("A touch script or a `libinput record` YAML file.", valueName: "input"))
    var input: String

    func run() throws {
        let configuration = try options.load()
        let frames = try readFrames(configuration: configuration)
        var simulation: Simulation
        do {
            simulation = try Simulation(configuration: configuration)
        } catch {
            for problem in error.problems { printError("\(options.config): error: \(problem)") }
            throw ExitCode(ExitStatus.configuration)
        }
        for line in simulation.run(frames) { print(line) }
    }

    private func readFrames(configuration: Configuration) throws -> [Frame] {
        let text: String
        switch ConfigurationSource.read(path: input, limit: 64 << 20) {
        case .success(let contents): text = contents
        case .failure(let problem):
            printError(problem.formatted(path: input))
            throw ExitCode(ExitStatus.data)
        }
        if LibinputRecording.looksLikeRecording(text) {
            switch LibinputRecording.frames(from: text, output: configuration.output) {
            case .success(let frames): return frames
            case .failure(let problem):
                printError("\(input): error: \(problem.message)")
                throw ExitCode(ExitStatus.data)
            }
        }
        switch TouchScript.parse(text) {
        case .success(let frames): return frames
        case .failure(let problem):
            printError("\(input):\(problem.line):1: error: \(problem.message)")
            throw ExitCode(ExitStatus.data)
        }
    }
}
