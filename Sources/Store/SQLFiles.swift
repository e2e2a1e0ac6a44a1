import Embedded
import Foundation

/// Where Herald's SQL files come from: the migrations (`NNNN_name.sql`) and
/// the demo's sample data. A build embeds the `Sql/` folder it was built from
/// (the EmbedFiles plugin), so a copied binary needs no folder beside it;
/// `HERALD_SQL_DIR` names a folder to read instead.
public enum SQLFiles: Sendable, Hashable, CustomStringConvertible {
    /// The files of `Sql/` as they were when the binary was built.
    case embedded
    /// The files of a folder, read when asked for.
    case directory(URL)

    public var description: String {
        switch self {
        case .embedded: "embedded"
        case .directory(let url): url.path
        }
    }

    /// The names of the files there, sorted.
    public func names() throws(StoreError) -> [String] {
        switch self {
        case .embedded:
            return EmbeddedFiles.base64.keys.sorted()
        case .directory(let url):
            do {
                // The files of queries/ and history/ keep their folder, as the embedded ones do.
                let nested = ["queries", "history"].flatMap { folder in
                    ((try? FileManager.default.contentsOfDirectory(atPath: url.appendingPathComponent(folder).path)) ?? [])
                        .map { folder + "/" + $0 }
                }
                return (try FileManager.default.contentsOfDirectory(atPath: url.path) + nested).sorted()
            } catch {
                throw StoreError.migration("cannot read the SQL directory \(url.path): \(error.localizedDescription)",
                                           underlying: error)
            }
        }
    }

    /// The bytes of one file.
    public func data(_ name: String) throws(StoreError) -> Data {
        switch self {
        case .embedded:
            guard let text = EmbeddedFiles.base64[name], let data = Data(base64Encoded: text) else {
                throw StoreError.migration("the binary holds no \(name)")
            }
            return data
        case .directory(let url):
            let path = url.appendingPathComponent(name).path
            guard let data = FileManager.default.contents(atPath: path) else {
                throw StoreError.migration("cannot read \(path)")
            }
            return data
        }
    }

    /// One file as UTF-8 text.
    public func text(_ name: String) throws(StoreError) -> String {
        let data = try data(name)
        guard let text = String(data: data, encoding: .utf8) else {
            throw StoreError.migration("\(name) (\(self)) is not UTF-8 text")
        }
        return text
    }
}
