/// A reference from an object's body to a blob: a JSON object
/// `{"@blob": "sha256:…", "length": N, "contentType": "image/jpeg"}` anywhere in the body.
/// An object keeps the blobs it references: a user who may read the object may read them,
/// and they are not collected while it lives (docs/PROTOCOL.md, "Blobs").
public struct BlobReference: Hashable, Sendable {
    /// The field that makes a JSON object a blob reference.
    public static let field = "@blob"

    public var digest: BlobDigest
    /// The blob's size in bytes.
    public var length: Int64
    /// The media type the blob was stored with.
    public var contentType: String

    public init(digest: BlobDigest, length: Int64, contentType: String) {
        self.digest = digest
        self.length = length
        self.contentType = contentType
    }

    /// Reads a reference object; `invalid_blob_reference` when it is not well formed.
    public init(fields: [String: JSONValue]) throws(SyncError) {
        guard let digest = fields[Self.field]?.stringValue else {
            throw SyncError(.invalidBlobReference, "a blob reference has a string '@blob'")
        }
        guard let length = fields["length"]?.intValue, length >= 0 else {
            throw SyncError(.invalidBlobReference, "a blob reference has a non-negative integer 'length'")
        }
        guard let contentType = fields["contentType"]?.stringValue, !contentType.isEmpty, contentType.utf8.count <= 255 else {
            throw SyncError(.invalidBlobReference, "a blob reference has a 'contentType' of 1 to 255 bytes")
        }
        guard fields.count == 3 else {
            throw SyncError(.invalidBlobReference, "a blob reference has only '@blob', 'length' and 'contentType'")
        }
        self.init(digest: try BlobDigest(digest), length: length, contentType: contentType)
    }

    /// The reference as it is written into a body.
    public var json: JSONValue {
        ["@blob": .string(digest.rawValue), "length": .int(length), "contentType": .string(contentType)]
    }

    /// Every blob reference in `value`, in document order (a digest may repeat); throws
    /// `invalid_blob_reference` for an object with an `@blob` field that is not a reference.
    public static func references(in value: JSONValue) throws(SyncError) -> [BlobReference] {
        var found: [BlobReference] = []
        try collect(value, into: &found)
        return found
    }

    private static func collect(_ value: JSONValue, into found: inout [BlobReference]) throws(SyncError) {
        switch value {
        case .object(let fields):
            if fields[field] != nil {
                found.append(try BlobReference(fields: fields))
                return
            }
            for field in fields.values { try collect(field, into: &found) }
        case .array(let elements):
            for element in elements { try collect(element, into: &found) }
        default:
            return
        }
    }
}

/// A model type (``SyncModel``) holds a reference as a field: it is coded as the reference object.
extension BlobReference: Codable {
    private enum CodingKeys: String, CodingKey {
        case digest = "@blob"
        case length
        case contentType
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let text = try container.decode(String.self, forKey: .digest)
        do {
            self.init(
                digest: try BlobDigest(text), length: try container.decode(Int64.self, forKey: .length),
                contentType: try container.decode(String.self, forKey: .contentType))
        } catch let error as SyncError {
            throw DecodingError.dataCorruptedError(forKey: .digest, in: container, debugDescription: error.message)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(digest.rawValue, forKey: .digest)
        try container.encode(length, forKey: .length)
        try container.encode(contentType, forKey: .contentType)
    }
}
