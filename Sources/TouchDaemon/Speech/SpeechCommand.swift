/// What the engine asks of the speech server, in order: the seam between explore by touch (decided in the engine,
/// without I/O) and the SSIP client at the edge (`Speech/`), so `run` speaks what `simulate` prints.
struct Utterance: Sendable, Equatable {
    /// SSIP message priorities used by explore by touch: `text` replaces what is being spoken (exploring);
    /// `important` for entering and leaving the mode; `message` for hints, which wait their turn.
    enum Priority: String, Sendable, Equatable {
        case important, message, text
    }

    var text: String
    var priority: Priority
    /// The screen's `lang` (BCP 47 or ISO 639, as speech-dispatcher takes it), nil for the server's default.
    var language: String?
    /// When set, the client tells when the server finished speaking this utterance (its `702 END`), with this
    /// mark (``SpeechClient/Report/ended(mark:at:)``): an announcement whose hint waits for its end.
    var endMark: UInt64? = nil
}

enum SpeechCommand: Sendable, Equatable {
    case speak(Utterance)
    /// Stop what is being spoken (`CANCEL self`): every new touch.
    case cancel
    /// A two-finger tap pauses (`PAUSE self`) or resumes (`RESUME self`) speech.
    case pause
    case resume
    /// A short sound instead of words (SSIP `SOUND_ICON name`): the end of the list when a swipe finds no next or
    /// previous item, the end of an adjustable item's range.
    case soundIcon(String)
}
