import Testing

@testable import TouchDaemon

/// `libinput record` files written by the tests: a header, multitouch devices and taps in evdev frames.
enum RecordingFixture {
    static let output = Configuration.Output(width: 1920, height: 1080, rotation: .normal, calibration: nil)

    /// A recording's header and one multitouch device (axes 0…4095, slots 0…`slots`), with `events` as its frames.
    static func device(node: Int, slots: Int = 9, axisMaximum: Int = 4095, frames: [[[Int]]]) -> String {
        var text = """
            - node: /dev/input/event\(node)
              evdev:
                name: "Touch \(node)"
                id: [3, 8746, 1, 272]
                absinfo:
                  0: [0, \(axisMaximum), 0, 0, 0]
                  1: [0, \(axisMaximum), 0, 0, 0]
                  47: [0, \(slots), 0, 0, 0]
                  53: [0, \(axisMaximum), 0, 0, 0]
                  54: [0, \(axisMaximum), 0, 0, 0]
                  57: [0, 65535, 0, 0, 0]
              events:

            """
        for frame in frames {
            text += "  - evdev:\n"
            for event in frame { text += "    - [\(event.map(String.init).joined(separator: ", "))]\n" }
        }
        return text
    }

    static func recording(_ devices: String...) -> String {
        "version: 1\nndevices: \(devices.count)\nlibinput:\n  version: \"1.26.1\"\ndevices:\n" + devices.joined()
    }

    /// A tap in slot `slot` at second `second`: down at (512, 512), up 50 ms later.
    static func tap(slot: Int, second: Int = 0) -> [[Int]] {
        [
            [second, 0, 3, 47, slot], [second, 0, 3, 57, 7], [second, 0, 3, 53, 512], [second, 0, 3, 54, 512],
            [second, 0, 0, 0, 0],
        ]
    }
}
