import Crypto
import Foundation
import Hummingbird
import Logging
import PartitionSync
import SyncProtocol
import SyncStorage

/// `PUT` and `GET /v1/blobs/{digest}` (docs/PROTOCOL.md, "Blobs"): content-addressed uploads
/// checked against their digest, size limit and the uploader's quota; downloads streamed a
/// chunk at a time, with ranges, through a partition the reader names (`?partition=`), when
/// they may read it and a live object in it references the blob. Whoever uploads the bytes or
/// downloads them whole holds them, and may cite the blob elsewhere.
struct BlobRoutes: Sendable {
    let blobs: BlobStore
    let store: ObjectStore
    let auth: AuthService
    let permissions: Permissions
    let configuration: BlobConfiguration
    let metrics: ServerMetrics

    func add(to router: Router<SyncRequestContext>) {
        let group = router.group("v1/blobs")
        group.put(":digest") { request, context in try await self.put(request, context) }
        group.get(":digest") { request, context in try await self.get(request, context, sendingBytes: true) }
        group.head(":digest") { request, context in try await self.get(request, context, sendingBytes: false) }
    }

    // MARK: Upload

    private func put(_ request: Request, _ context: SyncRequestContext) async throws -> Response {
        let principal = try await auth.principal(of: request)
        let digest = try digestParameter(context)
        let contentType = try Self.contentType(of: request)
        let declared = request.headers[.contentLength].flatMap { Int64($0) }
        if let declared, declared > configuration.maximumBytes {
            throw SyncError(.payloadTooLarge, "a blob holds at most \(configuration.maximumBytes) bytes")
        }
        let existing = try await blobs.blob(digest)
        if existing == nil, let declared {
            let used = try await blobs.usage(of: principal.description)
            guard used + declared <= configuration.quotaBytes else {
                throw SyncError(
                    .quotaExceeded,
                    "this blob (\(declared) bytes) would take you over your quota of \(configuration.quotaBytes) bytes (\(used) used)")
            }
        }
        // The bytes are read and hashed even when the blob is stored already: only who has
        // them learns that it is.
        var hasher = SHA256()
        var length: Int64 = 0
        let upload = existing == nil ? try await blobs.content.beginUpload(by: principal.description) : nil
        do {
            for try await buffer in request.body {
                length += Int64(buffer.readableBytes)
                guard length <= configuration.maximumBytes else {
                    throw SyncError(.payloadTooLarge, "a blob holds at most \(configuration.maximumBytes) bytes")
                }
                buffer.withUnsafeReadableBytes { hasher.update(bufferPointer: $0) }
                try await upload?.append(buffer)
            }
            let computed = BlobDigest(sha256: hasher.finalize())
            guard computed == digest else {
                throw SyncError(.digestMismatch, "the bytes sent have the digest \(computed), not \(digest)")
            }
            guard let upload else {
                try await blobs.recordHolder(digest, principal.description)
                return .json(BlobReference(digest: digest, length: length, contentType: existing!.contentType).json, status: .ok)
            }
            try await upload.finish()
            let isNew = try await blobs.publish(
                digest, location: upload.location, length: length, contentType: contentType, uploader: principal.description,
                quota: configuration.quotaBytes)
            if isNew { try? await upload.published() } else { try await blobs.recordHolder(digest, principal.description) }
            metrics.countBlobUpload(isNew ? "stored" : "existing", bytes: length)
            let stored = isNew ? contentType : try await blobs.blob(digest)?.contentType ?? contentType
            return .json(BlobReference(digest: digest, length: length, contentType: stored).json, status: isNew ? .created : .ok)
        } catch {
            if let upload { try? await blobs.content.remove([upload.location]) }
            throw error
        }
    }

    /// The media type to store: the request's `Content-Type`, or `application/octet-stream`.
    static func contentType(of request: Request) throws -> String {
        guard let value = request.headers[.contentType] else { return "application/octet-stream" }
        guard !value.isEmpty, value.utf8.count <= 255,
            !value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control || !$0.isASCII })
        else {
            throw SyncError(.badRequest, "Content-Type is 1 to 255 printable ASCII characters")
        }
        return value
    }

    // MARK: Download

    private func get(_ request: Request, _ context: SyncRequestContext, sendingBytes: Bool) async throws -> Response {
        let principal = try await auth.principal(of: request)
        let digest = try digestParameter(context)
        guard let name = request.uri.queryParameters.get("partition") else {
            throw SyncError(
                .badRequest, "name the partition through which you read the blob: GET /v1/blobs/{digest}?partition=conversation%3D7")
        }
        let partition = try Partition(name)
        // Stored or not, a blob the principal may not read through this partition is not
        // found: the answer says nothing of other users' blobs.
        let permissionContext = PermissionContext(source: StoreObjectSource(store: store), logger: context.logger)
        guard try await permissions.canRead(principal, partition, context: permissionContext),
            let blob = try await blobs.blob(digest, referencedIn: partition)
        else {
            throw SyncError(.notFound, "no blob \(digest) in \(partition) that you may read")
        }
        let etag = "\"\(digest.rawValue)\""
        var headers: HTTPFields = [
            .eTag: etag, .acceptRanges: "bytes", .contentType: blob.contentType,
            // The bytes of a digest never change; the answer depends on who asks.
            .cacheControl: "private, max-age=31536000, immutable",
        ]
        if let tags = request.headers[.ifNoneMatch],
            tags.split(separator: ",").contains(where: { $0.trimmingCharacters(in: .whitespaces) == etag || $0 == "*" })
        {
            return Response(status: .notModified, headers: headers)
        }
        var range = BlobRange(header: request.headers[.range], length: blob.length)
        if let ifRange = request.headers[.ifRange], ifRange != etag { range = .whole }
        let bytes: Range<Int64>
        let status: HTTPResponse.Status
        switch range {
        case .whole:
            (bytes, status) = (0..<blob.length, .ok)
        case .part(let part):
            (bytes, status) = (part, .partialContent)
            headers[.contentRange] = "bytes \(part.lowerBound)-\(part.upperBound - 1)/\(blob.length)"
        case .unsatisfiable:
            headers[.contentRange] = "bytes */\(blob.length)"
            let error = SyncError(.badRequest, "the range is outside the blob's \(blob.length) bytes")
            var response = Response.json(error.httpBody, status: .rangeNotSatisfiable)
            response.headers[.contentRange] = headers[.contentRange]
            return response
        }
        headers[.contentLength] = String(bytes.count)
        guard sendingBytes else { return Response(status: status, headers: headers) }
        // Who downloads the whole blob holds it, and may cite it (PROTOCOL.md, "Blobs").
        if status == .ok { try await blobs.recordHolder(digest, principal.description) }
        let reader = blobs.content.read(blob.location, range: bytes)
        let metrics = self.metrics
        let count = Int64(bytes.count)
        return Response(
            status: status, headers: headers,
            body: ResponseBody(contentLength: Int(count)) { writer in
                // One piece (a chunk at most) in memory at a time: the writer waits while the
                // connection cannot take more.
                for try await piece in reader { try await writer.write(piece) }
                try await writer.finish(nil)
                metrics.countBlobDownload(bytes: count)
            })
    }

    private func digestParameter(_ context: SyncRequestContext) throws -> BlobDigest {
        // `sha256%3A…` as clients that encode the colon send it.
        let raw = context.parameters.get("digest") ?? ""
        return try BlobDigest(raw.removingPercentEncoding ?? raw)
    }
}
