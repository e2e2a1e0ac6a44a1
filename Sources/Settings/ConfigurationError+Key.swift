import HeraldCore

extension ConfigurationError {
    init(_ message: String, key: ConfigurationKey) {
        self.init(message, key: key.environment)
    }
}
