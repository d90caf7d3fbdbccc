import PartitionSync
import PostgresNIO
import SyncStorage

/// SQL of the application's own in a handler's transaction: outside the stable API, asked
/// for explicitly with `@_spi(SQL) import PartitionSyncServer` (and `import PostgresNIO`). What it
/// writes commits or rolls back with the handler's other writes and the trigger's progress;
/// it sees PartitionSync's tables as they are, which may change between versions.
extension TriggerContext {
    /// Runs `body` with the transaction's connection, after writing the changes the handler
    /// applied so far (the transaction defers them), so that the SQL sees them.
    @_spi(SQL)
    public func withConnection<Result>(_ body: (PostgresConnection) async throws -> Result) async throws -> Result {
        // Only the engine's transaction reaches a handler in a server.
        guard let transaction = transaction as? WriteTransaction else {
            throw SyncError(.internal, "SQL needs the server's transaction: not available in an in-memory test")
        }
        try await transaction.writeStaged()
        return try await body(transaction.connection)
    }
}
