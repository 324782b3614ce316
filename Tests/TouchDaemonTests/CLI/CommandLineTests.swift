import ArgumentParser
import Testing

@testable import TouchDaemon

@Suite("touchd command line")
struct CommandLineTests {
    @Test("--version prints the version the code declares and exits successfully")
    func version() throws {
        let error = #expect(throws: (any Error).self) {
            _ = try Touchd.parseAsRoot(["--version"])
        }
        let thrown = try #require(error)
        #expect(Touchd.message(for: thrown) == "0.1.0")
        #expect(Touchd.message(for: thrown) == Touchd.version)
        #expect(Touchd.exitCode(for: thrown) == .success)
    }

    @Test("--help shows the one-sentence abstract")
    func help() {
        let abstract = Touchd.configuration.abstract
        #expect(abstract.contains("Linux touchscreen"))
        // Wide enough that the abstract is not wrapped.
        let help = Touchd.helpMessage(columns: 1000)
        #expect(help.contains("OVERVIEW: \(abstract)"))
        #expect(help.contains("USAGE: touchd"))
    }
}
