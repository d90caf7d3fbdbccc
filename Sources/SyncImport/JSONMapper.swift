import SyncProtocol

/// Maps a ``BSONDocument`` to the JSON body the server stores, type by type as
/// docs/MIGRATING.md ("Types") tabulates, asking the ``ImportPolicy`` where the table leaves a
/// choice. Pure: no I/O (a blob closure of the policy may do some).
public struct JSONMapper: Sendable {
    public var policy: ImportPolicy

    public init(policy: ImportPolicy = ImportPolicy()) {
        self.policy = policy
    }

    /// The body of `document` of `collection`. Refuses (``ImportError``, naming the field) a
    /// value with no JSON form under the policy, a repeated field name, and U+0000 in a
    /// string or field name (PostgreSQL cannot store it).
    public func map(_ document: BSONDocument, collection: String) throws(ImportError) -> [String: JSONValue] {
        var walk = MappingWalk(policy: policy, collection: collection, documentID: document["_id"])
        do throws(ImportError) {
            return try walk.object(document)
        } catch {
            var error = error
            if error.documentID == nil, let id = document["_id"] { error.documentID = id.displayText }
            throw error
        }
    }

    /// One value at `path` (for tests and callers mapping parts of documents).
    public func map(_ value: BSONValue, collection: String, path: FieldPath = .root) throws(ImportError) -> JSONValue {
        var walk = MappingWalk(policy: policy, collection: collection, documentID: nil)
        for component in path.components { walk.path.push(component) }
        return try walk.value(value)
    }
}

struct MappingWalk {
    let policy: ImportPolicy
    let collection: String
    let documentID: BSONValue?
    var path = PathStack()

    init(policy: ImportPolicy, collection: String, documentID: BSONValue?) {
        self.policy = policy
        self.collection = collection
        self.documentID = documentID
    }

    func refusal(_ kind: ImportError.Kind, _ message: String) -> ImportError {
        ImportError(kind, message, path: path.path)
    }

    mutating func object(_ document: BSONDocument) throws(ImportError) -> [String: JSONValue] {
        var fields: [String: JSONValue] = [:]
        fields.reserveCapacity(document.count)
        for field in document.fields {
            path.push(.field(field.name))
            guard !field.name.containsNUL else {
                throw refusal(.invalidField, "field names may not contain U+0000")
            }
            guard fields[field.name] == nil else {
                throw refusal(.invalidField, "the field name appears twice in its document; a JSON object holds it once")
            }
            fields[field.name] = try value(field.value)
            path.pop()
        }
        return fields
    }

    /// The JSON form of a value that needs neither the policy nor a check (null, booleans,
    /// numbers but non-finite doubles, Decimal128, ObjectId, dates RFC 3339 writes); `nil` for
    /// any other. The one table of those types, for this walk and ``DirectMapper``'s.
    static func plain(_ value: BSONValue) -> JSONValue? {
        switch value {
        case .null, .undefined: .null
        case .bool(let flag): .bool(flag)
        case .int32(let number): .int(Int64(number))
        case .int64(let number): .int(number)
        case .double(let number): number.isFinite ? .double(number) : nil
        case .decimal128(let decimal): .string(decimal.description)
        case .objectID(let id): .string(id.hex)
        case .dateTime(let milliseconds): BSONDateTime.rfc3339(milliseconds).map(JSONValue.string)
        default: nil
        }
    }

    mutating func value(_ value: BSONValue) throws(ImportError) -> JSONValue {
        if let plain = Self.plain(value) { return plain }
        switch value {
        case .null, .undefined, .bool, .int32, .int64, .decimal128, .objectID:
            preconditionFailure("mapped by plain(_:)")
        case .double(let number):
            switch policy.nonFiniteDoubles {
            case .string: return .string(number.isNaN ? "NaN" : number < 0 ? "-Infinity" : "Infinity")
            case .null: return .null
            case .refuse:
                let text = number.isNaN ? "NaN" : number < 0 ? "-Infinity" : "Infinity"
                return try fallback(value, else: "the double \(text) has no JSON form; the policy refuses non-finite doubles")
            }
        case .string(let text), .symbol(let text):
            guard !text.containsNUL else { throw refusal(.invalidField, "strings may not contain U+0000") }
            return .string(text)
        case .dateTime(let milliseconds):
            return try fallback(value, else: "the date \(milliseconds) ms from 1970 is outside the years 0001–9999 that RFC 3339 writes")
        case .document(let document):
            return .object(try object(document))
        case .array(let elements):
            var values: [JSONValue] = []
            values.reserveCapacity(elements.count)
            for (index, element) in elements.enumerated() {
                path.push(.index(index))
                values.append(try self.value(element))
                path.pop()
            }
            return .array(values)
        case .binary(let binary):
            return try self.binary(binary)
        case .regularExpression, .dbPointer, .javaScript, .javaScriptWithScope, .timestamp, .minKey, .maxKey:
            return try fallback(value, else: "a \(value.typeName) has no JSON form in the import; see docs/MIGRATING.md, \"Types\"")
        }
    }

    mutating func binary(_ binary: BSONBinary) throws(ImportError) -> JSONValue {
        switch binary.subtype {
        case BSONBinary.uuid:
            guard binary.bytes.count == 16 else {
                return try fallback(.binary(binary), else: "a UUID (binary subtype 4) must hold 16 bytes, not \(binary.bytes.count)")
            }
            return .string(UUIDText.string(binary.bytes))
        case BSONBinary.legacyUUID where policy.legacyUUIDs != .binary:
            guard case .uuid(let order) = policy.legacyUUIDs else {
                return try fallback(
                    .binary(binary),
                    else: "a legacy UUID (binary subtype 3) does not say its driver's byte order; choose one in the policy (legacyUUIDs: .uuid(.standard), .uuid(.javaLegacy), .uuid(.csharpLegacy)) or .binary")
            }
            guard binary.bytes.count == 16 else {
                return try fallback(.binary(binary), else: "a legacy UUID (binary subtype 3) must hold 16 bytes, not \(binary.bytes.count)")
            }
            return .string(UUIDText.string(order.standardBytes(binary.bytes)))
        default:
            switch policy.binary.treatment(collection: collection, path: path.path) {
            case .base64:
                return BinaryTreatment.base64Text(binary.bytes)
            case .blob(let store):
                let field = BinaryField(collection: collection, documentID: documentID, path: path.path, binary: binary)
                do {
                    return try store(field)
                } catch var error as ImportError {
                    if error.path == nil { error.path = path.path }
                    throw error
                } catch {
                    throw refusal(.refusedByPolicy, "the binary policy refused it: \(error)")
                }
            }
        }
    }

    /// The policy's fallback for a value refused by default, or the refusal.
    func fallback(_ value: BSONValue, else message: String) throws(ImportError) -> JSONValue {
        let field = FieldValue(collection: collection, documentID: documentID, path: path.path, value: value)
        let replacement: JSONValue?
        do {
            replacement = try policy.fallback(field)
        } catch var error as ImportError {
            if error.path == nil { error.path = path.path }
            throw error
        } catch {
            throw refusal(.refusedByPolicy, "\(message): \(error)")
        }
        guard let replacement else { throw refusal(.unsupportedValue, message) }
        return replacement
    }
}
