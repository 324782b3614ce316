extension Touchd {
    /// The version `touchd --version` prints. The only place it is written down.
    static let version = "0.1.0"
}
