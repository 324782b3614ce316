/// The configurations the driver gives touchd (keys as in docs/configuration.md).
///
/// Geometry the checks rely on: a 1000×1000 output; button `a` covers x 100…299, y 100…299 and button `b` covers
/// x 600…799, y 100…299. The tracking values are written out rather than left to the defaults because the gestures
/// are laid out against them: "outside" means more than 70 px from a frame, and touchDownRepeat needs a touch-down
/// within 350 ms of the last tap's lift and within 45 px of it.
///
/// Two gesture recognizers are laid out away from both buttons: `admin`, a three-finger long press of
/// `longPressMilliseconds` in the bottom-left corner (x 0…199, y 800…999), and `back`, a one-finger swipe to the
/// right of at least 150 px that starts within 30 px of the left edge. Every other touch of the sequence lands at
/// x ≥ 100, so the edge swipe fails at its touch-down and holds nothing back.
///
/// Button `s` (x 400…599, y 700…899, away from everything else) runs a long command on touchUpInside: the
/// `sleeper` exec target writes its process id next to the socket target and sleeps `sleeperSeconds`, for the
/// check that a running command never holds up the input loop (fault-cases.md D6).
enum TestConfig {
    static let outputSize = 1000
    static let longPressMilliseconds = 300
    static let dragOutset = 70
    static let repeatIntervalMilliseconds = 350
    static let repeatSlop = 45
    static let targetName = "e2e"
    static let sleeperSeconds = 5

    /// Where the `sleeper` command writes its process id: next to the socket target, in the driver's scratch
    /// directory.
    static func sleeperPIDFile(besides socket: String) -> String {
        String(socket[..<(socket.lastIndex(of: "/") ?? socket.endIndex)]) + "/sleeper.pid"
    }

    /// The control socket: next to the socket target, in the driver's scratch directory.
    static func controlSocket(besides socket: String) -> String {
        String(socket[..<(socket.lastIndex(of: "/") ?? socket.endIndex)]) + "/control.sock"
    }

    /// A valid file: `a` sends `actionForA` (first "a", after the second reload "a2"), `b` sends "b".
    static func valid(socket: String, actionForA: String) -> String {
        """
        # Written by touchd-e2e.
        [output]
        width = \(outputSize)
        height = \(outputSize)
        rotation = 0

        [tracking]
        drag_outset = \(dragOutset)
        repeat_interval_ms = \(repeatIntervalMilliseconds)
        repeat_slop = \(repeatSlop)

        [targets.\(targetName)]
        socket = "\(socket)"
        socket_type = "stream"
        responds_to = ["a", "b", "a2", "admin", "back", "attract", "welcome"]

        [control_socket]
        socket = "\(controlSocket(besides: socket))"

        [targets.sleeper]
        exec = ["/bin/sh", "-c", "echo $$ > \(sleeperPIDFile(besides: socket)) && exec /bin/sleep \(sleeperSeconds)"]
        responds_to = ["sleep"]

        [[control]]
        id = "a"
        kind = "button"
        frame = { x = 100, y = 100, width = 200, height = 200 }
        actions = [{ events = ["allTouchEvents"], target = "\(targetName)", action = "\(actionForA)" }]

        [[control]]
        id = "b"
        kind = "button"
        frame = { x = 600, y = 100, width = 200, height = 200 }
        actions = [{ events = ["allTouchEvents"], target = "\(targetName)", action = "b" }]

        [[control]]
        id = "s"
        kind = "button"
        frame = { x = 400, y = 700, width = 200, height = 200 }
        actions = [{ events = ["touchUpInside"], target = "sleeper", action = "sleep" }]

        [[gesture]]
        id = "admin"
        kind = "long_press"
        fingers = 3
        minimum_duration_ms = \(longPressMilliseconds)
        frame = { x = 0, y = 800, width = 200, height = 200 }
        actions = [{ events = ["recognized"], target = "\(targetName)", action = "admin" }]

        [[gesture]]
        id = "back"
        kind = "swipe"
        directions = ["right"]
        minimum_distance = 150
        edge = "left"
        edge_margin = 30
        actions = [{ events = ["recognized"], target = "\(targetName)", action = "back" }]

        """
    }

    /// Appended to ``valid(socket:actionForA:)`` for the idle check: `idle` a second after the last lift.
    static let idle = """

        [idle]
        timeout_s = 1
        actions = [
          { events = ["idle"], target = "\(targetName)", action = "attract" },
          { events = ["wake"], target = "\(targetName)", action = "welcome" },
        ]

        """

    /// Not TOML at all: an unterminated table header, then a key without a value.
    static let broken = """
        # Written by touchd-e2e: deliberately broken, touchd must keep its previous configuration.
        [output
        width = = 1000

        """
}
