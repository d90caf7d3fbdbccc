import SyncProtocol

/// Maps a parsed Extended JSON document straight to the body ``JSONMapper`` would make of it,
/// without the ``BSONDocument`` in between: the parser's object is the body, with only its
/// type wrappers (`{"$oid": …}`, `{"$date": …}`, `{"$numberLong": …}` …) replaced by their
/// JSON forms. A mongoexport document of plain values and dates, ids and numbers is read, mapped
/// and counted in one walk instead of three (decoding and mapping through a ``BSONDocument``,
/// each field's name sorted and hashed again, was a fifth of the import's reading). Pure.
///
/// Only what needs neither the application's policy nor a refusal is mapped here: a document
/// holding a binary, a UUID, a non-finite double, a date RFC 3339 cannot write, a type with no
/// JSON form, U+0000 in a string or field name, or a wrapper that is not well formed, gives
/// `nil`, and its reader takes the way through ``ExtendedJSONDecoder`` and ``JSONMapper``, which
/// maps or refuses it as always. The wrappers are read by the decoder's own walk, and their
/// values mapped by the mapper's own table (``MappingWalk/plain(_:)``), so both ways give the
/// same body, the same conversions and the same forms.
public struct DirectMapper: Sendable, Hashable {
    /// The top-level fields kept as BSON values in the ``SourceDocument`` (which then holds
    /// only those): the ones ``DocumentPlacement`` reads (``DocumentPlacement/fieldsRead``).
    public var keptFields: [String]

    public init(keptFields: [String]) {
        self.keptFields = keptFields
    }

    /// What ``map(_:decoder:)`` gives: the document with only the ``keptFields`` present, the
    /// body, the conversions counted, and the forms of Extended JSON seen.
    public struct Mapped: Sendable {
        public var document: BSONDocument
        public var body: MappedBody
        public var forms: ExtendedJSONForms
    }

    /// The document and body of `json`, or `nil` when it must take the way through the
    /// ``BSONDocument`` (see above). Taken, not borrowed: the parser's object becomes the body,
    /// changed in place (a caller that keeps `json` makes it copy the object whole).
    public func map(_ json: consuming JSONValue, decoder: ExtendedJSONDecoder) -> Mapped? {
        guard case .object(var fields) = consume json else { return nil }
        var walk = DirectWalk(walker: ExtendedJSONWalker(acceptsLegacyForms: decoder.acceptsLegacyForms))
        var kept: [BSONDocument.Field] = []
        var changes: [(name: String, value: JSONValue)] = []
        do throws(Unmapped) {
            for (name, value) in fields {
                guard !name.containsNUL else { throw Unmapped() }
                guard keptFields.contains(name) else {
                    if let mapped = try walk.value(value) { changes.append((name, mapped)) }
                    continue
                }
                // Decoded whole, as the decoder decodes it (a partition field that is a
                // document is refused naming its type), and mapped from that when it is a
                // plain value or a string (an `_id`'s wrapper read once).
                let decoded: BSONValue
                do {
                    decoded = try walk.walker.value(value)
                } catch {
                    throw Unmapped()
                }
                kept.append(BSONDocument.Field(name, decoded))
                if let plain = MappingWalk.plain(decoded) {
                    walk.tally.count(decoded)
                    // A wrapper is replaced; JSON's own values are their own form.
                    if case .object = value { changes.append((name, plain)) }
                } else if case .string(let text) = decoded {
                    guard !text.containsNUL else { throw Unmapped() }
                } else if let mapped = try walk.value(value) {
                    changes.append((name, mapped))
                }
            }
        } catch {
            return nil
        }
        for change in changes { fields[change.name] = change.value }
        return Mapped(document: BSONDocument(kept), body: MappedBody(body: fields, conversions: walk.tally), forms: walk.walker.forms)
    }
}

/// A body mapped by ``DirectMapper``, and the conversions it made.
public struct MappedBody: Sendable, Hashable {
    public var body: [String: JSONValue]
    public var conversions: ConversionTally

    public init(body: [String: JSONValue], conversions: ConversionTally) {
        self.body = body
        self.conversions = conversions
    }
}

/// Thrown inside ``DirectWalk`` when the document must take the other way.
private struct Unmapped: Error {}

private struct DirectWalk {
    var walker: ExtendedJSONWalker
    var tally = ConversionTally()

    /// `fields` with every value mapped; `nil` when none changed (the parser's object is the body).
    mutating func object(_ fields: [String: JSONValue]) throws(Unmapped) -> [String: JSONValue]? {
        var changes: [(name: String, value: JSONValue)] = []
        for (name, value) in fields {
            guard !name.containsNUL else { throw Unmapped() }
            if let mapped = try self.value(value) { changes.append((name, mapped)) }
        }
        guard !changes.isEmpty else { return nil }
        var result = fields
        for change in changes { result[change.name] = change.value }
        return result
    }

    /// The JSON form of `json`; `nil` when it is `json` itself.
    mutating func value(_ json: JSONValue) throws(Unmapped) -> JSONValue? {
        switch json {
        case .null, .bool:
            return nil
        case .string(let text):
            guard !text.containsNUL else { throw Unmapped() }
            return nil
        case .int(let number):
            // As the decoder reads it (relaxed; an Int64 where Int32 cannot hold it) and the
            // mapper writes it (the same integer).
            walker.forms.insert(.relaxed)
            if Int32(exactly: number) == nil { tally.count(.int64(number)) }
            return nil
        case .double(let number):
            guard number.isFinite else { throw Unmapped() }
            walker.forms.insert(.relaxed)
            return nil
        case .array(let elements):
            var mapped: [JSONValue]?
            for index in elements.indices {
                guard let element = try value(elements[index]) else { continue }
                if mapped == nil { mapped = elements }
                mapped![index] = element
            }
            return mapped.map(JSONValue.array)
        case .object(let fields):
            if fields.keys.contains(where: { $0.utf8.first == UInt8(ascii: "$") }) {
                let wrapped: BSONValue?
                do {
                    wrapped = try walker.wrapper(fields)
                } catch {
                    throw Unmapped()
                }
                if let wrapped {
                    guard let plain = MappingWalk.plain(wrapped) else { throw Unmapped() }
                    tally.count(wrapped)
                    return plain
                }
                // `$`-keys of no wrapper ($ref and $id of a DBRef): an ordinary document.
            }
            return try object(fields).map(JSONValue.object)
        }
    }
}
