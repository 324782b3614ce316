import Logging
import TouchModel

/// What a reload keeps of the running state (fault-cases.md C16): the kiosk application changes controls over the
/// control socket (enabled, selected, a slider's value, the screen), and a reload of an edited layout must not undo
/// that behind its back. A restart starts from the file.
extension Engine {
    /// `candidate` with each control's enabled, selected and value taken from the running scene where the control
    /// still exists with the same kind (a value clamped into the new range), and log lines for what could not be
    /// carried.
    func carryingState(into candidate: Configuration) -> (configuration: Configuration, notes: [Effect]) {
        var carried = candidate
        var changedKind: [String] = []
        var clamped: [String] = []
        var count = 0
        for index in carried.controls.indices {
            let id = carried.controls[index].id
            guard let old = scene.control(id) else { continue }  // a new control starts from the file
            let new = carried.controls[index]
            guard old.kind.kindName == new.kind.kindName else {
                changedKind.append("\(id) (\(old.kind.name) → \(new.kind.name))")
                continue
            }
            carried.controls[index].isEnabled = old.isEnabled
            carried.controls[index].isSelected = old.isSelected
            let value = Self.clamp(old.value, to: new.kind)
            if value != old.value { clamped.append("\(id) (\(old.value) → \(value))") }
            carried.controls[index].value = value
            count += 1
        }
        let gone = scene.controlIDs.filter { id in !candidate.controls.contains { $0.id == id } }
        var notes: [Effect] = [.log(.info, "control state carried over the reload", ["controls": "\(count)"])]
        if !changedKind.isEmpty {
            notes.append(
                .log(
                    .notice, "state not carried: the control's kind changed; it starts from the file",
                    ["controls": "\(Self.listForLog(changedKind))"]))
        }
        if !clamped.isEmpty {
            notes.append(
                .log(.notice, "value clamped into the control's new range", ["controls": "\(Self.listForLog(clamped))"])
            )
        }
        if !gone.isEmpty {
            notes.append(
                .log(
                    .info, "controls gone with the reload, their state dropped",
                    ["controls": "\(Self.listForLog(gone))"]))
        }
        return (carried, notes)
    }

    /// A value as the new kind can hold it: within a slider's range, a segment's index within the count.
    static func clamp(_ value: Double, to kind: Control.Kind) -> Double {
        switch kind {
        case .slider(let slider): min(max(value, slider.minimum), slider.maximum)
        case .segmented(let segmented): min(max(value.rounded(.down), 0), Double(segmented.count - 1))
        case .button, .toggle: value
        }
    }

    /// Shows in `newScene` the screen the running scene shows, when the new file still has it.
    func carryScreen(into newScene: inout Scene) -> [Effect] {
        guard let screen = scene.activeScreen, screen != newScene.activeScreen else { return [] }
        guard newScene.screenIDs.contains(screen) else {
            return [
                .log(
                    .notice, "the screen shown is gone with the reload",
                    ["screen": "\(screen)", "now": "\(newScene.activeScreen ?? "none")"])
            ]
        }
        // A scene that has no contact yet: switching screens cancels nothing and fires nothing.
        _ = newScene.activateScreen(screen, at: scene.now)
        return []
    }
}
