import Foundation
import PostgresNIO
import Store
import Testing
import TestSupport

/// Every table, view, function, procedure and trigger the migrations make
/// says what it owns and why, in a `COMMENT ON` beside it (Sql/0052 gave the
/// existing ones theirs), so that `Sql/schema.sql` is a map of the schema. A
/// migration that adds an object without one fails here, naming it.
///
/// Looked at: every schema but PostgreSQL's own (`public`, `analyst`, and
/// any a later migration makes); tables (partitioned ones included), views
/// and materialized views; functions and procedures, except an extension's;
/// triggers, except PostgreSQL's internal ones and the clones a partition
/// gets of its parent table's trigger. Left out: `herald_migrations` (made by
/// the Migrator, not by a migration) and the per-campaign ledger partitions
/// `deliveries_c<id>` (made by runs, not by a migration). Sequences and
/// indexes need no comment.
@Suite("Schema comments")
struct SchemaCommentsTests {
    /// The objects without a comment (or with an empty one): kind and name,
    /// the name as `\df` and `\d` spell it (`herald_f(bigint,text)`,
    /// `analyst.lift`, `a_trigger on a_table`).
    static let uncommented = """
        SELECT o.kind, o.name
        FROM (
            SELECT CASE c.relkind WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view' ELSE 'table' END AS kind,
                   c.oid::regclass::text AS name, obj_description(c.oid, 'pg_class') AS description, c.oid AS oid, 'pg_class'::regclass AS catalog
            FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE c.relkind IN ('r', 'p', 'v', 'm') AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname !~ '^pg_'
              AND NOT (n.nspname = 'public' AND c.relname = 'herald_migrations')
              AND NOT (c.relispartition AND c.relname ~ '^deliveries_c[0-9]+$')
            UNION ALL
            SELECT CASE p.prokind WHEN 'p' THEN 'procedure' ELSE 'function' END,
                   p.oid::regprocedure::text, obj_description(p.oid, 'pg_proc'), p.oid, 'pg_proc'::regclass
            FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
            WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname !~ '^pg_'
            UNION ALL
            SELECT 'trigger', t.tgname || ' on ' || t.tgrelid::regclass::text, obj_description(t.oid, 'pg_trigger'), t.oid, 'pg_trigger'::regclass
            FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE NOT t.tgisinternal AND t.tgparentid = 0 AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname !~ '^pg_'
        ) o
        WHERE coalesce(btrim(o.description), '') = ''
          AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = o.catalog AND d.objid = o.oid AND d.deptype = 'e')
        ORDER BY o.kind, o.name
        """

    @Test func everyTableViewFunctionAndTriggerSaysWhatItOwns() async throws {
        let missing: [String] = try await TestDatabase.with { client, _ in
            var missing: [String] = []
            for try await (kind, name) in try await client.query(PostgresQuery(unsafeSQL: Self.uncommented), logger: TestDatabase.logger)
                .decode((String, String).self) {
                missing.append("\(kind) \(name)")
            }
            return missing
        }
        guard !missing.isEmpty else { return }
        Issue.record("""
            \(missing.count) object(s) of the schema have no comment; in the migration that makes each, say what it owns \
            and why it exists (COMMENT ON TABLE / VIEW / FUNCTION f(argument types) / PROCEDURE / TRIGGER t ON table IS '…'), \
            then regenerate Sql/schema.sql with scripts/schema:
            \(missing.map { "  " + $0 }.joined(separator: "\n"))
            """)
    }
}
