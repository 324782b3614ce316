import Glibc

/// The command line: `touchd-e2e --touchd PATH [--verbose] [--taps N]`, `touchd-e2e --self-test [--touchd PATH]`, or
/// `touchd-e2e --systemd-unit --touchd PATH [--units DIR] [--expect-control-socket]`.
struct Options: Equatable {
    var touchd: String?
    var verbose = false
    var taps = 100
    /// touchd's `--log-level`: info, as on a kiosk, so the latency figures include no debug logging.
    var logLevel = "info"
    var selfTest = false
    var withoutTouchscreen = false
    /// The checks of touchd.service under systemd (SystemdUnitRun).
    var systemdUnit = false
    /// Filter mode's run (ScenarioFilter.swift): grab, twin, what `libinput debug-events` sees.
    var filter = false
    /// Filter mode under cage with wev (ScenarioCage.swift); needs scripts/vm/run --gpu.
    var cage = false
    /// With `cage`: `[filter] twin_space` under cage (ScenarioCageTwinSpace.swift) instead of the admin press.
    var twinSpace = false
    /// touchd against `libinput debug-events` in alternating rounds (ScenarioLatency.swift).
    var compareLibinput = false
    /// A panel created while touchd starts, at several delays (ScenarioStartup.swift).
    var startupSweep = false
    /// With `startupSweep`: rounds per delay.
    var sweepRounds = 3
    /// With `compareLibinput`: rounds per reader; `taps` is then per round.
    var rounds = 4
    /// With `compareLibinput`: a second touchd measured in the same boot (a before/after comparison of two builds).
    var otherTouchd: String?
    /// With `compareLibinput`: a minimal evdev reader measured in rounds of its own (tools/perf/floors): what a
    /// reader's wake-up costs in the guest when it does almost nothing.
    var floorReader: String?
    /// With `compareLibinput`: a minimal daemon run as touchd is (libinput in, the socket target out, nothing between;
    /// tools/perf/floors), in rounds of its own: what any daemon of this shape costs in the guest, so that what touchd
    /// takes above it is touchd's own work.
    var floorDaemon: String?
    /// With `filter`: a minimal filter (grab, twin, copy; tools/perf/floors) whose application latency is measured
    /// in rounds of its own beside touchd's: what any filter process costs in the guest.
    var floorFilter: String?
    /// With `filter`: the bare forwarder that reads through libinput (tools/perf/floor-filter-libinput.c).
    var floorFilterLibinput: String?
    /// With `floorFilter`: the same forwarder measured once more as the busy rounds had it before: the driver, not the
    /// forwarder, sends the busy target its line, right after the panel's write (ScenarioFilter.swift).
    var floorDriverLine = false
    /// With `filter`: the latency run's passes, each a round per reader and condition (ScenarioFilter.swift).
    var latencyPasses = Options.defaultLatencyPasses
    /// What the global limit of a filter run allows for (main.swift gives each pass beyond these more time).
    static let defaultLatencyPasses = 10
    /// With `compareLibinput`: fail when the ratio of the medians is above this (otherwise it is only reported).
    var maximumRatio: Double?
    /// Where the units to install are (the repository's systemd/ directory).
    var units = "systemd"
    /// Whether the control socket must answer a hello (on once the control socket has landed).
    var expectControlSocket = false
    /// The next tap's action with a busy socket target (ScenarioBusyTarget.swift).
    var busyTarget = false
    /// With `busyTarget` or `filter` (not under systemd): touchd runs with `--yield-on-send`.
    var yieldOnSend = false
    /// Explore by touch's speech through a real speech-dispatcher on ALSA's loopback (ScenarioSpeech.swift).
    var speech = false
    /// `touchd identify` and filter mode's sibling grab on a uhid panel with a sibling mouse (ScenarioIdentify.swift).
    var identify = false
    /// With `speech`: speech-dispatcher's `MaxQueueSize` (samples of audio queued ahead of playback).
    var speechQueueSamples = 0
    /// With `speech`: the espeak-ng module's `EspeakAudioChunkSize` (ms).
    var espeakChunkMilliseconds = 40
    /// With `speech`: the capacity of the module's output pipe, set by `touchd speech-module` through the launcher
    /// the project ships (packaging/speech/sd_espeak-ng); 0 starts the module directly, with Linux's 64 KiB.
    var modulePipeBytes = 4096
    /// With `speech`: speech-dispatcher's output-module log and the module's debug log, and per CANCEL what the server
    /// did until playback stopped.
    var speechdTrace = false
    /// With `speech`: a CANCEL that left the audio playing past 100 ms is reported, not failed (CI: the figure of an
    /// emulated guest on a shared host, docs/speech-server.md); a CANCEL that was not sent or found nothing to stop
    /// still fails.
    var cancelReported = false
    /// `touchd calibrate` on a skewed panel, then the reloaded mapping (ScenarioCalibrate.swift).
    var calibrate = false
    /// With `calibrate`: print the target screen (the PPM touchd wrote) gzipped and base64-encoded, for the docs.
    var printScreenshot = false
    var help = false

