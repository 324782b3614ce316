import Glibc

/// The start-up race under the shipped unit: at a kiosk's boot systemd starts touchd.service while udev is still
/// making the panel's node. For each delay of the sweep, the service is started without waiting for it
/// (`systemctl start --no-block`), the panel is created that long after, and two taps made once the status names it
/// (and no sooner than ``StartupSweep/firstTouchAfter`` after the panel exists) must both reach the socket target.
extension SystemdUnitRun {
    func startupSweep() throws(Abort) {
        guard let target else { throw Abort("no socket target") }
        var failures: [String] = []
        for delay in StartupSweep.defaultDelays {
            device?.destroy()
            device = nil
            _ = Tool.run([Tool.systemctl, "stop", UnitPaths.service], verbose: verbose)
            let start = Tool.run([Tool.systemctl, "start", "--no-block", UnitPaths.service], verbose: verbose)
            let started = monotonicNow()
            guard start.succeeded else {
                failures.append("\(delay / 1000) ms: systemctl start --no-block: \(start.summary)")
                continue
            }
            sleep(until: started + delay)
            device = try attempt { () throws(DriverError) in
                try VirtualTouchscreen(name: "touchd-e2e unit startup \(delay / 1000)", verbose: verbose)
            }
            let created = monotonicNow()
            if let failure = waitForTouchscreen() {
                failures.append("\(delay / 1000) ms: \(failure)")
                continue
            }
            // As without the unit: named only once touchd reads it (a tap before that reaches nobody).
            let mainPID = (try? read(["MainPID"]))?.number("MainPID").flatMap { pid_t(exactly: $0) }
            if let node = device?.devnode, !(mainPID.map { StartupSweep.holdsOpen(pid: $0, node: node) } ?? false) {
                failures.append(
                    "\(delay / 1000) ms: the status named the touchscreen without \(node) open in touchd (MainPID "
                        + "\(mainPID.map(String.init) ?? "unknown"))")
                continue
            }
            sleep(until: created + StartupSweep.firstTouchAfter)
            var missing: [Int] = []
            for tap in 1...2 {
                let cursor = target.inbox.count
                // Out of the touchDownRepeat window of the tap before (a new touchd has none before the first).
                if tap > 1 { sleep(microseconds: Limits.repeatGuard) }
                try write([.down(slot: 0, x: 200, y: 200)])
                sleep(microseconds: 50_000)
                try write([.up(slot: 0)])
                let arrived = poll(until: monotonicNow() + Limits.message) {
                    target.inbox.first(from: cursor) { $0.event == "touchUpInside" }?.element
                }
                if arrived == nil { missing.append(tap) }
            }
            let line = "delay \(delay / 1000) ms: " + (missing.isEmpty ? "both taps arrived" : "tap(s) \(missing) lost")
            Console.line("startup-sweep under the unit: \(line)")
            if !missing.isEmpty { failures.append(line) }
        }
        report.record(.startupSweep, failures.isEmpty ? nil : failures.joined(separator: "; "))
        // The checks after this one expect the service running with a touchscreen, as hot-plug left it.
        if Tool.run([Tool.systemctl, "is-active", "--quiet", UnitPaths.service], verbose: verbose).succeeded == false {
            _ = Tool.run([Tool.systemctl, "start", UnitPaths.service], verbose: verbose)
        }
    }
}
