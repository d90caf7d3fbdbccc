import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import PartitionSync
import SyncProtocol

extension Response {
    /// A JSON response with the engine's serializer.
    static func json(_ value: JSONValue, status: HTTPResponse.Status = .ok) -> Response {
        var buffer = ByteBuffer()
        buffer.writeBytes(value.jsonBytes)
        return Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: buffer))
    }

    /// The contract's error body with the status of its code; `rate_limited` says when to
    /// retry (60 seconds unless the limit knows better).
    static func error(_ error: SyncError, retryAfter: Int = 60) -> Response {
        var response = json(error.httpBody, status: error.code.httpStatus)
        if error.code == .rateLimited { response.headers[.retryAfter] = "\(retryAfter)" }
        return response
    }
}

extension Request {
    /// The body parsed as JSON; `payload_too_large` or `bad_request` when it cannot be.
    func jsonBody(limit: Int, maximumDepth: Int) async throws -> JSONValue {
        let buffer: ByteBuffer
        do {
            buffer = try await body.collect(upTo: limit)
        } catch {
            throw SyncError(.payloadTooLarge, "the request body is larger than \(limit) bytes")
        }
        do {
            return try JSONParser(maximumDepth: maximumDepth).parse(buffer.readableBytesView)
        } catch {
            throw SyncError(error.reason == .tooDeep ? .jsonTooDeep : .badRequest, "the body is not valid JSON: \(error)")
        }
    }

    /// The credential of an `Authorization: Bearer …` header.
    var bearerCredential: String? { headers.bearerCredential }
}

/// Answers every error thrown by a route with the contract's error body, never with
/// internals, and names the request id in a header.
struct ErrorMiddleware: RouterMiddleware {
    typealias Context = SyncRequestContext
    let metrics: ServerMetrics
    let routes: RouteTable

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response: Response
        do {
            response = try await next(request, context)
        } catch let error as SyncError {
            metrics.countError(error.code.rawValue)
            response = .error(error)
        } catch let limited as RateLimited {
            metrics.countError(limited.error.code.rawValue)
            response = .error(limited.error, retryAfter: limited.retryAfter)
        } catch let error as HTTPError {
            if error.status == .notFound, let allowed = routes.methods(for: request.uri.path) {
                response = .error(SyncError(.methodNotAllowed, "\(request.method) is not allowed here; use \(allowed.map(\.rawValue).joined(separator: ", "))"))
                response.headers[.allow] = allowed.map(\.rawValue).joined(separator: ", ")
            } else {
                response = .error(SyncError(error.status == .notFound ? .notFound : .badRequest, error.body ?? "\(error.status)"))
            }
        } catch {
            let failure = ServerError.describe(error, logger: context.logger)
            metrics.countError(failure.code.rawValue)
            response = .error(failure)
        }
        response.headers[HTTPField.Name("x-request-id")!] = context.id
        return response
    }
}

extension HTTPFields {
    /// The credential of an `Authorization: Bearer …` header.
    var bearerCredential: String? {
        guard let header = self[.authorization] else { return nil }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        return String(parts[1]).trimmingCharacters(in: .whitespaces)
    }
}
