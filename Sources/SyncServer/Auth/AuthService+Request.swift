import Hummingbird
import PartitionSync
import SyncProtocol

extension AuthService {
    /// Who sent an HTTP request, by its `Authorization: Bearer` access token or API key;
    /// `unauthenticated` without one.
    func principal(of request: Request) async throws -> Principal {
        guard let credential = request.bearerCredential else {
            throw SyncError(.unauthenticated, "send Authorization: Bearer <access token>")
        }
        return try await authenticate(bearer: credential).principal
    }
}
