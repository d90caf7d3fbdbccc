import HTTPTypes
import PartitionSync
import SyncProtocol

extension SyncError.Code {
    /// The HTTP status an error with this code is answered with.
    package var httpStatus: HTTPResponse.Status {
        switch self {
        case .unauthenticated, .tokenExpired, .invalidCredentials, .sessionRevoked: .unauthorized
        case .permissionDenied, .permissionRevoked: .forbidden
        case .emailTaken, .blobMissing: .conflict
        case .validationFailed: .unprocessableContent
        case .payloadTooLarge, .quotaExceeded: .contentTooLarge
        case .rateLimited, .tooManySessions: .tooManyRequests
        case .internal: .internalServerError
        case .unavailable: .serviceUnavailable
        case .notFound: .notFound
        case .methodNotAllowed: .methodNotAllowed
        default: .badRequest
        }
    }
}

extension SyncError {
    /// The HTTP error body: `{"error": {"code": …, "message": …}}`.
    package var httpBody: JSONValue {
        var fields: [String: JSONValue] = ["code": .string(code.rawValue), "message": .string(message)]
        if let details { fields["details"] = details }
        return ["error": .object(fields)]
    }
}
