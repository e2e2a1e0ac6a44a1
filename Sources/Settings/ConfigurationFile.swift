import Foundation
import HeraldCore
#if canImport(Glibc)
import Glibc
#endif
import Store
// TOML rather than JSON: operators write this file by hand, and TOML has
// comments, sections and no quoting of keys. TOMLKit (toml++ inside, a
// complete TOML 1.0 parser with line and column in its errors) parses it;
// Foundation's JSON reader would have needed no library, but gives neither
// comments nor positions. swift-configuration (already built, through
// Hummingbird) reads JSON and the environment, but it neither reports keys a
// file holds that nobody reads (a misspelt key would silently fall back to
// its default) nor names the file in its errors, and its types need macOS 15.
import TOMLKit

/// A configuration file (`--config FILE`, or `HERALD_CONFIG`): TOML whose
/// tables and keys are those of `ConfigurationKey.all` (`[serve]` `port = 8080`
/// for `HERALD_HTTP_PORT`). Reading it refuses a key it does not know, a
/// value of the wrong TOML type, and a file holding a secret that others may
/// read; every message names the file and the key, never a secret's value.
public struct ConfigurationFile: Sendable {
    public let path: String
    /// The file's values by environment variable name, as text the readers
    /// parse (an integer in decimal, a list joined by commas).
    let values: [String: String]
    /// The secret keys the file holds (`database.url` only when it holds a password).
    public let secrets: [String]

    public static func load(path: String) throws(ConfigurationError) -> ConfigurationFile {
        guard !path.isEmpty else { throw ConfigurationError("the configuration file's path is empty") }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw ConfigurationError("configuration file \(path) does not exist")
        }
        guard !isDirectory.boolValue else {
            throw ConfigurationError("configuration file \(path) is a directory, not a file")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigurationError("configuration file \(path) cannot be read (permissions?)")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw ConfigurationError("configuration file \(path) is not UTF-8 text")
        }
        let file = try parse(text, path: path)
        if !file.secrets.isEmpty, let mode = permissions(path), mode & 0o007 != 0 {
            throw ConfigurationError(
                "configuration file \(path) holds secrets (\(file.secrets.joined(separator: ", "))) and anyone on the machine may read it (mode \(String(mode & 0o777, radix: 8))); `chmod o-rwx \(path)`, or move the secrets to files (database.password_file, reply.secret_file)")
        }
        return file
    }

    /// The file's permission bits, following a symbolic link (a Kubernetes
    /// mount is one) to what it names.
    static func permissions(_ path: String) -> Int? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return Int(info.st_mode) & 0o7777
    }

    /// Reads TOML text (`path` only names it in messages). TOMLKit keeps
    /// the parsed table for the life of the process (it never frees one);
    /// a command reads one file once.
    static func parse(_ text: String, path: String) throws(ConfigurationError) -> ConfigurationFile {
        let table: TOMLTable
        do {
            table = try TOMLTable(string: text)
        } catch let error as TOMLParseError {
            // toml++'s description says what it expected, and sometimes the
            // character it saw instead ("…, saw 'x'"): that character may be
            // part of a secret, so only the position and the expectation are shown.
            var what = error.description
            if let saw = what.range(of: ", saw '") { what = String(what[..<saw.lowerBound]) }
            throw ConfigurationError(
                "configuration file \(path) is not valid TOML at line \(error.source.begin.line), column \(error.source.begin.column): \(what)")
        } catch {
            throw ConfigurationError("configuration file \(path) is not valid TOML")
        }
        var values: [String: String] = [:]
        var secrets: [String] = []
        let known = ConfigurationKey.sections
        for (section, content) in table {
            guard known.contains(section) else {
                throw ConfigurationError(
                    "configuration file \(path): unknown key \"\(section)\" (the tables are \(known.map { "[\($0)]" }.joined(separator: ", ")))")
            }
            guard let entries = content.table else {
                throw ConfigurationError(
                    "configuration file \(path): \"\(section)\" must be a table ([\(section)]), not a \(content.type)")
            }
            for (name, value) in entries {
                guard let key = ConfigurationKey.inFile(section: section, name: name) else {
                    let names = ConfigurationKey.all.filter { $0.section == section }.compactMap(\.name)
                    throw ConfigurationError(
                        "configuration file \(path): unknown key \"\(section).\(name)\" (the keys of [\(section)] are \(names.joined(separator: ", ")))")
                }
                let text = try Self.text(of: value, for: key, path: path)
                values[key.environment] = text
                if key.secret, key != .databaseURL || Self.urlHasPassword(text) {
                    secrets.append(key.fileKey ?? key.environment)
                }
            }
        }
        return ConfigurationFile(path: path, values: values, secrets: secrets)
    }

    /// The value as the environment would give it, refusing the wrong TOML type.
    static func text(of value: any TOMLValueConvertible, for key: ConfigurationKey, path: String) throws(ConfigurationError) -> String {
        func wrongType(_ expected: String) -> ConfigurationError {
            ConfigurationError("configuration file \(path): \(key.fileKey ?? key.environment) must be \(expected), not a TOML \(value.type)", key: key)
        }
        switch key.kind {
        case .integer:
            guard let n = value.int else { throw wrongType("a whole number (no quotes)") }
            return "\(n)"
        case .text, .choice:
            guard let s = value.string else { throw wrongType("a string (in quotes)") }
            return s
        case .list:
            guard let array = value.array else { throw wrongType("an array of strings ([\"…\", \"…\"])") }
            var items: [String] = []
            for item in array {
                guard let s = item.string else { throw wrongType("an array of strings ([\"…\", \"…\"])") }
                items.append(s)
            }
            return items.joined(separator: ",")
        }
    }

    static func urlHasPassword(_ url: String) -> Bool {
        URLComponents(string: url)?.password.map { !$0.isEmpty } ?? false
    }
}
