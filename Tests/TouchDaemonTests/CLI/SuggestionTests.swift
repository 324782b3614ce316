import Foundation
import Testing

@testable import TouchDaemon

/// What a newcomer gets for a name that is almost right, or for a value from the wrong list: a
/// did-you-mean (one helper, `suggestions(for:in:)`), or the names that would do.
@Suite("suggestions for names that are almost right")
struct SuggestionTests {
    static let targets = """
        [targets.kiosk]
        socket = "/run/kiosk.sock"
        responds_to = ["pay"]

        [targets.click]
        socket = "/run/click.sock"
        responds_to = ["pay"]

        """

    /// The problem messages of a file that must be refused.
    static func problems(_ text: String) -> [String] {
        switch ConfigurationLoader.load(text: text, path: "t.toml") {
        case .success: return []
        case .failure(let error): return error.problems.map(\.message)
        }
    }

    @Test(
        "configuration names: idle events, targets, a control event on a gesture, rotation, a rotated output",
        arguments: [
            (
                "[output]\nwidth = 100\nheight = 100\n" + targets
                    + "[idle]\ntimeout_s = 60\nactions = [{ events = [\"idel\"], target = \"kiosk\", action = \"pay\" }]\n",
                "unknown idle event 'idel' (did you mean 'idle'?); idle events: idle, wake"
            ),
            (
                "[output]\nwidth = 100\nheight = 100\n" + targets + "[application]\ntarget = \"kiosq\"\n",
                "unknown target 'kiosq' (did you mean 'kiosk'?); declared targets: click, kiosk"
            ),
            (
                "[output]\nwidth = 100\nheight = 100\n" + targets + "[application]\ntarget = \"browser\"\n",
                "unknown target 'browser'; declared targets: click, kiosk"
            ),
            (
                "[output]\nwidth = 100\nheight = 100\n" + targets
                    + "[[gesture]]\nid = \"admin\"\nkind = \"long_press\"\n"
                    + "actions = [{ events = [\"touchUpInside\"], target = \"kiosk\", action = \"pay\" }]\n",
                "'touchUpInside' is a control event; a gesture's events are began, changed, recognized, ended, "
                    + "cancelled, failed"
            ),
            ("[output]\nwidth = 100\nheight = 100\nrotation = -90\n", "-90 is not one of 0, 90, 180, 270"),
            ("[output]\nwidth = 100\nheight = 100\nrotation = 360\n", "360 is not one of 0, 90, 180, 270"),
            (
                "[output]\nwidth = 1920\nheight = 1080\nrotation = 90\n"
                    + "[[control]]\nid = \"pay\"\nframe = { x = 100, y = 1500, width = 800, height = 200 }\n",
                "the shape lies entirely outside the output (1920×1080); with rotation = 90, [output] width and "
                    + "height are the screen as the UI is drawn, after rotation: did you mean width = 1080, "
                    + "height = 1920?"
            ),
        ])
    func configurationNames(_ text: String, _ message: String) {
        let problems = Self.problems(text)
        #expect(problems.contains(message), "\(problems)")
    }

    @Test("a touch script's verb: mvoe is move")
    func scriptVerb() {
        let report = TouchScript.check("0 down 0 10 10\n50 mvoe 0 20 20\n", context: nil)
        #expect(
            report.problems.map(\.message) == [
                "'mvoe' is not one of down, move, up, cancel, screen (did you mean 'move'?)"
            ])
    }

    @Test("the helper: transpositions are one edit, a unique prefix is a suggestion, close ones come first")
    func helper() {
        #expect(editDistance("mvoe", "move") == 1)
        #expect(editDistance("kitten", "sitting") == 3)
        #expect(closest(to: "--prom", in: ["--json", "--prometheus", "--socket"]) == "--prometheus")
        #expect(closest(to: "--p", in: ["--prometheus"]) == nil)
        #expect(suggestions(for: "statz", in: ["state", "stats", "send"]) == ["state", "stats"])
        #expect(didYouMean("zzz", in: ["state"]) == "")
    }

    @Test(
        "touchd's verbs and options, and render --screen without screens",
        arguments: [
            (["ctl", "status"], "Error: 'status' is not a verb of touchd ctl (did you mean 'stats'?)"),
            (["ctl", "stats", "--prom"], "Error: Unknown option '--prom' (did you mean '--prometheus'?)"),
            (["ctl", "state", "--sockt", "/x"], "Error: Unknown option '--sockt' (did you mean '--socket'?)"),
            (["chekc"], "Error: 'chekc' is not a verb of touchd (did you mean 'check'?)"),
        ])
    func commandLine(_ arguments: [String], _ message: String) throws {
        let run = try TouchdProcess.run(arguments)
        #expect(run.status == 64)
        #expect(run.errorLines.first == message, "\(run.errorLines)")
    }

    @Test("render --screen on a file without screens says so")
    func renderWithoutScreens() throws {
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("t.toml").path
        try "[output]\nwidth = 100\nheight = 100\n".write(toFile: path, atomically: true, encoding: .utf8)
        let run = try TouchdProcess.run(["render", "--config", path, "--screen", "main", "--output", "-"])
        #expect(run.status == 64)
        #expect(
            run.errorLines.first
                == "Error: --screen main: the configuration has no [[screen]], so there is one picture with every "
                + "control; leave --screen out",
            "\(run.errorLines)")
    }
}
