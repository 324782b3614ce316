import CLinux
import Glibc
import Synchronization

/// Keeps what touchd starts from creating input devices (docs/security.md, "Commands and uinput").
///
/// Filter mode needs touchd's input thread to create its twins through /dev/uinput, and the shipped unit grants that
/// to the whole service; a command inherits the service's groups and device permissions, so without this it could
/// create a virtual keyboard and type into the kiosk. A seccomp filter (CLinux's `touchd_forbid_uinput_create`) makes
/// `ioctl(UI_DEV_CREATE)` fail with EPERM on the thread that installs it and everything it starts, for good:
/// - the thread that starts commands installs it before its first child, so every command and whatever it runs is
///   under it, with filter mode on or off;
/// - with filter mode off at start, `touchd run` installs it on its main thread before any other thread starts, so
///   touchd itself cannot create an input device either; a reload that turns filter mode on is then refused (a
///   restart takes it).
enum UinputGuard {
    /// Whether the whole process gave up creating input devices at start.
    private static let processForbidden = Atomic<Bool>(false)

    /// Installs the filter on the calling thread (and what it starts from now on); nil, or the failure.
    static func forbidOnCallingThread() -> SystemCallError? {
        touchd_forbid_uinput_create() == 0 ? nil : SystemCallError(call: "prctl(PR_SET_SECCOMP)", errno: errno)
    }

    /// ``forbidOnCallingThread()`` for the whole process: call it before any other thread of touchd's starts.
    static func forbidForProcess() -> SystemCallError? {
        let failure = forbidOnCallingThread()
        if failure == nil { processForbidden.store(true, ordering: .relaxed) }
        return failure
    }

    /// Why this process cannot create input devices because it gave that up at start, or nil.
    static var processProblem: String? {
        processForbidden.load(ordering: .relaxed)
            ? "touchd gave up creating input devices at start, when filter mode was off (docs/security.md); "
                + "restart touchd to turn filter mode on" : nil
    }
}
