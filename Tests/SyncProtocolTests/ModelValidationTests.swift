import SyncProtocol
import Testing

/// `SyncModel.validating(_:of:)`: what a validator of typed documents gets from a change.
@Suite("Typed documents in validators")
struct ModelValidationTests {
    struct Note: SyncModel, Equatable {
        static let collection = "note"
        var _id: String
        var type = "note"
        var text: String
    }

    static let key = try! ObjectKey(collection: "note", id: "n1")

    static func code(_ body: [String: JSONValue]) -> SyncError.Code? {
        do {
            _ = try Note.validating(body, of: key)
            return nil
        } catch {
            return error.code
        }
    }

    @Test("no body is no model; a body of the right type decodes; another type or a body that does not decode refuses the upload")
    func validating() throws {
        #expect(try Note.validating(nil, of: Self.key) == nil)
        #expect(try Note.validating(["_id": "n1", "type": "note", "text": "hi"], of: Self.key) == Note(_id: "n1", text: "hi"))
        #expect(Self.code(["_id": "n1", "type": "page", "text": "hi"]) == .validationFailed)
        #expect(Self.code(["_id": "n1", "text": "hi"]) == .validationFailed)
        #expect(Self.code(["_id": "n1", "type": "note", "text": 7]) == .validationFailed)
    }
}
