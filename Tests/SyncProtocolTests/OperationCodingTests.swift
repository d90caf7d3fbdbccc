import SyncProtocol
import Testing

@Suite("SyncOperation wire form")
struct OperationCodingTests {
    @Test(
        "every operation round-trips through its wire form",
        arguments: [
            #"{"op":"put","collection":"User","id":"u1","body":{"a":1}}"#,
            #"{"op":"set","collection":"User","id":"u1","path":"a.b[2]","value":[1,"x"]}"#,
            #"{"op":"unset","collection":"User","id":"u1","path":"a[id=c-1]"}"#,
            #"{"op":"increment","collection":"User","id":"u1","path":"n","by":-2.5}"#,
            #"{"op":"arrayAppend","collection":"User","id":"u1","path":"l","value":{"x":null}}"#,
            #"{"op":"arrayRemove","collection":"User","id":"u1","path":"l","match":{"x":1}}"#,
            #"{"op":"delete","collection":"User","id":"u1"}"#,
        ])
    func roundTrip(text: String) throws {
        let json = try JSONParser().parse(text)
        let operation = try SyncOperation(json: json)
        #expect(operation.json == json)
    }

    @Test(
        "malformed operations name what is wrong",
        arguments: [
            (#"[]"#, SyncError.Code.invalidOperation),
            (#"{"collection":"User","id":"u1"}"#, .invalidOperation),
            (#"{"op":"explode","collection":"User","id":"u1"}"#, .invalidOperation),
            (#"{"op":"put","collection":"User","id":"u1"}"#, .invalidOperation),
            (#"{"op":"put","collection":"User","id":"u1","body":[1]}"#, .invalidOperation),
            (#"{"op":"set","collection":"User","id":"u1","value":1}"#, .invalidOperation),
            (#"{"op":"set","collection":"User","id":"u1","path":"a..b","value":1}"#, .invalidPath),
            (#"{"op":"set","collection":"User","id":"u1","path":5,"value":1}"#, .invalidOperation),
            (#"{"op":"increment","collection":"User","id":"u1","path":"n","by":"1"}"#, .invalidOperation),
            (#"{"op":"delete","collection":"9User","id":"u1"}"#, .invalidCollection),
            (#"{"op":"delete","collection":"User","id":""}"#, .invalidObjectID),
            (#"{"op":"delete","collection":"User","id":7}"#, .invalidOperation),
        ])
    func malformed(text: String, code: SyncError.Code) throws {
        let json = try JSONParser().parse(text)
        #expect(errorCode { try SyncOperation(json: json) } == code, "\(text)")
    }
}
