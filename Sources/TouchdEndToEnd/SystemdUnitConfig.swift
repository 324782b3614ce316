/// The checks of `--systemd-unit`, in the order they are made.
enum UnitCheck: String, CaseIterable {
    case installed = "units-installed"
    case brokenConfigNeverActive = "broken-config-never-active"
    case startReturnsWhenReady = "start-returns-when-ready"
    case sandboxApplied = "sandbox-applied"
    case controlSocketNode = "control-socket-node"
    case controlSocketHello = "control-socket-hello"
    case hotplugTapUnderSandbox = "hotplug-tap-under-sandbox"
    case secondInstanceRefused = "second-instance-refused"
    case synDroppedMessageID = "syn-dropped-message-id"
    case execTargetRuns = "exec-target-runs"
    case umaskApplies = "umask-applies"
    case notifySocketNotLeaked = "notify-socket-not-leaked"
    case journalFields = "journal-fields"
    case sendYieldUnderSandbox = "send-yield-under-sandbox"
    case reloadApplies = "reload-applies"
    case reloadBrokenFails = "reload-broken-fails"
    case oldConfigKept = "old-config-kept"
    case watchdogRestarts = "watchdog-restarts"
    case worksAfterRestart = "works-after-restart"
    case setuidCommandFails = "setuid-command-fails-cleanly"
    case unreadableDeviceWaits = "unreadable-device-waits"
    case reloadRescansDevice = "reload-rescans-device"
    case commandCannotCreateInputDevice = "command-cannot-create-input-device"
    case filterNeedsRestart = "filter-mode-needs-restart-when-off-at-start"
    case squattedLockIgnored = "squatted-lock-name-does-not-stop-the-service"
    case clickSoundPlays = "click-sound-plays-with-audio-drop-in"
    case startupSweep = "startup-sweep-under-unit"
    case cleanStop = "clean-stop"
}

extension Limits {
    /// The whole `--systemd-unit` run, which includes a watchdog timeout and a restart under TCG.
    static let systemdUnitRun: Microseconds = 480_000_000
    /// For the service to report a plugged touchscreen in its status, or to come back after the watchdog.
    static let unitState: Microseconds = 60_000_000
}

/// Where the systemd checks put things: the installed paths of scripts/install, a socket target under /run (touchd
/// has a private /tmp), and the state directory the exec target writes to.
enum UnitPaths {
    static let binary = "/usr/bin/touchd"
    static let unitDirectory = "/usr/lib/systemd/system"
    static let sysusers = "/usr/lib/sysusers.d/touchd.conf"
    static let configDirectory = "/etc/touchd"
    static let config = "/etc/touchd/touchd.toml"
    static let service = "touchd.service"
    static let socketUnit = "touchd.socket"
    static let controlSocket = "/run/touchd/control.sock"
    static let scratch = "/run/touchd-e2e"
    static let target = "/run/touchd-e2e/target.sock"
    /// StateDirectory=touchd: with DynamicUser=yes a link to /var/lib/private/touchd.
    static let state = "/var/lib/touchd"
    /// A runtime drop-in (gone at reboot) that shortens the watchdog for the stall check.
    static let watchdogDropIn = "/run/systemd/system/touchd.service.d/50-e2e-watchdog.conf"
    static let watchdogSeconds = 3
    /// A udev rule (in the guest's own /run, removed after the check) that leaves one touchscreen's node root-only,
    /// as a device whose permissions are not applied yet (fault-cases.md D2).
    static let lockedRule = "/run/udev/rules.d/99-touchd-e2e-locked.rules"
    static let lockedName = "touchd-e2e locked screen"

    /// Where the package installs the example configuration's click, and the audio drop-in as the check installs it.
    static let clickSound = "/usr/share/sounds/touchd/click.wav"
    static let audioDropIn = "/run/systemd/system/touchd.service.d/50-audio.conf"

    /// The file the exec target writes for `action`.
    static func execRecord(_ action: String) -> String { "\(state)/exec-\(action)" }
}

