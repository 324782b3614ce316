import Logging

/// The journal's `MESSAGE_ID` of each class of event touchd logs: a stable 128-bit id per class, so that monitoring
/// can match a class (`journalctl MESSAGE_ID=7a342a37fee14f53a5e06244c344c07e`) whatever the message's wording.
///
/// Generated once with `systemd-id128 new`; never change or reuse one (systemd.journal-fields(7)). A log call tags
/// its message with `metadata: MessageID.actionFailed.metadata` (or `["message_id": "\(MessageID.actionFailed)"]`
/// merged with its own keys); the journal handler turns the key into `MESSAGE_ID=` and leaves it out of the text.
/// docs/operations.md lists the ids for operators.
enum MessageID: String, CaseIterable, Sendable, CustomStringConvertible {
    /// touchd started: configuration loaded, input layer up.
    case started = "00a5b5b882484b83abec02e11cdd8738"
    /// READY=1 was sent.
    case ready = "35ff299daf8a4c738f1350e13701cd67"
    /// A configuration was loaded (at start or by a reload): a new generation.
    case configLoaded = "780876b5e1a9495a9ed1b4e6377deb60"
    /// A configuration was refused; the running one (its generation) is kept.
    case configRejected = "8724de9344ea42a38438a073cc554231"
    /// A touchscreen was added and is used.
    case deviceAdded = "9a16739d14bc45708216bd37b8d234a0"
    /// A touchscreen in use was removed.
    case deviceRemoved = "0417494ddde2405ba8ef69edfa5b82b3"
    /// An input device was ignored (not a touchscreen, not on the allow-list).
    case deviceIgnored = "159f9a449be94b4cbf520b76e4aaa08d"
    /// udev tags a device as a touchscreen but libinput did not take it as one, so touchd cannot use it.
    case deviceUnusable = "0f2b7f6317b64a6e94521c0c1228a945"
    /// The kernel dropped events (SYN_DROPPED): the device's buffer overran while touchd was not reading.
    case synDropped = "77a036a722a5476595427d5eb1fc53a7"
    /// An action could not be carried out: a command failed or could not start, a socket target refused it.
    case actionFailed = "7a342a37fee14f53a5e06244c344c07e"
    /// A command outlived its timeout and was stopped.
    case actionTimedOut = "a63b91461eb54ee786842bb801133213"
    /// Actions were dropped by a limit (if_running, the rate limit, the cap on running commands, a full queue).
    case actionSuppressed = "eb25685be8294233923a95aab2e1c1bc"
    /// A control-socket client was refused (not authorised, too many clients, a bad handshake).
    case clientRejected = "00d824c598bf4af2995993955ee9f47c"
    /// A control-socket client did not read its events and was disconnected.
    case clientOverflowed = "5716477d564646799a944170a0f21a59"
    /// touchd is stopping.
    case shutdown = "1cb89e33dfe14c62810b99c60230c317"
    /// Filter mode: a touchscreen is grabbed and the application reads its twin.
    case filterStarted = "3a01d02354d64113aaa1b34f8af06192"
    /// Filter mode: a touchscreen could not be grabbed or twinned (busy, no /dev/uinput); the application reads it.
    case filterRefused = "113504012d2c4033951c9c2834afeea5"
    /// Explore by touch: speech mode started or ended (the reason is in the `reason` field).
    case speechMode = "a9eeace8673641638d778ad945a2cf62"
    /// Explore by touch: the speech server cannot speak, so speech mode did not start or ended, and touches reach the
    /// application as usual (rule 3).
    case speechUnavailable = "0ee281785307457ba57787e5fd8e084e"
    /// The speech server (speech-dispatcher's SSIP socket) cannot be reached, or the connection to it was lost: explore
    /// by touch cannot speak until it is back.
    case speechServerUnavailable = "c3c108197578428bb2529b1d3487a67e"

    /// The metadata key the journal handler reads the id from.
    static let metadataKey = "message_id"

    /// The id as journald prints it: 32 lowercase hexadecimal digits.
    var description: String { rawValue }

    /// `["message_id": id]`, to pass as a log call's metadata or merge into it.
    var metadata: Logger.Metadata { [Self.metadataKey: .string(rawValue)] }
}
