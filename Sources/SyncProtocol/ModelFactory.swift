/// Decodes documents into the model their `type` field names (CouchModel's model factory), so
/// one partition, or one collection, can hold several kinds of documents and an app reads each
/// as its own type.
///
/// ```swift
/// let wikiItems = ModelFactory(Wiki.self, WikiPage.self)   // keyed by each model's documentType
/// for item in try await handle.models(wikiItems) {
///     switch item {
///     case let wiki as Wiki: …
///     case let page as WikiPage: …
///     default: break
///     }
/// }
/// ```
public struct ModelFactory: Sendable {
    /// The body field that names a document's kind.
    public let typeField: String
    private let types: [String: any SyncModel.Type]

    /// A factory of `types`, each chosen when a document's `typeField` equals its
    /// ``SyncModel/documentType``; two types of one name are a programming error.
    public init(_ types: any SyncModel.Type..., typeField: String = "type") {
        self.init(types, typeField: typeField)
    }

    public init(_ types: [any SyncModel.Type], typeField: String = "type") {
        var byName: [String: any SyncModel.Type] = [:]
        for type in types {
            precondition(byName[type.documentType] == nil, "two models have the document type \(type.documentType)")
            byName[type.documentType] = type
        }
        self.typeField = typeField
        self.types = byName
    }

    /// The model type for a body: the one its type field names, `nil` for a body without one
    /// or of a type this factory does not know.
    public func modelType(of body: [String: JSONValue]) -> (any SyncModel.Type)? {
        body[typeField]?.stringValue.flatMap { types[$0] }
    }

    /// A body decoded as the model its type field names; `nil` when no model is known for it.
    /// A body of a known type that does not decode is a `type_mismatch` error naming `key`.
    public func model(of body: [String: JSONValue], key: ObjectKey) throws(SyncError) -> (any SyncModel)? {
        guard let type = modelType(of: body) else { return nil }
        return try type.decode(body, of: key)
    }

    /// The live objects whose type this factory knows, decoded, in the order given.
    public func models(_ objects: [SyncObject]) throws(SyncError) -> [any SyncModel] {
        var models: [any SyncModel] = []
        for object in objects {
            guard let body = object.body, let model = try model(of: body, key: object.key) else { continue }
            models.append(model)
        }
        return models
    }
}
