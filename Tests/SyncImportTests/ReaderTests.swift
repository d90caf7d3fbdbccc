import Foundation
import SyncImport
import SyncProtocol
import Testing

/// The file readers: damaged files are refused naming the file and the document; gzip is
/// read transparently.
@Suite("Reading export files")
struct ReaderTests {
    static let bson = try! Fixtures.bytes("pymongo/vectors.bson")
    static let gzip = try! Fixtures.bytes("pymongo/vectors.bson.gz")
    static let documentCount = 90

    /// The byte offsets of the documents of `bson`.
    static let offsets: [Int] = {
        var offsets: [Int] = []
        var offset = 0
        while offset < bson.count {
            offsets.append(offset)
            offset += Int(bson[offset]) | Int(bson[offset + 1]) << 8 | Int(bson[offset + 2]) << 16
        }
        return offsets
    }()

    @Test("a truncated BSON file is refused naming the file and the document cut short")
    func truncatedBSON() throws {
        let path = try Fixtures.write(Array(Self.bson.dropLast(10)), named: "Vectors.bson")
        let error = try #require(Fixtures.firstError(reading: path))
        #expect(error.kind == .truncated)
        #expect(error.file == path)
        #expect(error.documentNumber == Self.documentCount)
        #expect(error.byteOffset == Int64(Self.offsets.last!))
        #expect(error.description.hasPrefix("\(path): document \(Self.documentCount): the file ends inside the document"))
        // Every document before it was read.
        var reader = try MongoDumpReader(path: path)
        for _ in 1..<Self.documentCount { #expect(try reader.next() != nil) }
        #expect(throws: ImportError.self) { try reader.next() }
    }

    @Test("a length prefix too large swallows the next document's start: refused as malformed, naming it")
    func lengthTooLarge() throws {
        var bytes = Self.bson
        bytes[Self.offsets[2]] &+= 4
        let path = try Fixtures.write(bytes, named: "Vectors.bson")
        let error = try #require(Fixtures.firstError(reading: path))
        #expect(error.kind == .malformedBSON)
        #expect(error.file == path)
        #expect(error.documentNumber == 3)
        #expect(error.documentID == "\"string\"")
    }

    @Test("an impossible length prefix ends the reading, naming the file and the document", arguments: [Int32(3), -7, Int32.max])
    func impossibleLength(length: Int32) throws {
        var bytes = Self.bson
        bytes.replaceSubrange(Self.offsets[4]..<Self.offsets[4] + 4, with: int32LE(length))
        let path = try Fixtures.write(bytes, named: "Vectors.bson")
        var reader = try MongoDumpReader(path: path)
        for _ in 1...4 { _ = try reader.next() }
        #expect {
            _ = try reader.next()
        } throws: { error in
            guard let error = error as? ImportError else { return false }
            return error.kind == .invalidLength && error.documentNumber == 5 && error.file == path
                && error.byteOffset == Int64(Self.offsets[4])
        }
    }

