import PostgresNIO

/// The rows of a statement run by ``PostgresClient/fetch(_:logger:file:line:)``, read whole:
/// iterated and decoded like postgres-nio's `PostgresRowSequence`.
package struct QueryRows: AsyncSequence, Sendable {
    package typealias Element = PostgresRow

    package let rows: [PostgresRow]

    package struct AsyncIterator: AsyncIteratorProtocol {
        var base: IndexingIterator<[PostgresRow]>
        package mutating func next() async throws -> PostgresRow? { base.next() }
    }

    package func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: rows.makeIterator()) }

    /// The rows decoded as the given column types.
    package func decode<each Column: PostgresDecodable & Sendable>(
        _ columnTypes: (repeat each Column).Type, file: String = #fileID, line: Int = #line
    ) -> AsyncThrowingMapSequence<QueryRows, (repeat each Column)> {
        map { row in try row.decode(columnTypes, file: file, line: line) }
    }
}
