import Crypto
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import SyncProtocol

extension SyncClient {
    /// Keeps `data` as a blob and returns the reference to put into an object's body. The
    /// bytes are stored locally at once and uploaded when online, before any write queued
    /// after this call (and after a restart, if the app stops first), so the write that
    /// references them is never refused for want of them. `payload_too_large` over
    /// ``SyncClientConfiguration/maximumBlobBytes``.
    ///
    /// ```swift
    /// let photo = try await client.attach(jpeg, contentType: "image/jpeg")
    /// try await client.write([.put(message, body: ["text": "look", "photo": photo.json])], in: room)
    /// ```
    public func attach(_ data: Data, contentType: String) throws -> BlobReference {
        guard data.count <= configuration.maximumBlobBytes else {
            throw SyncError(.payloadTooLarge, "the blob is \(data.count) bytes; the server takes at most \(configuration.maximumBlobBytes)")
        }
        let reference = BlobReference(
            digest: BlobDigest(sha256: SHA256.hash(data: data)), length: Int64(data.count), contentType: contentType)
        // Checks the content type as the server would.
        _ = try BlobReference(fields: reference.json.objectValue ?? [:])
        try store.keepBlob(data, as: reference, pendingUpload: true)
        wakeUploader()
        return reference
    }

    /// ``attach(_:contentType:)`` with the contents of a file.
    public func attach(contentsOf file: URL, contentType: String) throws -> BlobReference {
        try attach(try Data(contentsOf: file, options: .mappedIfSafe), contentType: contentType)
    }

    /// The bytes of a blob an object of `partition` references: from the local cache, or
    /// downloaded through that partition (and then cached, within
    /// ``SyncClientConfiguration/blobCacheBytes``). `not_found` when no live object of
    /// `partition` that this user may read references it; `unavailable` offline when it is
    /// not cached.
    public func blob(_ reference: BlobReference, in partition: Partition) async throws -> Data {
        if let data = try store.keptBlob(reference.digest) { return data }
        guard let token = try await freshAccessToken() else {
            throw SyncError(.unauthenticated, "sign in to download blobs")
        }
        var components = URLComponents(
            url: configuration.serverURL.appendingPathComponent("/v1/blobs/\(reference.digest.rawValue)"), resolvingAgainstBaseURL: false)!
        components.percentEncodedQueryItems = [
            URLQueryItem(
                name: "partition",
                value: partition.description.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? partition.description)
        ]
        var request = URLRequest(url: components.url!)
        request.timeoutInterval = 120
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await URLSession.shared.data(for: request)
        } catch {
            throw SyncError(.unavailable, "the blob could not be downloaded: \(error.localizedDescription)")
        }
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        guard status == 200 else {
            throw Self.error(from: try? JSONParser().parse(Array(data)), status: status)
        }
        guard BlobDigest(sha256: SHA256.hash(data: data)) == reference.digest else {
            throw SyncError(.digestMismatch, "the downloaded bytes are not \(reference.digest)")
        }
        try store.keepBlob(data, as: reference, pendingUpload: false)
        try store.evictBlobs(toFit: configuration.blobCacheBytes)
        return data
    }

    /// Blobs attached and not yet uploaded.
    public func pendingBlobUploads() throws -> Int { try store.pendingBlobCount() }

    /// What happened to one blob upload attempt.
    enum BlobUploadOutcome {
        case stored
        /// Refused for good (too large, over quota): the blob is no longer pinned, and the
        /// writes that reference it will be refused with `blob_missing`.
        case refused(SyncError)
        /// The server could not be reached or failed: try again later.
        case failed
    }

    /// Uploads one attached blob.
    func upload(_ reference: BlobReference) async -> BlobUploadOutcome {
        guard let data = try? store.keptBlob(reference.digest) else {
            return .refused(SyncError(.notFound, "the bytes of \(reference.digest) are gone from the local store"))
        }
        guard let token = try? await freshAccessToken() else { return .failed }
        var request = URLRequest(url: configuration.serverURL.appendingPathComponent("/v1/blobs/\(reference.digest.rawValue)"))
        request.httpMethod = "PUT"
        request.timeoutInterval = 300
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        request.setValue(reference.contentType, forHTTPHeaderField: "Content-Type")
        do {
            let (body, response) = try await URLSession.shared.upload(for: request, from: data)
            let status = (response as? HTTPURLResponse)?.statusCode ?? 0
            switch status {
            case 200, 201: return .stored
            case 400, 413: return .refused(Self.error(from: try? JSONParser().parse(Array(body)), status: status))
            default: return .failed
            }
        } catch {
            return .failed
        }
    }
}
