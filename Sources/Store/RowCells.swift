import PostgresNIO

/// One row's cells, decoded in order, each by code specialized for its
/// type in this module. PostgresNIO's `decode` of a whole row as a tuple
/// goes through a parameter pack that is not specialized: for the rows a
/// run reads by the hundred thousand (claims) that generic path costs more
/// than the decoding itself.
struct RowCells {
    private var cells: PostgresRow.Iterator

    init(_ row: PostgresRow) {
        cells = row.makeIterator()
    }

    /// The next cell as a `T`.
    mutating func next<T: PostgresDecodable>(_: T.Type) throws -> T {
        guard let cell = cells.next() else { throw StoreError.database("a row had fewer columns than its statement names (\(T.self) was next)") }
        return try cell.decode(T.self)
    }
}