    @Test("a length prefix too small is refused as malformed; the reading cannot go on past it")
    func lengthTooSmall() throws {
        var bytes = Self.bson
        bytes[Self.offsets[1]] &-= 3
        let path = try Fixtures.write(bytes, named: "Vectors.bson")
        var reader = try MongoDumpReader(path: path)
        #expect(try reader.next()?.number == 1)
        #expect {
            _ = try reader.next()
        } throws: { error in
            (error as? ImportError)?.kind == .malformedBSON && (error as? ImportError)?.documentNumber == 2
        }
        #expect(throws: ImportError.self) { while try reader.next() != nil {} }
    }

    @Test("gzip: read whatever the name, several members one after another")
    func gzipMembers() throws {
        let renamed = try Fixtures.write(Self.gzip, named: "Vectors.bson")
        #expect(try Fixtures.readAll(renamed).count == Self.documentCount)
        let twice = try Fixtures.write(Self.gzip + Self.gzip, named: "Vectors.bson.gz")
        let documents = try Fixtures.readAll(twice)
        #expect(documents.count == 2 * Self.documentCount)
        #expect(documents.last?.number == 2 * Self.documentCount)
    }

    @Test("gzip cut short is refused as truncated", arguments: [1, 8, 100, 1000])
    func gzipTruncated(cut: Int) throws {
        let path = try Fixtures.write(Array(Self.gzip.dropLast(cut)), named: "Vectors.bson.gz")
        let error = try #require(Fixtures.firstError(reading: path))
        #expect(error.kind == .truncated, "\(error)")
        #expect(error.file == path)
    }

    @Test("gzip whose checksum fails is refused")
    func gzipCorrupt() throws {
        var bytes = Self.gzip
        bytes[bytes.count - 6] ^= 0xFF
        let path = try Fixtures.write(bytes, named: "Vectors.bson.gz")
        let error = try #require(Fixtures.firstError(reading: path))
        #expect(error.kind == .gzip)
        #expect(error.file == path)
        let garbage = try Fixtures.write(Self.gzip + [0x1F, 0x8B, 0, 0], named: "Vectors.bson.gz")
        #expect(Fixtures.firstError(reading: garbage) != nil)
    }

    @Test("a bad document of a JSON export is refused naming it; the reading can go on past it")
    func badJSONDocument() throws {
        let text = """
            {"_id": "a", "n": 1}
            {"_id": "b", "n": }
            {"_id": {"$oid": "5f1b2c3d4e5f60718293a4b5"}, "n": {"$numberLong": 5}}
            {"_id": "d", "n": {"$numberInt": "4"}}

            """
        let path = try Fixtures.write(Array(text.utf8), named: "Things.json")
        var reader = try MongoExportReader(path: path)
        #expect(try reader.next()?.id == "a")
        #expect {
            _ = try reader.next()
        } throws: { error in
            guard let error = error as? ImportError else { return false }
            return error.kind == .malformedJSON && error.documentNumber == 2 && error.line == 2 && error.file == path
                && error.documentID == nil
        }
        #expect {
            _ = try reader.next()
        } throws: { error in
            guard let error = error as? ImportError else { return false }
            return error.kind == .invalidExtendedJSON && error.documentNumber == 3
                && error.documentID == "ObjectId(\"5f1b2c3d4e5f60718293a4b5\")" && error.path == FieldPath(field: "n")
                && error.description.hasPrefix("\(path): document 3 (line 3) (_id ObjectId(\"5f1b2c3d4e5f60718293a4b5\")): field n: ")
        }
        let last = try #require(try reader.next())
        #expect(last.number == 4 && last.line == 4 && last.document["n"] == .int32(4))
        #expect(try reader.next() == nil)
        #expect(reader.format == .mixed)
    }

    @Test("files that cannot be read are refused naming them")
    func unreadable() throws {
        #expect {
            _ = try MongoDumpReader(path: "/nonexistent/User.bson")
        } throws: { error in
            (error as? ImportError)?.kind == .io && (error as? ImportError)?.description == "/nonexistent/User.bson: no such file"
        }
        let directory = try Fixtures.scratch()
        #expect {
            var reader = try MongoExportReader(path: directory)
            _ = try reader.next()
        } throws: { error in
            (error as? ImportError)?.kind == .io
        }
        let empty = try Fixtures.write([], named: "Empty.bson")
        #expect(try Fixtures.readAll(empty).isEmpty)
        let emptyJSON = try Fixtures.write([], named: "Empty.json")
        #expect(try Fixtures.readAll(emptyJSON).isEmpty)
    }

    @Test("what a file's name says it holds", arguments: [
        ("dump/rchat/User.bson", ExportFile.Kind.mongodump, "User"),
        ("User.bson.gz", .mongodump, "User"),
        ("User.metadata.json", .dumpMetadata, "User"),
        ("User.metadata.json.gz", .dumpMetadata, "User"),
        ("export/Chat.Message.json", .mongoexport, "Chat.Message"),
        ("ChatMessage.json.gz", .mongoexport, "ChatMessage"),
    ] as [(String, ExportFile.Kind, String)])
    func names(path: String, kind: ExportFile.Kind, collection: String) throws {
        let file = try #require(ExportFile(path: path))
        #expect(file.kind == kind && file.collection == collection)
    }

    @Test("other names are not export files", arguments: ["users.csv", ".json", "README", "User.gz"])
    func otherNames(path: String) {
        #expect(ExportFile(path: path) == nil)
    }

    @Test("a dump directory lists its collections and their metadata")
    func dumpDirectory() throws {
        let files = try ExportFile.files(in: Fixtures.path("rchat/mongodump/rchat"))
        #expect(files.filter { $0.kind == .mongodump }.map(\.collection) == ["ChatMessage", "Chatster", "User"])
        #expect(files.filter { $0.kind == .dumpMetadata }.count == 3)
        #expect(throws: ImportError.self) { try ExportReader(files.first { $0.kind == .dumpMetadata }!) }
    }
}