    static let usage = """
        usage: touchd-e2e --touchd PATH [--verbose] [--taps N] [--log-level LEVEL]
               touchd-e2e --self-test [--touchd PATH] [--verbose]
               touchd-e2e --without-touchscreen --touchd PATH [--verbose]
               touchd-e2e --systemd-unit --touchd PATH [--units DIR] [--expect-control-socket] [--verbose]
               touchd-e2e --filter [--systemd-unit [--units DIR]] --touchd PATH [--floor-filter PATH]
                          [--floor-filter-libinput PATH] [--floor-driver-line] [--latency-passes N]
                          [--also-touchd PATH] [--verbose]
               touchd-e2e --cage [--systemd-unit [--units DIR]] --touchd PATH [--verbose]
               touchd-e2e --cage --twin-space --touchd PATH [--verbose]
               touchd-e2e --startup-sweep --touchd PATH [--sweep-rounds N] [--verbose]
               touchd-e2e --busy-target --touchd PATH [--yield-on-send] [--verbose]
               touchd-e2e --speech --touchd PATH [--speechd-queue SAMPLES] [--espeak-chunk MS]
                          [--module-pipe-bytes BYTES] [--speechd-trace] [--cancel-reported]
                                  [--verbose]
               touchd-e2e --identify --touchd PATH [--verbose]
               touchd-e2e --calibrate --touchd PATH [--print-screenshot] [--verbose]
               touchd-e2e --compare-libinput --touchd PATH [--rounds N] [--taps N] [--max-ratio R]
                          [--also-touchd PATH] [--floor-reader PATH] [--floor-daemon PATH] [--verbose]

        Runs touchd against a uinput touchscreen and checks what reaches its socket target. Needs /dev/uinput and
        root: it runs inside the test VM (scripts/vm/run).

          --touchd PATH  the touchd executable to test
          --taps N       taps in the latency run (default 100, 1…10000)
          --log-level L  touchd's --log-level (default info, as on a kiosk; debug logs every control event, which
                         shows in the last lines printed on failure but slows touchd down)
          --verbose      echo touchd's output, the notify datagrams, the target's lines and the frames written
          --self-test    check the driver's own parts that need no uinput (parsing, statistics, expectations,
                         sockets, process handling); with --touchd, also `touchd check` on the generated
                         configurations
          --without-touchscreen
                         only the checks that need no uinput device: readiness, the waiting status, both
                         reloads (notifications only) and the stop; runs anywhere, also without /dev/uinput
          --systemd-unit installs touchd (PATH copied to /usr/bin/touchd) and the units of DIR (default: systemd)
                         and checks touchd.service under systemd, with its full sandbox: readiness, a
                         configuration that never becomes active, reloads, the watchdog, hot-plug, socket and
                         exec targets, the journal's fields. Needs systemd as PID 1: scripts/vm/run --systemd
          --filter       filter mode (docs/kiosk.md): touchd grabs the panel and forwards to its twin; `libinput
                         debug-events` on every device stands in for the compositor and shows what the app gets;
                         with --systemd-unit, touchd is the installed touchd.service (units, groups and udev rule
                         of DIR) under its full sandbox: scripts/vm/run --systemd
          --cage         filter mode under a real compositor and client: cage (its DRM backend, through seatd)
                         showing wev; needs the VM's GPU: scripts/vm/run --gpu; with --systemd-unit, touchd is
                         the installed touchd.service: scripts/vm/run --gpu --systemd
          --twin-space   with --cage (not under systemd): [filter] twin_space instead: under cage turned to
                         portrait (-r) with twin_space = "output" (a landscape panel with rotation 90, the same with
                         a calibration matrix, two panels each on half of the output) and under an unrotated cage
                         with "device", wev must get each tap within 3 px of the point touchd's controls saw;
                         and "device" under cage -r, where wev must get the raw point stretched (the control case)
          --compare-libinput
                         end-to-end latency against libinput's own client: in alternating rounds, either touchd
                         (uinput write → the action's message on its socket target) or `libinput debug-events`
                         (uinput write → its TOUCH_DOWN/TOUCH_UP line), each alone; prints both medians and their
                         ratio (the `latency-ratio:` line)
          --startup-sweep
                         a panel created while touchd starts: for each delay of 0, 50, 100, 200, 300, 500, 800
                         and 1200 ms after `touchd run`, in several rounds, the panel is created, two taps are made
                         once touchd reports it, and both must reach the socket target
          --sweep-rounds N
                         with --startup-sweep: rounds per delay (default 3, 1…50); --startup-sweep --filter runs
                         touchd in filter mode
          --rounds N     with --compare-libinput: rounds per reader (default 4, 1…100); --taps is then the taps per
                         round (default 20 there), each a touch-down and a lift
          --max-ratio R  with --compare-libinput: fail when touchd's median is more than R times libinput's
                         (without it the ratio is only reported)
          --also-touchd PATH
                         with --compare-libinput, or --filter (not under systemd): also measure this touchd, in
                         rounds of its own in the same boot (another build, for a before/after comparison that the
                         guest's noise does not swamp)
          --floor-reader PATH
                         with --compare-libinput: also measure this minimal evdev reader (tools/perf/floors
                         builds one), in rounds of its own: the floor under both readers, what a wake-up that only
                         reads the device and writes a line costs in the guest
          --floor-daemon PATH
                         with --compare-libinput: also measure this minimal daemon (tools/perf/floors builds one),
                         run as touchd is: libinput in, each touch-down's and lift's message out to the socket target,
                         nothing between; touchd's time above it is touchd's own work
          --floor-filter PATH
                         with --filter (not under systemd): also measure the application's latency through this
                         minimal filter (grab, twin, copy every event; tools/perf/floors builds one), in rounds of its
                         own beside touchd's filter mode and the panel read directly
          --floor-filter-libinput PATH
                         with --filter (not under systemd): also measure the same forwarder reading the panel through
                         libinput, as touchd does (tools/perf/floors builds one): what reading through libinput costs
          --floor-driver-line
                         with --floor-filter: also measure the forwarder as the busy rounds had it before 2026-12-05:
                         the driver sends the busy target its line right after the panel's write (in the rounds of
                         --floor-filter the forwarder sends it itself, after its own write, as touchd does)
          --latency-passes N
                         with --filter (not under systemd): passes of the latency run (default 10, 1…100), each a
                         round of 10 counted touch-downs per reader and condition
          --units DIR    with --systemd-unit: where touchd.service, touchd.socket and touchd.sysusers are
          --expect-control-socket
                         with --systemd-unit: also require that touchd answers a hello on the socket-activated
                         /run/touchd/control.sock (off until touchd has a control socket)
          --busy-target  the next tap's action must not wait behind a busy socket target: with one CPU kept busy,
                         a tap whose action goes to a target that works 20 ms after each message, then a tap
                         5 ms later whose action goes to an idle target; that action's latency against the same
                         with the first target idle (the `busy-target:` line; --filter checks the same for the
                         next touch forwarded to the application)
          --yield-on-send
                         with --busy-target or --filter (not under --systemd-unit): run touchd with its
                         --yield-on-send, which the busy-target checks are expected to fail
          --identify     `touchd identify` on a uhid panel (hid-multitouch) with a sibling mouse (hid-generic) on the
                         same USB port and a second uinput panel: the list, --json, --touch naming each tap's panel;
                         then filter mode with [filter] grab_siblings: the mouse's motion must not reach `libinput
                         debug-events` while touchd runs, and must again after a reload to false and after the stop
          --speech       explore by touch's speech through a real speech-dispatcher (espeak-ng) on a socket of its
                         own, playing into ALSA's loopback card (snd-aloop), captured with arecord: `touchd speak`
                         (touchd's SSIP client) must be heard, and a CANCEL must stop the audio within 100 ms;
                         prints request → SPEAK, request → first audio energy and CANCEL → silence (`speech:` lines);
                         then the same through real touches, with touchd in filter mode and [accessibility]: the
                         start gesture, exploring, double taps, leaving, and the server stopped (`speech-latency:`
                         lines: touch-down → SPEAK, → first audio energy, CANCEL → silence, per sample and medians)
          --speechd-queue SAMPLES
                         with --speech: speech-dispatcher's MaxQueueSize, the audio it queues ahead of playback
                         (default 0, as docs/speech-server.md recommends; the server's own default is 10000)
          --espeak-chunk MS
                         with --speech: the espeak-ng module's EspeakAudioChunkSize (default 40; Debian 12's
                         espeak-ng raises anything below 49 to 49)
          --module-pipe-bytes BYTES
                         with --speech: the espeak-ng module runs through packaging/speech/sd_espeak-ng, whose
                         touchd speech-module sets its output pipe to BYTES (default 4096, as shipped); 0 runs the
                         module directly, with Linux's 65536
          --cancel-reported
                         with --speech: audio that went on past 100 ms after a CANCEL with the guest running is
                         reported (a `speech: REPORTED` line) rather than failed; a CANCEL not sent still fails.
                         Without it (as CI runs it) such a stop fails; one past 100 ms only by the time the guest
                         stood still (the stall watch) is reported and not judged late either way
          --speechd-trace
                         with --speech: speech-dispatcher logs what it reads from the module (CustomLogFile
                         "output_module") and the module logs its steps (Debug 1); then, per CANCEL that found the
                         module still synthesizing, when the module read STOP, how many chunks of its audio the server
                         read and discarded before the module's 703, and when the server stopped playback (the
                         logging slows the module: for the breakdown, not for the figures)
          --calibrate    `touchd calibrate --json` on a panel whose response the driver skews (offset, scale, a small
                         rotation), with touchd run beside it: the driver touches each target calibrate names (through
                         the skew), then checks that calibrate's touches never reached touchd run (the panel was
                         grabbed), that the file kept every other line, and that after a reload (SIGHUP) taps at check
                         points land within 2 output pixels; then, with the display held by the driver (DRM master,
                         as a compositor), calibrate --print must calibrate from the printed positions and print the
                         line and the udev rule without touching the file, and SIGTERM must cancel it (exit 1); draws
                         on the VM's display with scripts/vm/run --gpu
          --print-screenshot
                         with --calibrate: print the target screen calibrate drew (PPM, gzip, base64) between
                         `screenshot-begin` and `screenshot-end` lines

        Exit status: 0 when every check passes, 1 when one fails, 2 for a usage error, 77 when /dev/uinput cannot
        be opened for writing (the test is skipped).
        """

