import Foundation
import Hummingbird
import PartitionSync
import SyncProtocol

/// Who may use the admin endpoints, the console's data and `/metrics`: API keys whose service
/// name the server lists in `adminServices`. Anyone else: 401 without a credential, 403 with
/// another.
struct AdminAccess: Sendable {
    let auth: AuthService
    let services: Set<String>

    func require(_ request: Request) async throws {
        guard case .service(let name) = try await auth.principal(of: request), services.contains(name) else {
            throw SyncError(.permissionDenied, "the admin endpoints, the console's data and /metrics take an admin API key")
        }
    }
}

extension SyncRequestContext {
    /// The `:partition` path parameter, percent-decoded.
    func partitionParameter() throws -> Partition {
        guard let raw = parameters.get("partition") else { throw SyncError(.invalidPartition, "no partition") }
        return try Partition(raw.removingPercentEncoding ?? raw)
    }
}

extension Request {
    /// The query parameter `name` as a count from 1 to `maximum` (`fallback` when absent).
    func limitParameter(_ name: String = "limit", fallback: Int, maximum: Int) throws -> Int {
        guard let text = uri.queryParameters.get(name) else { return fallback }
        guard let value = Int(text), value > 0 else { throw SyncError(.badRequest, "\(name) is a positive integer") }
        return min(value, maximum)
    }

    /// The query parameter `name`, without control characters; `nil` when absent or empty.
    func textParameter(_ name: String) throws -> String? {
        guard let text = uri.queryParameters.get(name), !text.isEmpty else { return nil }
        guard text.unicodeScalars.count <= 1_024, !text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw SyncError(.badRequest, "\(name) has at most 1,024 characters and no control characters")
        }
        return text
    }
}
