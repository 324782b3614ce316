import ArgumentParser
import CLinux
import Glibc

/// `touchd speech-module`: starts a speech-dispatcher output module with a small pipe to the server, so that a new
/// touch silences speech sooner (docs/speech-server.md, "Stopping speech on a new touch").
///
/// speech-dispatcher 0.11 reads its module's output one byte per `read(2)`, and after a `CANCEL` it plays on until it
/// has read and dropped everything the module wrote before its `703`: with the pipe's default 64 KiB, up to 1.5 s of
/// espeak-ng's audio. With one page the module cannot run ahead by more than about 90 ms of audio, and the server
/// reaches the `703` soon after the module stopped. The module is exec'd in this process, so the server keeps its
/// pid and its pipes; nothing of touchd stays behind.
struct SpeechModule: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "speech-module",
        abstract: "Start a speech-dispatcher output module with a small pipe to the server, for a prompt CANCEL.",
        discussion: """
            For speechd.conf's AddModule line, through a launcher such as /usr/lib/touchd/sd_espeak-ng \
            (scripts/install and the .deb ship it): sets the capacity of the pipe on standard output (the module's \
            output to speech-dispatcher) to --pipe-bytes, then runs MODULE with its arguments in its place. \
            speech-dispatcher plays on after a CANCEL until it has read everything the module wrote before it \
            stopped; a one-page pipe keeps that short. When standard output is not a pipe, or its capacity cannot be \
            changed, it says so on standard error and runs MODULE anyway: speech then works as without it. It writes \
            nothing on standard output, which is the module's. Exits 127 when MODULE does not exist and 126 when it \
            cannot be run. docs/speech-server.md says how to set it up.
            """
    )

    @Option(
        name: .customLong("pipe-bytes"),
        help: ArgumentHelp(
            "The capacity of the module's output pipe, \(minimumBytes)–\(maximumBytes) (the kernel rounds it up to a "
                + "power of two pages; default \(minimumBytes), one page; Linux's own default is 65536).",
            valueName: "bytes"))
    var pipeBytes: Int = minimumBytes

    @Argument(
        help: ArgumentHelp(
            "The module's path, absolute (e.g. /usr/lib/speech-dispatcher-modules/sd_espeak-ng).", valueName: "module"))
    var module: String

    @Argument(
        parsing: .captureForPassthrough,
        help: ArgumentHelp(
            "The module's arguments, passed on as they are (speech-dispatcher passes the module's configuration file).",
            valueName: "argument"))
    var arguments: [String] = []

    static let minimumBytes = 4096
    static let maximumBytes = 1_048_576

    func validate() throws {
        guard (Self.minimumBytes...Self.maximumBytes).contains(pipeBytes) else {
            throw ValidationError("--pipe-bytes must be \(Self.minimumBytes)…\(Self.maximumBytes), not \(pipeBytes)")
        }
        guard module.hasPrefix("/") else {
            throw ValidationError("the module must be an absolute path, not '\(module)'")
        }
    }

    func run() throws {
        if let problem = Self.shrinkPipe(STDOUT_FILENO, to: pipeBytes) {
            Self.warn("\(problem); the module starts with the pipe as it is")
        }
        let argv = ([module] + arguments).map { strdup($0) } + [nil]
        execv(module, argv)
        let code = errno
        for argument in argv { free(argument) }
        Self.warn("cannot run \(module): \(String(cString: strerror(code)))")
        throw ExitCode(code == ENOENT ? 127 : 126)
    }

    /// Sets the capacity of the pipe `fd` to `bytes`: nil when done, else what stood in the way.
    static func shrinkPipe(_ fd: Int32, to bytes: Int) -> String? {
        var status = stat()
        guard fstat(fd, &status) == 0 else {
            return "standard output: \(String(cString: strerror(errno)))"
        }
        guard status.st_mode & S_IFMT == S_IFIFO else { return "standard output is not a pipe" }
        guard let requested = Int32(exactly: bytes), touchd_set_pipe_size(fd, requested) >= 0 else {
            return "cannot set the output pipe's capacity to \(bytes) bytes: \(String(cString: strerror(errno)))"
        }
        return nil
    }

    private static func warn(_ text: String) {
        let line = "touchd speech-module: \(text)\n"
        _ = line.withCString { write(STDERR_FILENO, $0, strlen($0)) }
    }
}
