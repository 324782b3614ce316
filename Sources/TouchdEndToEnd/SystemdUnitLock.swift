import Glibc

/// The one-instance lock under the shipped unit: any local user can bind the seat's abstract name first. Such a
/// holder (here nobody, through setpriv) must not keep touchd.service from starting; the journal names it.
extension SystemdUnitRun {
    func squattedLockIgnored() throws(Abort) {
        _ = Tool.run([Tool.systemctl, "stop", UnitPaths.service], verbose: verbose)
        let squatter = try attempt { () throws(DriverError) in
            try Daemon(
                executable: "/usr/bin/setpriv",
                arguments: [
                    "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c",
                    "import socket, time\n"
                        + "s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
                        + "s.bind(b'\\0touchd/seat/seat0\\0')\n"
                        + "s.listen(4)\n"
                        + "print('bound', flush=True)\n"
                        + "time.sleep(60)\n",
                ],
                environment: [:], echoPrefix: verbose ? "squatter| " : nil, published: false)
        }
        defer { squatter.killAndReap() }
        let bound = poll(until: monotonicNow() + 10_000_000) { squatter.output.since(0).contains("bound") ? true : nil }
        guard bound != nil else {
            report.record(.squattedLockIgnored, "the squatter did not bind the name: \(squatter.tail(5))")
            _ = Tool.run([Tool.systemctl, "start", UnitPaths.service], verbose: verbose)
            return
        }
        let start = Tool.run([Tool.systemctl, "start", UnitPaths.service], verbose: verbose)
        var problems: [String] = []
        if !start.succeeded { problems.append("systemctl start failed: \(start.summary)") }
        let active = try read(["ActiveState", "SubState"])
        if active["ActiveState"] != "active" { problems.append("not active: \(active.summary)") }
        let journal = Tool.run(
            [Tool.journalctl, "-u", UnitPaths.service, "-o", "cat", "--no-pager", "--grep", "held by uid 65534"],
            verbose: false)
        if !journal.output.contains(where: { $0.contains("held by uid 65534") }) {
            problems.append("the journal does not name the holder (uid 65534)")
        }
        report.record(.squattedLockIgnored, problems.isEmpty ? nil : problems.joined(separator: "; "))
    }
}
