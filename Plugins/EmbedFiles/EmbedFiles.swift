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
        let names = try FileManager.default.contentsOfDirectory(atPath: sql.path).filter(Self.isEmbedded).sorted()
        // The statements the code runs, and the migrations the baseline replaced (a database
        // made by some of them finishes them before it adopts the baseline).
        let folders = ["queries", "history"].map { sql.appending(path: $0) }
        let nested = folders.flatMap { folder in
            ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).filter { $0.hasSuffix(".sql") }.sorted()
                .map { folder.appending(path: $0) }
        }
        let files = names.map { sql.appending(path: $0) } + nested
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
                inputFiles: files + git + folders,
                outputFiles: [output]),
        ]
    }

    /// The numbered migrations and the demo's sample data; not `schema.sql`,
    /// which is generated from the migrations for reading. (And every `.sql`
    /// file of `Sql/queries/` and `Sql/history/`.)
    static func isEmbedded(_ name: String) -> Bool {
        let migration = name.hasSuffix(".sql") && name.prefix(4).allSatisfy(\.isNumber) && name.dropFirst(4).first == "_"
        return migration || name == "sample_data.sql" || name == "sample_devices.tsv"
    }
}
