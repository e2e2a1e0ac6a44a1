extension Duration {
    /// The duration in seconds, its fraction included: for rates, logs and SQL intervals.
    public var inSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
