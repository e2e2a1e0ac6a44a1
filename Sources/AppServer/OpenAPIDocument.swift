import HTTPTypes
import HeraldCore

/// `openapi.json` (beside this file): the OpenAPI 3.1 document of every
/// endpoint, compiled into the binary, served at `GET /v1/openapi.json`, and
/// the list of paths and methods the 405 answers are made from. A test checks
/// the server's answers against it.
public enum OpenAPIDocument {
    public static let bytes: [UInt8] = PackageResources.openapi_json

    /// Each documented path as segments (`nil` for a `{parameter}`) and its methods.
    static let endpoints: [(segments: [String?], methods: [HTTPRequest.Method])] = {
        guard let document = try? StrictJSON.parse(bytes, limits: .init(maxDepth: 64)),
              case .object(let paths)? = document["paths"] else { return [] }
        let verbs = ["get", "put", "post", "delete", "patch", "head", "options"]
        return paths.map { path, item in
            let segments: [String?] = path.split(separator: "/", omittingEmptySubsequences: true).map {
                $0.hasPrefix("{") && $0.hasSuffix("}") ? nil : String($0)
            }
            var methods: [HTTPRequest.Method] = []
            if case .object(let operations) = item {
                for verb in verbs where operations[verb] != nil {
                    if let m = HTTPRequest.Method(verb.uppercased()) { methods.append(m) }
                }
            }
            return (segments, methods)
        }
    }()

    /// The documented methods of the path that `path` matches; empty when none does.
    public static func methods(forPath path: String) -> [HTTPRequest.Method] {
        let parts = path.split(separator: "/", omittingEmptySubsequences: true)
        for endpoint in endpoints where endpoint.segments.count == parts.count {
            if zip(endpoint.segments, parts).allSatisfy({ $0.0 == nil || $0.0 == String($0.1) }) {
                return endpoint.methods
            }
        }
        return []
    }
}
