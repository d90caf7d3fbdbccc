import Crypto
import Foundation
import SyncProtocol

extension TestHTTPClient {
    /// The digest of `bytes`, as blobs are named.
    public static func digest(of bytes: Data) -> BlobDigest {
        BlobDigest(sha256: SHA256.hash(data: bytes))
    }

    /// `PUT /v1/blobs/{digest}` with `bytes`: the answer as it is.
    public func putBlob(
        _ bytes: Data, as digest: BlobDigest? = nil, contentType: String = "application/octet-stream", token: String?
    ) async throws -> Response {
        let digest = digest ?? Self.digest(of: bytes)
        return try await request(
            "PUT", "/v1/blobs/\(digest.rawValue)", body: bytes, token: token, headers: ["Content-Type": contentType])
    }

    /// Uploads `bytes` as a blob and returns the reference to put into a body; throws
    /// ``UnexpectedResponse`` unless the answer is 201 or 200.
    public func uploadBlob(_ bytes: Data, contentType: String = "application/octet-stream", token: String) async throws -> BlobReference {
        let response = try await putBlob(bytes, contentType: contentType, token: token)
        guard response.status == 201 || response.status == 200, let fields = response.json?.objectValue,
            let reference = try? BlobReference(fields: fields)
        else {
            throw UnexpectedResponse(response: response)
        }
        return reference
    }

    /// `GET /v1/blobs/{digest}?partition=…`, read through `partition` (`nil`: none named), with
    /// more headers (`Range`, `If-None-Match`).
    public func getBlob(
        _ digest: BlobDigest, in partition: Partition?, token: String?, headers: [String: String] = [:]
    ) async throws -> Response {
        try await request("GET", Self.blobPath(digest, in: partition), body: nil, token: token, headers: headers)
    }

    /// The path that reads `digest` through `partition`.
    public static func blobPath(_ digest: BlobDigest, in partition: Partition?) -> String {
        guard let partition else { return "/v1/blobs/\(digest.rawValue)" }
        let name = partition.description.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? partition.description
        return "/v1/blobs/\(digest.rawValue)?partition=\(name)"
    }
}
