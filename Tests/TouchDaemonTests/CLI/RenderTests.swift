import Foundation
import Glibc
import Testing

@testable import TouchDaemon

/// `touchd render --output`: what it does to whatever already sits at the path (the hostile-input issue, item 5).
@Suite("touchd render --output")
struct RenderTests {
    /// The file type bits of `path`, not following a link (`lstat`); nil when nothing is there.
    static func type(of path: String) -> mode_t? {
        var status = stat()
        guard lstat(path, &status) == 0 else { return nil }
        return status.st_mode & S_IFMT
    }

    /// Files in `directory` whose names start with the writer's temporary prefix: none may be left behind.
    static func leftovers(in directory: URL) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasPrefix(".touchd-output") }
    }

    static func render(to path: String) throws -> TouchdProcess.Run {
        try TouchdProcess.run(["render", "--config", TestSupport.kioskConfig, "--output", path])
    }

    @Test("a new file and a regular file are written whole; the replaced file keeps its mode")
    func regularFile() throws {
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("layout.svg").path
        let created = try Self.render(to: path)
        #expect(created.status == 0)
        #expect(created.standardOutput.hasPrefix("wrote \(path): screen "))
        let first = try String(contentsOfFile: path, encoding: .utf8)
        #expect(first.hasPrefix("<?xml"))
        #expect(first.hasSuffix("</svg>\n"))
        // A new file: 0666 less the umask the command inherited (this process's, read without setting it).
        let umaskLine = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
            .split(separator: "\n").first { $0.hasPrefix("Umask:") }
        let mask = try #require(
            umaskLine.flatMap { mode_t($0.dropFirst(6).trimmingCharacters(in: .whitespaces), radix: 8) })
        var fresh = stat()
        #expect(stat(path, &fresh) == 0)
        #expect(fresh.st_mode & 0o7777 == 0o666 & ~mask)

        try Data("old".utf8).write(to: URL(fileURLWithPath: path))
        #expect(chmod(path, 0o640) == 0)
        let replaced = try Self.render(to: path)
        #expect(replaced.status == 0)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == first)
        var status = stat()
        #expect(stat(path, &status) == 0)
        #expect(status.st_mode & 0o7777 == 0o640)
        #expect(try Self.leftovers(in: directory) == [])
    }

    @Test("a symbolic link to a regular file: the file gets the SVG, the link stays a link")
    func throughLink() throws {
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("real.svg").path
        let link = directory.appendingPathComponent("link.svg").path
        try Data("old".utf8).write(to: URL(fileURLWithPath: file))
        #expect(symlink("real.svg", link) == 0)
        let run = try Self.render(to: link)
        #expect(run.status == 0)
        #expect(run.standardError == "")
        #expect(Self.type(of: link) == S_IFLNK)
        #expect(Self.type(of: file) == S_IFREG)
        #expect(try String(contentsOfFile: file, encoding: .utf8).hasPrefix("<?xml"))
        // realpath names the file the way the kernel resolves it (the temporary directory may itself be a link).
        let resolved = try #require(realpath(file, nil))
        defer { free(resolved) }
        #expect(run.standardOutput.hasPrefix("wrote \(link) (the file it links to, \(String(cString: resolved))): "))
        #expect(try Self.leftovers(in: directory) == [])
    }

    /// As root with fs.protected_symlinks=1, another user's `ln -s /run/victim /tmp/layout.svg` made
    /// `touchd render --output /tmp/layout.svg` replace /run/victim: realpath followed the link, which the kernel would
    /// not have. Giving the link away takes root; as anyone else, the test has nothing to give.
    @Test("a link in a sticky world-writable directory is followed only if it is the caller's or the directory owner's")
    func protectedSymlinks() throws {
        guard geteuid() == 0 else { return }
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let shared = directory.appendingPathComponent("shared").path
        #expect(mkdir(shared, 0o755) == 0)
        #expect(chmod(shared, 0o1777) == 0)
        let victim = directory.appendingPathComponent("victim").path
        try Data("old".utf8).write(to: URL(fileURLWithPath: victim))
        let link = shared + "/layout.svg"
        #expect(symlink(victim, link) == 0)
        #expect(lchown(link, 65_534, 65_534) == 0)
        let resolved = try #require(realpath(shared, nil))
        let sharedResolved = String(cString: resolved)
        free(resolved)

        let refused = try Self.render(to: link)
        #expect(refused.status == ExitStatus.cannotCreate)
        #expect(refused.standardOutput == "")
        #expect(
            refused.errorLines == [
                "\(link): error: refusing to follow the symbolic link \(sharedResolved)/layout.svg: it belongs to uid "
                    + "65534, and sits in \(sharedResolved), a sticky directory anyone can write to (mode 1777, owner "
                    + "uid 0); such a link is followed only when it belongs to the user writing (uid 0) or to the "
                    + "directory's owner, the rule of the kernel's fs.protected_symlinks, since anyone can plant one "
                    + "there pointing at any file; remove the link or write elsewhere"
            ])
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "old")
        #expect(Self.type(of: link) == S_IFLNK)
        #expect(try Self.leftovers(in: URL(fileURLWithPath: shared)) == [])

        // The same link reached through a directory link on the way is refused too.
        let alias = directory.appendingPathComponent("alias").path
        #expect(symlink(shared, alias) == 0)
        #expect(try Self.render(to: alias + "/layout.svg").status == ExitStatus.cannotCreate)
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "old")

        // The directory's owner's link is followed, as the kernel would.
        #expect(chown(shared, 65_534, 65_534) == 0)
        let owners = try Self.render(to: link)
        #expect(owners.status == 0)
        #expect(try String(contentsOfFile: victim, encoding: .utf8).hasPrefix("<?xml"))

        // The caller's own link is followed, as before.
        #expect(chown(shared, 0, 0) == 0)
        try Data("old".utf8).write(to: URL(fileURLWithPath: victim))
        #expect(lchown(link, 0, 0) == 0)
        let own = try Self.render(to: link)
        #expect(own.status == 0)
        #expect(own.standardError == "")
        #expect(try String(contentsOfFile: victim, encoding: .utf8).hasPrefix("<?xml"))
        #expect(Self.type(of: link) == S_IFLNK)
    }

    @Test("a link to nothing is refused: no file is created where it points")
    func danglingLink() throws {
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let link = directory.appendingPathComponent("link.svg").path
        #expect(symlink("missing.svg", link) == 0)
        let run = try Self.render(to: link)
        #expect(run.status == ExitStatus.cannotCreate)
        #expect(run.standardOutput == "")
        #expect(
            run.errorLines == [
                "\(link): error: refusing to write: it is a symbolic link to nothing (No such file or directory); "
                    + "render does not create files through links"
            ])
        #expect(Self.type(of: directory.appendingPathComponent("missing.svg").path) == nil)
        #expect(Self.type(of: link) == S_IFLNK)
    }

    @Test("a FIFO is refused without opening it (nothing blocks) and stays a FIFO")
    func fifo() throws {
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("fifo").path
        #expect(mkfifo(path, 0o600) == 0)
        let run = try Self.render(to: path)
        #expect(run.status == ExitStatus.cannotCreate)
        #expect(run.standardOutput == "")
        #expect(
            run.errorLines == [
                "\(path): error: refusing to write: it is a FIFO; render writes regular files only "
                    + "(give - for standard output)"
            ])
        #expect(Self.type(of: path) == S_IFIFO)
        #expect(try Self.leftovers(in: directory) == [])
    }

    /// The device is reached through a link in a temporary directory, and directly only as a node made there, so that
    /// a regression replaces a test file and never the machine's /dev/null.
    @Test("a character device is refused, directly and through a link, and stays a device")
    func characterDevice() throws {
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let link = directory.appendingPathComponent("null.svg").path
        #expect(symlink("/dev/null", link) == 0)
        let run = try Self.render(to: link)
        #expect(run.status == ExitStatus.cannotCreate)
        #expect(
            run.errorLines == [
                "\(link): error: refusing to write: it is a symbolic link to /dev/null, a character device; render "
                    + "writes regular files only (give - for standard output)"
            ])
        #expect(Self.type(of: link) == S_IFLNK)
        #expect(Self.type(of: "/dev/null") == S_IFCHR)

        // Making a device node needs CAP_MKNOD (root outside a restricted container); without it, the link is the test.
        let node = directory.appendingPathComponent("device").path
        // Device 1:3 (null), in the kernel's encoding for small numbers: major << 8 | minor (makedev is a C macro).
        guard mknod(node, S_IFCHR | 0o600, dev_t(1 << 8 | 3)) == 0 else { return }
        let direct = try Self.render(to: node)
        #expect(direct.status == ExitStatus.cannotCreate)
        #expect(
            direct.errorLines == [
                "\(node): error: refusing to write: it is a character device; render writes regular files only "
                    + "(give - for standard output)"
            ])
        #expect(Self.type(of: node) == S_IFCHR)
        #expect(try Self.leftovers(in: directory) == [])
    }

    @Test("- writes the SVG alone to standard output; the notes go to standard error")
    func standardOutput() throws {
        let run = try Self.render(to: "-")
        #expect(run.status == 0)
        #expect(run.standardOutput.hasPrefix("<?xml"))
        #expect(run.standardOutput.hasSuffix("</svg>\n"))
        #expect(run.errorLines.first == "wrote standard output: screen checkout")
    }

    @Test("filter mode: to_app = false controls are cross-hatched and labelled, and the legend says what it means")
    func filterMarks() throws {
        let config = TestSupport.packageRoot.appendingPathComponent("config/filter-kiosk.toml").path
        let run = try TouchdProcess.run(["render", "--config", config, "--output", "-"])
        #expect(run.status == 0)
        let svg = run.standardOutput
        #expect(svg.components(separatedBy: "class=\"to-app-false\"").count == 2)  // the bezel, once
        #expect(svg.contains("button · touchd only"))
        #expect(svg.contains("never reaches the application (to_app = false)"))
        // Without filter mode nothing is marked.
        let plain = try Self.render(to: "-").standardOutput
        #expect(!plain.contains("to-app-false") && !plain.contains("touchd only"))
    }

    @Test("a directory is refused")
    func directory() throws {
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let run = try Self.render(to: directory.path)
        #expect(run.status == ExitStatus.cannotCreate)
        #expect(run.standardError.contains("refusing to write: it is a directory"))
        #expect(Self.type(of: directory.path) == S_IFDIR)
    }
}