    /// Parses the arguments (without the program name). Throws a message for the user.
    static func parse(_ arguments: [String]) throws(UsageError) -> Options {
        var options = Options()
        var remaining = arguments[...]
        func value(for flag: String) throws(UsageError) -> String {
            guard let value = remaining.popFirst(), !value.hasPrefix("--") else {
                throw UsageError("\(flag) needs a value")
            }
            return value
        }
        /// The flag's value as a whole number in `range`; `unit` names what it counts in the error.
        func wholeNumber(_ flag: String, in range: ClosedRange<Int>, of unit: String? = nil) throws(UsageError) -> Int {
            let text = try value(for: flag)
            guard let number = Int(text), range.contains(number) else {
                let what = unit.map { "whole number of \($0)" } ?? "whole number"
                throw UsageError(
                    "\(flag) takes a \(what) from \(range.lowerBound) to \(range.upperBound), not '\(text)'")
            }
            return number
        }
        while let argument = remaining.popFirst() {
            switch argument {
            case "--touchd":
                // Absolute: the driver runs it from other directories and hands it to tools that need a full path.
                let path = try value(for: argument)
                if path.hasPrefix("/") {
                    options.touchd = path
                } else {
                    var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
                    guard getcwd(&buffer, buffer.count) != nil else {
                        throw UsageError("--touchd \(path): cannot resolve a relative path (getcwd failed)")
                    }
                    let directory = String(
                        decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                    options.touchd = directory + "/" + path
                }
            case "--taps":
                options.taps = try wholeNumber(argument, in: 1...10000)
            case "--log-level":
                let text = try value(for: argument)
                let levels = ["trace", "debug", "info", "notice", "warning", "error", "critical"]
                guard levels.contains(text) else {
                    throw UsageError("--log-level takes one of \(levels.joined(separator: ", ")), not '\(text)'")
                }
                options.logLevel = text
            case "--verbose": options.verbose = true
            case "--self-test": options.selfTest = true
            case "--without-touchscreen": options.withoutTouchscreen = true
            case "--systemd-unit": options.systemdUnit = true
            case "--filter": options.filter = true
            case "--cage": options.cage = true
            case "--twin-space": options.twinSpace = true
            case "--compare-libinput": options.compareLibinput = true
            case "--startup-sweep": options.startupSweep = true
            case "--sweep-rounds":
                options.sweepRounds = try wholeNumber(argument, in: 1...50)
            case "--rounds":
                options.rounds = try wholeNumber(argument, in: 1...100)
            case "--also-touchd": options.otherTouchd = try value(for: argument)
            case "--floor-reader": options.floorReader = try value(for: argument)
            case "--floor-daemon": options.floorDaemon = try value(for: argument)
            case "--floor-filter": options.floorFilter = try value(for: argument)
            case "--floor-filter-libinput": options.floorFilterLibinput = try value(for: argument)
            case "--floor-driver-line": options.floorDriverLine = true
            case "--latency-passes":
                options.latencyPasses = try wholeNumber(argument, in: 1...100)
            case "--max-ratio":
                let text = try value(for: argument)
                guard let ratio = Double(text), ratio.isFinite, ratio > 0 else {
                    throw UsageError("--max-ratio takes a positive number, not '\(text)'")
                }
                options.maximumRatio = ratio
            case "--units": options.units = try value(for: argument)
            case "--expect-control-socket": options.expectControlSocket = true
            case "--busy-target": options.busyTarget = true
            case "--identify": options.identify = true
            case "--yield-on-send": options.yieldOnSend = true
            case "--speech": options.speech = true
            case "--speechd-queue":
                options.speechQueueSamples = try wholeNumber(argument, in: 0...10_000_000, of: "samples")
            case "--speechd-trace": options.speechdTrace = true
            case "--cancel-reported": options.cancelReported = true
            case "--espeak-chunk":
                options.espeakChunkMilliseconds = try wholeNumber(argument, in: 5...2_000, of: "milliseconds")
            case "--module-pipe-bytes":
                let text = try value(for: argument)
                guard let bytes = Int(text), bytes == 0 || (4096...1_048_576).contains(bytes) else {
                    throw UsageError(
                        "--module-pipe-bytes takes 0 or a number of bytes from 4096 to 1048576, not '\(text)'")
                }
                options.modulePipeBytes = bytes
            case "--calibrate": options.calibrate = true
            case "--print-screenshot": options.printScreenshot = true
            case "-h", "--help": options.help = true
            default: throw UsageError("unknown argument '\(argument)'")
            }
        }
        if [
            options.selfTest, options.withoutTouchscreen, options.systemdUnit && !options.filter && !options.cage,
            options.filter && !options.startupSweep, options.cage, options.compareLibinput, options.startupSweep,
            options.busyTarget, options.speech, options.identify, options.calibrate,
        ].filter({ $0 }).count > 1 {
            throw UsageError(
                "--self-test, --without-touchscreen, --systemd-unit, --filter, --cage, --compare-libinput, "
                    + "--startup-sweep, --busy-target, --speech, --identify and --calibrate are separate runs; "
                    + "give one of them"
            )
        }
        if options.twinSpace, !options.cage || options.systemdUnit {
            throw UsageError("--twin-space goes with --cage, not under --systemd-unit")
        }
        if options.yieldOnSend,
            (!options.busyTarget && !options.filter) || options.systemdUnit || options.startupSweep
        {
            throw UsageError(
                "--yield-on-send goes with --busy-target or --filter, not under --systemd-unit or --startup-sweep")
        }
        if !options.compareLibinput,
            options.maximumRatio != nil || options.floorReader != nil || options.floorDaemon != nil
                || arguments.contains("--rounds")
        {
            throw UsageError("--rounds, --max-ratio, --floor-reader and --floor-daemon go with --compare-libinput")
        }
        if options.otherTouchd != nil, !options.compareLibinput, !options.filter || options.systemdUnit {
            throw UsageError("--also-touchd goes with --compare-libinput or --filter, not under --systemd-unit")
        }
        if options.floorFilter != nil || options.floorFilterLibinput != nil, !options.filter || options.systemdUnit {
            throw UsageError("--floor-filter and --floor-filter-libinput go with --filter, not under --systemd-unit")
        }
        if options.floorDriverLine, options.floorFilter == nil {
            throw UsageError("--floor-driver-line goes with --floor-filter")
        }
        if arguments.contains("--latency-passes"), !options.filter || options.systemdUnit {
            throw UsageError("--latency-passes goes with --filter, not under --systemd-unit")
        }
        let speechOptions = [
            "--speechd-queue", "--espeak-chunk", "--module-pipe-bytes", "--speechd-trace", "--cancel-reported",
        ].filter(arguments.contains)
        if !options.speech, !speechOptions.isEmpty {
            throw UsageError(
                "--speechd-queue, --espeak-chunk, --module-pipe-bytes, --speechd-trace and --cancel-reported go "
                    + "with --speech")
        }
        if options.printScreenshot, !options.calibrate {
            throw UsageError("--print-screenshot goes with --calibrate")
        }
        if arguments.contains("--sweep-rounds"), !options.startupSweep {
            throw UsageError("--sweep-rounds goes with --startup-sweep")
        }
        if options.compareLibinput, !arguments.contains("--taps") { options.taps = 20 }
        if options.expectControlSocket, !options.systemdUnit {
            throw UsageError("--expect-control-socket goes with --systemd-unit")
        }
        if !options.selfTest, !options.help, options.touchd == nil {
            throw UsageError("--touchd PATH is required (the touchd executable to test)")
        }
        return options
    }
}

struct UsageError: Error, Equatable {
    let message: String
    init(_ message: String) { self.message = message }
}
