import Foundation
import Glibc
import Testing

/// `touchd speech-module`, the launcher of speech-dispatcher's output module: it sets the capacity of the pipe on its
/// standard output and runs the module in its place (docs/speech-server.md, "Stopping speech on a new touch"). The
/// test holds the pipe's other end, as speech-dispatcher does, and reads the capacity from there once the module runs.
struct SpeechModuleTests {
    /// Runs `touchd speech-module ARGUMENTS` with pipes for its standard input and output. The module given prints
    /// `ready` and waits for its input to close. Returns the capacity of the output pipe seen while the module runs,
    /// and the exit status.
    private func pipeCapacity(_ arguments: [String]) throws -> (capacity: Int32, status: Int32) {
        let process = Process()
        process.executableURL = try TouchdProcess.executable()
        process.arguments = ["speech-module"] + arguments + ["/bin/sh", "-c", "echo ready; read line || true"]
        let output = Pipe()
        let input = Pipe()
        process.standardOutput = output
        process.standardInput = input
        try process.run()
        let reader = output.fileHandleForReading
        var seen = Data()
        while !seen.contains(UInt8(ascii: "\n")) {
            let chunk = reader.availableData
            if chunk.isEmpty { break }
            seen.append(chunk)
        }
        let capacity = fcntl(reader.fileDescriptor, 1032)  // F_GETPIPE_SZ
        try input.fileHandleForWriting.close()
        process.waitUntilExit()
        #expect(String(decoding: seen, as: UTF8.self) == "ready\n")
        return (capacity, process.terminationStatus)
    }

    @Test func theModuleRunsWithAOnePagePipe() throws {
        let run = try pipeCapacity([])
        #expect(run.capacity == 4096)
        #expect(run.status == 0)
    }

    @Test func pipeBytesSetsAnotherCapacity() throws {
        let run = try pipeCapacity(["--pipe-bytes", "65536"])
        #expect(run.capacity == 65536)
        #expect(run.status == 0)
    }

    @Test func withoutAPipeTheModuleStillRunsAndStandardErrorSaysWhy() throws {
        let run = try TouchdProcess.run(["speech-module", "/bin/echo", "--config", "espeak-ng.conf"])
        #expect(run.status == 0)
        #expect(run.standardOutput == "--config espeak-ng.conf\n")
        #expect(
            run.standardError
                == "touchd speech-module: standard output is not a pipe; the module starts with the pipe as it is\n")
    }

    @Test func aMissingModuleExits127WithTheReason() throws {
        let run = try TouchdProcess.run(["speech-module", "/nonexistent/sd_espeak-ng", "espeak-ng.conf"])
        #expect(run.status == 127)
        #expect(run.standardOutput.isEmpty)
        #expect(
            run.errorLines.last
                == "touchd speech-module: cannot run /nonexistent/sd_espeak-ng: No such file or directory")
    }

    @Test func aModuleThatCannotBeRunExits126() throws {
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let module = directory.appendingPathComponent("sd_not_executable").path
        #expect(
            FileManager.default.createFile(
                atPath: module, contents: Data("data\n".utf8), attributes: [.posixPermissions: 0o644]))
        let run = try TouchdProcess.run(["speech-module", module])
        #expect(run.status == 126)
        #expect(run.errorLines.last == "touchd speech-module: cannot run \(module): Permission denied")
    }

    @Test(arguments: [
        (["sd_espeak-ng"], "the module must be an absolute path, not 'sd_espeak-ng'"),
        ([], "Missing expected argument '<module>'"),
        (["--pipe-bytes", "100", "/bin/true"], "--pipe-bytes must be 4096…1048576, not 100"),
        (["--pipe-bytes", "2097152", "/bin/true"], "--pipe-bytes must be 4096…1048576, not 2097152"),
    ])
    func badArgumentsAreRefusedWithUsageErrors(arguments: [String], message: String) throws {
        let run = try TouchdProcess.run(["speech-module"] + arguments)
        #expect(run.status == 64)
        #expect(run.standardOutput.isEmpty)
        #expect(run.standardError.contains("Error: \(message)"))
    }

    /// `--help` before the module is touchd's (scripts/vm/check-install runs it); after the module it is the module's.
    @Test func helpBeforeTheModuleIsTouchdsAndAfterItTheModules() throws {
        let help = try TouchdProcess.run(["speech-module", "--help"])
        #expect(help.status == 0)
        #expect(
            help.standardOutput.contains("USAGE: touchd speech-module [--pipe-bytes <bytes>] <module> [<argument> ...]")
        )
        let passed = try TouchdProcess.run(["speech-module", "/bin/echo", "--help", "--pipe-bytes", "1"])
        #expect(passed.status == 0)
        #expect(passed.standardOutput == "--help --pipe-bytes 1\n")
    }
}
