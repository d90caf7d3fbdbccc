import SyncProtocol

/// The code of the ``SyncError`` `body` throws, or `nil` when it throws nothing (or something else).
func errorCode(_ body: () throws -> Any) -> SyncError.Code? {
    do {
        _ = try body()
        return nil
    } catch let error as SyncError {
        return error.code
    } catch {
        return SyncError.Code("unexpected: \(error)")
    }
}
