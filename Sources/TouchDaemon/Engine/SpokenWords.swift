import TouchModel

/// The words speech mode adds to labels (rule 7: role and state; rule 9: "nothing selected"), in the screen's language
/// (rule 16): a table for the languages a European kiosk most often speaks, English for any other. The labels, hints,
/// titles, introduction and farewell are the integrator's, in whatever language they write.
struct SpokenWords: Hashable, Sendable {
    var button: String
    var toggle: String
    var slider: String
    var adjustable: String
    var on: String
    var off: String
    var selected: String
    var dimmed: String
    var nothingSelected: String
    /// "2 of 4": a segmented control's selected segment.
    var of: String

    static let english = SpokenWords(
        button: "button", toggle: "switch", slider: "slider", adjustable: "adjustable", on: "on", off: "off",
        selected: "selected", dimmed: "dimmed", nothingSelected: "nothing selected", of: "of")

    /// By ISO 639-1 code.
    static let table: [String: SpokenWords] = [
        "en": english,
        "de": SpokenWords(
            button: "Taste", toggle: "Schalter", slider: "Schieberegler", adjustable: "anpassbar", on: "an",
            off: "aus", selected: "ausgewählt", dimmed: "gedimmt", nothingSelected: "nichts ausgewählt", of: "von"),
        "fr": SpokenWords(
            button: "bouton", toggle: "interrupteur", slider: "curseur", adjustable: "réglable", on: "activé",
            off: "désactivé", selected: "sélectionné", dimmed: "estompé", nothingSelected: "rien de sélectionné",
            of: "sur"),
        "es": SpokenWords(
            button: "botón", toggle: "interruptor", slider: "control deslizante", adjustable: "ajustable",
            on: "activado", off: "desactivado", selected: "seleccionado", dimmed: "atenuado",
            nothingSelected: "nada seleccionado", of: "de"),
        "it": SpokenWords(
            button: "pulsante", toggle: "interruttore", slider: "cursore", adjustable: "regolabile", on: "attivo",
            off: "disattivo", selected: "selezionato", dimmed: "attenuato", nothingSelected: "niente selezionato",
            of: "di"),
        "nl": SpokenWords(
            button: "knop", toggle: "schakelaar", slider: "schuifregelaar", adjustable: "aanpasbaar", on: "aan",
            off: "uit", selected: "geselecteerd", dimmed: "gedimd", nothingSelected: "niets geselecteerd", of: "van"),
    ]

    /// The words for a language tag (`de`, `de-AT`, `fr_CH`); English for an unknown or absent one.
    static func forLanguage(_ tag: String?) -> SpokenWords {
        guard let tag else { return english }
        let primary = tag.split(whereSeparator: { $0 == "-" || $0 == "_" }).first.map { $0.lowercased() } ?? ""
        return table[primary] ?? english
    }

    /// A control's role (rule 7).
    func role(of kind: Control.Kind) -> String {
        switch kind {
        case .button: button
        case .toggle: toggle
        case .slider: slider
        case .segmented: adjustable
        }
    }
}
