import Foundation
import Glibc
import Testing

@testable import TouchDaemon

/// The control socket's listening socket: standalone creation (K10) and the checks on a passed socket (K11).
@Suite(.serialized)
struct ControlListenerTests {
    @Test func createsTheDirectoryAndASocketWithMode0660ThatItRemovesAtClose() throws {
        let root = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        let path = root.path + "/run/control.sock"
        var warnings: [String] = []
        let socket = try ControlListener.create(path: path, group: "nogroup") { warnings.append($0) }.get()
        #expect(warnings.isEmpty)
        #expect(!socket.activated)
        #expect(socket.path == path)

        var status = stat()
        #expect(lstat(root.path + "/run", &status) == 0)
        #expect(status.st_mode & S_IFMT == S_IFDIR)
        #expect(status.st_mode & 0o7777 == 0o750)
        #expect(lstat(path, &status) == 0)
        #expect(status.st_mode & S_IFMT == S_IFSOCK)
        #expect(status.st_mode & 0o7777 == 0o660)
        if let nogroup = ControlListener.groupID(named: "nogroup") { #expect(status.st_gid == nogroup) }
        #expect(fcntl(socket.fileDescriptor, F_GETFD) & FD_CLOEXEC != 0)
        #expect(fcntl(socket.fileDescriptor, F_GETFL) & O_NONBLOCK != 0)

        // It listens: a client connects at once.
        guard case .connected(let client) = UnixSocket.connect(to: path, type: .stream) else {
            Issue.record("cannot connect to the new socket")
            return
        }
        close(client)
        socket.close()
        #expect(lstat(path, &status) != 0 && errno == ENOENT)
    }

    @Test func refusesALiveSocketAndANonSocketButReplacesAStaleOne() throws {
        let root = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        let path = root.path + "/control.sock"

        let live = try ControlListener.create(path: path, group: nil).get()
        #expect(
            ControlListener.create(path: path, group: nil).failureMessage
                == "another process is listening on \(path)")
        // Closing the descriptor without removing the file leaves a stale socket, which the next start replaces. The
        // shutdown first: a child that another test forks at this moment holds a copy of the descriptor until its exec,
        // and would keep the socket listening past the close (seen once in CI); a shut-down socket refuses connections
        // whoever holds it.
        shutdown(live.fileDescriptor, Int32(SHUT_RDWR))
        close(live.fileDescriptor)
        var status = stat()
        #expect(lstat(path, &status) == 0)
        let replacement = try ControlListener.create(path: path, group: nil).get()
        // The first socket's close() must not remove the replacement's file: it is another file now. (Its descriptor
        // is closed already; the number may be the replacement's now, so only the file part runs.)
        ControlListener.Socket(fileDescriptor: -1, path: path, activated: false, identity: live.identity).close()
        #expect(lstat(path, &status) == 0)
        replacement.close()

        #expect(FileManager.default.createFile(atPath: path, contents: Data("x".utf8)))
        #expect(
            ControlListener.create(path: path, group: nil).failureMessage
                == "\(path) exists and is not a socket; refusing to replace it")
        #expect(FileManager.default.fileExists(atPath: path))
    }

    @Test func refusesAnUnsafeDirectoryOrPath() throws {
        let root = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }

        let open = root.path + "/open"
        #expect(mkdir(open, 0o755) == 0)
        #expect(chmod(open, 0o775) == 0)
        #expect(
            ControlListener.create(path: open + "/c.sock", group: nil).failureMessage
                == "\(open) is writable by group or others (mode 775); refusing to use it")

        let other = root.path + "/other"
        #expect(mkdir(other, 0o750) == 0)
        #expect(chown(other, 65534, 65534) == 0)
        #expect(
            ControlListener.create(path: other + "/c.sock", group: nil).failureMessage
                == "\(other) is owned by uid 65534, neither touchd (\(geteuid())) nor root; refusing to use it")

        let file = root.path + "/file"
        #expect(FileManager.default.createFile(atPath: file, contents: nil))
        #expect(
            ControlListener.create(path: file + "/c.sock", group: nil).failureMessage
                == "\(file) exists and is not a directory; refusing to use it")

        #expect(
            ControlListener.create(path: "relative.sock", group: nil).failureMessage
                == "the control socket path must be absolute: relative.sock")
        let long = "/" + String(repeating: "a", count: 107)
        #expect(
            ControlListener.create(path: long, group: nil).failureMessage
                == "the control socket path is 108 bytes long; at most 107 fit")

        var warnings: [String] = []
        let socket = try ControlListener.create(path: root.path + "/ok.sock", group: "no-such-group-touchd") {
            warnings.append($0)
        }.get()
        socket.close()
        #expect(warnings == ["group no-such-group-touchd does not exist; \(root.path)/ok.sock keeps touchd's group"])
    }

    /// Only the socket's own directory was checked: one above it that others could write to let them replace the
    /// whole directory, socket included. A sticky one (/tmp) is fine.
    @Test func refusesADirectoryAboveTheSocketsThatOthersCanChange() throws {
        let root = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        let open = root.path + "/open"
        #expect(mkdir(open, 0o755) == 0 && chmod(open, 0o777) == 0)
        let path = open + "/run/c.sock"
        #expect(
            ControlListener.create(path: path, group: nil).failureMessage
                == "the directory \(open) is writable by its group and others (owner uid \(geteuid()), mode 0777): "
                + "whoever can change it can replace the control socket; refusing to use it")
        #expect(!FileManager.default.fileExists(atPath: open + "/run"))

        #expect(chmod(open, 0o1777) == 0)
        let socket = try ControlListener.create(path: path, group: nil).get()
        var status = stat()
        #expect(lstat(path, &status) == 0)
        #expect(status.st_mode & 0o7777 == 0o660)
        socket.close()

        guard geteuid() == 0 else { return }  // giving a directory away takes root
        #expect(chmod(open, 0o755) == 0)
        #expect(chown(open, 65_534, 65_534) == 0)
        #expect(
            ControlListener.create(path: path, group: nil).failureMessage
                == "the directory \(open) is not owned by root (owner uid 65534, mode 0755): whoever can change it can "
                + "replace the control socket; refusing to use it")
    }

    @Test func acceptsExactlyOnePassedListeningStreamSocket() throws {
        let root = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        let path = root.path + "/passed.sock"
        let original = try ControlListener.create(path: path, group: nil).get()
        defer { original.close() }
        // What systemd passes: a listening socket without O_NONBLOCK and FD_CLOEXEC.
        let passed = dup(original.fileDescriptor)
        defer { close(passed) }
        _ = fcntl(passed, F_SETFL, fcntl(passed, F_GETFL) & ~O_NONBLOCK)
        let pid = getpid()

        #expect(ControlListener.inherited(listenPID: nil, listenFDs: "1", processID: pid, descriptor: passed) == nil)
        #expect(
            ControlListener.inherited(listenPID: "\(pid + 1)", listenFDs: "1", processID: pid, descriptor: passed)
                == nil)
        let result = ControlListener.inherited(listenPID: "\(pid)", listenFDs: "1", processID: pid, descriptor: passed)
        let passedSocket = try #require(try result?.get())
        #expect(passedSocket.activated)
        #expect(passedSocket.path == path)
        #expect(fcntl(passed, F_GETFD) & FD_CLOEXEC != 0)
        #expect(fcntl(passed, F_GETFL) & O_NONBLOCK != 0)

        #expect(
            ControlListener.inherited(listenPID: "\(pid)", listenFDs: "2", processID: pid, descriptor: passed)?
                .failureMessage == "systemd passed 2 file descriptors; touchd takes exactly one, the control socket")

        // A datagram socket (triggerhappy's stream-versus-datagram mistake), a stream that does not listen, a pipe.
        let datagram = Glibc.socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(datagram) }
        #expect(
            ControlListener.inherited(listenPID: "\(pid)", listenFDs: "1", processID: pid, descriptor: datagram)?
                .failureMessage
                == "the passed socket is not a stream socket (SOCK_STREAM); check ListenStream= in the unit")
        let idle = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(idle) }
        #expect(
            ControlListener.inherited(listenPID: "\(pid)", listenFDs: "1", processID: pid, descriptor: idle)?
                .failureMessage == "the passed socket is not listening")
        var pipeEnds: [Int32] = [-1, -1]
        #expect(pipe(&pipeEnds) == 0)
        defer {
            close(pipeEnds[0])
            close(pipeEnds[1])
        }
        #expect(
            ControlListener.inherited(listenPID: "\(pid)", listenFDs: "1", processID: pid, descriptor: pipeEnds[0])?
                .failureMessage?.hasPrefix("the passed file descriptor \(pipeEnds[0]) is not a socket") == true)
    }

    @Test func looksUpGroups() {
        #expect(ControlListener.groupID(named: "root") == 0)
        #expect(ControlListener.groupID(named: "no-such-group-touchd") == nil)
    }
}

extension Result where Failure == ControlListenerError {
    /// The error's message; nil on success (the socket is closed).
    var failureMessage: String? {
        switch self {
        case .success(let socket):
            if let socket = socket as? ControlListener.Socket { socket.close() }
            return nil
        case .failure(let error): return error.message
        }
    }
}
