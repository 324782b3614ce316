import Foundation
import Testing

@testable import TouchDaemon

/// `touchd calibrate` at its edge, without a touchscreen (the fit and the edit are tested on their own; the VM run
/// `touchd-e2e --calibrate` touches a real one).
@Suite("touchd calibrate: the command")
struct CalibrateCommandTests {
    static let text = """
        # A comment that must survive.
        [output]
        width = 1280
        height = 800
        """

    @Test("a timeout cancels without touching the file: exit 1 (or 69 where libinput cannot start)")
    func timeout() throws {
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("touchd.toml").path
        try Self.text.write(toFile: path, atomically: true, encoding: .utf8)
        let run = try TouchdProcess.run(["calibrate", "--config", path, "--timeout", "1", "--no-display", "--json"])
        #expect(run.status == 1 || run.status == 69, "\(run.standardError)")
        if run.status == 1 {
            #expect(run.standardOutput == "{\"type\":\"cancelled\",\"reason\":\"--timeout 1 s\"}\n")
            #expect(run.standardError.contains("cancelled (--timeout 1 s): nothing written"))
        }
        #expect(try String(contentsOfFile: path, encoding: .utf8) == Self.text)
    }

    @Test(
        "bad options are refused with exit 64",
        arguments: [
            ["--max-error-px", "0"], ["--max-error-px", "nan"], ["--timeout", "-1"], ["--display-rotation", "45"],
        ])
    func badOptions(_ options: [String]) throws {
        let run = try TouchdProcess.run(["calibrate", "--config", "/nonexistent.toml"] + options)
        #expect(run.status == 64, "\(run.standardError)")
    }

    @Test("an invalid configuration exits 78 before anything is opened")
    func invalid() throws {
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("broken.toml").path
        try "[output]\nwidth = 0\n".write(toFile: path, atomically: true, encoding: .utf8)
        let run = try TouchdProcess.run(["calibrate", "--config", path, "--timeout", "1"])
        #expect(run.status == 78)
        #expect(run.standardError.contains("error"))
    }
}