/// The configuration of the systemd checks. Output 1000×1000 as in TestConfig (the uinput device's scale):
/// button `a` (x 100…299, y 100…299) sends its action to the socket target; button `c` (x 600…799, y 100…299) runs
/// two commands: `record`, which writes its environment and /proc/self/status into the state directory, and `fail`,
/// which exits 3 (a logged failure with a MESSAGE_ID); button `p` (x 100…299, y 600…799) runs `setuidProgram`,
/// which NoNewPrivileges keeps from gaining root (fault-cases.md A13).
enum UnitConfig {
    static let recordMarker = "--- /proc/self/status ---"
    /// A setuid-root program that asks for root's password status: as root it prints it and exits 0; as touchd's
    /// dynamic user it is refused.
    static let setuidProgram = "/usr/bin/passwd"
    static let setuidArguments = ["--status", "root"]

    static func valid(actionForA: String) -> String {
        let record = UnitPaths.execRecord("$TOUCHD_ACTION")
        // Written to a temporary name and renamed, so the driver never reads half a file.
        let script =
            "{ env; echo '\(recordMarker)'; cat /proc/self/status; } > \(record).tmp && mv \(record).tmp \(record)"
        return """
            # Written by touchd-e2e --systemd-unit.
            [output]
            width = \(TestConfig.outputSize)
            height = \(TestConfig.outputSize)

            [targets.e2e]
            socket = "\(UnitPaths.target)"
            socket_type = "stream"
            responds_to = ["a", "a2"]

            [targets.record]
            exec = ["/bin/sh", "-c", "\(script.replacing("\"", with: "\\\""))"]
            responds_to = ["c"]
            timeout_ms = 10000

            [targets.fail]
            exec = ["/bin/sh", "-c", "exit 3"]
            responds_to = ["f"]

            [targets.uinput]
            exec = ["/usr/bin/python3", "-c", "\(uinputProbe)"]
            responds_to = ["u"]

            [targets.click]
            exec = ["/usr/bin/aplay", "-q", "\(UnitPaths.clickSound)"]
            responds_to = ["click"]
            timeout_ms = 2000

            [targets.setuid]
            exec = [\(([setuidProgram] + setuidArguments).map { "\"\($0)\"" }.joined(separator: ", "))]
            responds_to = ["p"]

            [[control]]
            id = "a"
            kind = "button"
            frame = { x = 100, y = 100, width = 200, height = 200 }
            actions = [{ events = ["touchUpInside"], target = "e2e", action = "\(actionForA)" }]

            [[control]]
            id = "c"
            kind = "button"
            frame = { x = 600, y = 100, width = 200, height = 200 }
            actions = [
              { events = ["touchUpInside"], target = "record", action = "c" },
              { events = ["touchUpInside"], target = "fail", action = "f" },
            ]

            [[control]]
            id = "u"
            kind = "button"
            frame = { x = 600, y = 600, width = 200, height = 200 }
            actions = [{ events = ["touchUpInside"], target = "uinput", action = "u" }]

            [[control]]
            id = "k"
            kind = "button"
            frame = { x = 350, y = 350, width = 200, height = 200 }
            actions = [{ events = ["touchDown"], target = "click", action = "click" }]

            [[control]]
            id = "p"
            kind = "button"
            frame = { x = 100, y = 600, width = 200, height = 200 }
            actions = [{ events = ["touchUpInside"], target = "setuid", action = "p" }]

            """
    }

    /// Python for the `uinput` command: opens /dev/uinput, asks for UI_DEV_CREATE and writes the errno's name (or
    /// "created") to the state directory. As a TOML basic string's body.
    static let uinputProbe = [
        "import errno, fcntl, os", "try:", " fd = os.open('/dev/uinput', os.O_WRONLY)", " fcntl.ioctl(fd, 0x5501)",
        " result = 'created'", "except OSError as error:", " result = errno.errorcode[error.errno]",
        "open('\(UnitPaths.execRecord("uinput"))', 'w').write(result)",
    ].joined(separator: "\\n")

    /// Appended to ``valid(actionForA:)``: filter mode on.
    static let filterOn = """

        [filter]
        enabled = true

        """

    /// MESSAGE_IDs the checks expect (Sources/TouchDaemon/Logging/MessageID.swift; the driver does not link touchd).
    static let actionFailedID = "7a342a37fee14f53a5e06244c344c07e"
    static let startedID = "00a5b5b882484b83abec02e11cdd8738"
    static let synDroppedID = "77a036a722a5476595427d5eb1fc53a7"
}
