import Foundation
import PackagePlugin

/// Puts what `herald` reads at run time into the binary: the migrations and
/// the demo's sample data from `Sql/`, and the commit the build was made from,
/// so that a copied binary runs `herald migrate` and `herald demo` with no
/// folder beside it. SwiftPM's own `.embedInCode` takes only files inside the
/// target's folder, and `Sql/` stays at the top of the repository.
@main
struct EmbedFiles: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) async throws -> [Command] {
        let root = context.package.directoryURL
        let sql = root.appending(path: "Sql")
        let queries = sql.appending(path: "queries")
        let names = try FileManager.default.contentsOfDirectory(atPath: sql.path).filter(Self.isEmbedded).sorted()
        let statements = ((try? FileManager.default.contentsOfDirectory(atPath: queries.path)) ?? [])
            .filter { $0.hasSuffix(".sql") }.sorted()
        let files = names.map { sql.appending(path: $0) } + statements.map { queries.appending(path: $0) }
        // The commit changes when HEAD or the index does; rebuild then.
        let git = ["HEAD", "index", "packed-refs"].map { root.appending(path: ".git/\($0)") }
            .filter { FileManager.default.fileExists(atPath: $0.path) }
        let output = context.pluginWorkDirectoryURL.appending(path: "EmbeddedFiles.swift")
        return [
            .buildCommand(
                displayName: "Embedding \(files.count) files of Sql/ and the commit",
                executable: try context.tool(named: "herald-embed").url,
                arguments: [output.path, root.path] + files.map(\.path),
                // The folder too: a statement file added is embedded at the next build.
                inputFiles: files + git + [queries],
                outputFiles: [output]),
        ]
    }

    /// The numbered migrations and the demo's sample data; not `schema.sql`,
    /// which is generated from the migrations for reading. (And every file of
    /// `Sql/queries/`: the statements the code runs.)
    static func isEmbedded(_ name: String) -> Bool {
        let migration = name.hasSuffix(".sql") && name.prefix(4).allSatisfy(\.isNumber) && name.dropFirst(4).first == "_"
        return migration || name == "sample_data.sql" || name == "sample_devices.tsv"
    }
}
