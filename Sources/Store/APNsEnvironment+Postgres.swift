import HeraldCore
import NIOCore
import PostgresNIO

/// A device's `environment` column (`production` or `sandbox`, checked by
/// the schema) read straight into the enum: no string reaches the run.
extension APNsEnvironment: PostgresDecodable {
    public init<JSONDecoder: PostgresJSONDecoder>(from buffer: inout ByteBuffer, type: PostgresDataType, format: PostgresFormat,
                                                  context: PostgresDecodingContext<JSONDecoder>) throws {
        let text = try String(from: &buffer, type: type, format: format, context: context)
        guard let environment = Self(rawValue: text) else { throw PostgresDecodingError.Code.failure }
        self = environment
    }
}
