import Foundation
import Glibc

/// Commands and uinput under the shipped unit (docs/security.md, "Commands and uinput"): the unit gives the service
/// the touchd-uinput group and /dev/uinput for filter mode, but nothing touchd starts may create an input device, and
/// with filter mode off touchd gives that up itself.
extension SystemdUnitRun {
    /// A tap on `u` runs a command that opens /dev/uinput (the group lets it) and asks for UI_DEV_CREATE: it must get
    /// EPERM. Without the filter the kernel answers EINVAL here (nothing set up yet): the command could have made a
    /// keyboard. Then a reload that turns filter mode on is refused, since touchd gave uinput up at start.
    func commandCannotCreateInputDevice() throws(Abort) {
        let path = UnitPaths.execRecord("uinput")
        unlink(path)
        try write([.down(slot: 0, x: 700, y: 700)])
        sleep(microseconds: 50_000)
        try write([.up(slot: 0)])
        let answer = poll(until: monotonicNow() + Limits.message * 2) { () -> String? in
            (try? String(contentsOfFile: path, encoding: .utf8)).flatMap { $0.isEmpty ? nil : $0 }
        }
        report.record(
            .commandCannotCreateInputDevice,
            answer == "EPERM"
                ? nil
                : "a command's ioctl(UI_DEV_CREATE) on /dev/uinput answered \(answer ?? "nothing (no \(path))"), "
                    + "not EPERM")

        let before = try read(["MainPID"])
        try writeConfig(UnitConfig.valid(actionForA: "a") + UnitConfig.filterOn)
        _ = Tool.run([Tool.systemctl, "reload", UnitPaths.service], verbose: verbose)
        let refused = poll(until: monotonicNow() + Limits.message) { () -> Bool? in
            let journal = Tool.run(
                [Tool.journalctl, "-u", UnitPaths.service, "-o", "cat", "--no-pager", "--grep", "restart touchd"],
                verbose: false)
            return journal.output.contains { $0.contains("restart touchd to turn filter mode on") } ? true : nil
        }
        let after = try read(["MainPID", "StatusText"])
        var problems: [String] = []
        if refused == nil { problems.append("no refusal naming the restart in the journal") }
        if after["StatusText"]?.contains("filtering") == true { problems.append("it filters: \(after.summary)") }
        if after["MainPID"] != before["MainPID"] { problems.append("touchd was restarted: \(after.summary)") }
        report.record(.filterNeedsRestart, problems.isEmpty ? nil : problems.joined(separator: "; "))
        // The running configuration is still generation 1 (the reload was refused): the file again says what runs.
        try writeConfig(UnitConfig.valid(actionForA: "a"))
    }
}
