import Glibc

extension SystemdUnitRun {
    /// One instance per seat under the shipped unit: while the service runs (a dynamic user, ProtectSystem=strict),
    /// a `touchd run` started by hand as root for the same configuration exits 75 at once naming the service's pid,
    /// and leaves the service, its socket and its touchscreen alone.
    func secondInstance() throws(Abort) {
        let before = try read(["MainPID"])
        guard let mainPID = before.number("MainPID"), mainPID > 0 else {
            report.record(.secondInstanceRefused, "no MainPID: \(before.summary)")
            return
        }
        let second = Tool.run(
            [UnitPaths.binary, "run", "--config", UnitPaths.config], limit: 20_000_000, verbose: verbose)
        var problems: [String] = []
        if second.status != .exited(75) { problems.append("expected exit status 75: \(second.summary)") }
        let expected = "another touchd is running on seat0 (pid \(mainPID)"
        if !second.output.contains(where: { $0.contains(expected) }) {
            problems.append("no '\(expected)' in its output: \(second.output.suffix(5))")
        }
        if second.output.contains(where: { $0.contains("control socket") || $0.contains("touchscreen added") }) {
            problems.append("it set something up: \(second.output.suffix(5))")
        }
        let after = try read(["MainPID", "ActiveState"])
        if after.number("MainPID") != mainPID || after.values["ActiveState"] != "active" {
            problems.append("the service changed: \(after.summary)")
        }
        var status = stat()
        if stat(UnitPaths.controlSocket, &status) != 0 { problems.append("the control socket is gone") }
        if problems.isEmpty { report.note("second instance: \(second.output.last ?? "")") }
        report.record(.secondInstanceRefused, problems.isEmpty ? nil : problems.joined(separator: "; "))
    }
}
