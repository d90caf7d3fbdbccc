import Foundation
import Testing

/// The code of the docs is code that is compiled and run: a block marked
/// `<!-- excerpt: <path> -->` must stand verbatim in that file (a test, or an example package
/// that CI builds and tests), and every Swift block of docs/APPS.md must be so marked.
@Suite("Documentation excerpts")
struct DocumentationExcerptTests {
    /// The repository's root, from this file's place in it.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    struct Block {
        var document: String
        var line: Int
        var language: String
        var text: [String]
        var excerptOf: String?
        /// For a block marked `<!-- file: <path> -->`: the whole file a guide writes at that path
        /// (docs/APPS.md's first application; `scripts/check-apps-guide.sh` writes and builds it).
        var fileOf: String?
    }

    /// The fenced blocks of a markdown file, each with the excerpt marker before it, if any.
    static func blocks(of document: String) throws -> [Block] {
        let lines = try String(contentsOf: root.appendingPathComponent(document), encoding: .utf8).components(separatedBy: "\n")
        var blocks: [Block] = []
        var index = 0
        var marker: String?
        var file: String?
        func value(of line: String, after prefix: String) -> String {
            line.dropFirst(prefix.count).replacingOccurrences(of: "-->", with: "").trimmingCharacters(in: .whitespaces)
        }
        while index < lines.count {
            let line = lines[index].trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("<!-- excerpt:") {
                marker = value(of: line, after: "<!-- excerpt:")
            } else if line.hasPrefix("<!-- file:") {
                file = value(of: line, after: "<!-- file:")
            } else if line.hasPrefix("```") {
                let language = String(line.dropFirst(3))
                var text: [String] = []
                index += 1
                while index < lines.count, !lines[index].trimmingCharacters(in: .whitespaces).hasPrefix("```") {
                    text.append(lines[index])
                    index += 1
                }
                blocks.append(Block(document: document, line: index - text.count, language: language, text: text, excerptOf: marker, fileOf: file))
                marker = nil
                file = nil
            } else if !line.isEmpty {
                marker = nil
                file = nil
            }
            index += 1
        }
        return blocks
    }

    static var documents: [String] {
        var names = ["README.md"]
        let fileManager = FileManager.default
        for name in (try? fileManager.contentsOfDirectory(atPath: root.appendingPathComponent("docs").path)) ?? [] where name.hasSuffix(".md") {
            names.append("docs/" + name)
        }
        for name in (try? fileManager.contentsOfDirectory(atPath: root.appendingPathComponent("Examples").path)) ?? [] {
            if fileManager.fileExists(atPath: root.appendingPathComponent("Examples/\(name)/README.md").path) {
                names.append("Examples/\(name)/README.md")
            }
        }
        return names.sorted()
    }

    static func trimmed(_ lines: [String]) -> [String] {
        lines.map { String($0.reversed().drop { $0 == " " }.reversed()) }
    }

    @Test("every block marked as an excerpt stands verbatim in its file")
    func excerpts() throws {
        var checked = 0
        for document in Self.documents {
            for block in try Self.blocks(of: document) {
                guard let path = block.excerptOf else { continue }
                let source = try String(contentsOf: Self.root.appendingPathComponent(path), encoding: .utf8).components(separatedBy: "\n")
                let wanted = Self.trimmed(block.text)
                let lines = Self.trimmed(source)
                let found = !wanted.isEmpty && (0...max(0, lines.count - wanted.count)).contains { start in
                    start + wanted.count <= lines.count && Array(lines[start..<(start + wanted.count)]) == wanted
                }
                #expect(found, "\(document):\(block.line): the block is not in \(path) as written")
                checked += 1
            }
        }
        #expect(checked >= 10, "only \(checked) excerpts found")
    }

    @Test("every Swift block of docs/APPS.md is an excerpt of compiled code, or a whole file of the guide's first application")
    func appsGuide() throws {
        let blocks = try Self.blocks(of: "docs/APPS.md").filter { $0.language == "swift" }
        #expect(!blocks.isEmpty)
        for block in blocks {
            #expect(
                block.excerptOf != nil || block.fileOf != nil,
                "docs/APPS.md:\(block.line): a Swift block without an excerpt or file marker")
        }
        // The first application is a whole package: its manifest, its sources and a test,
        // each path written once (scripts/check-apps-guide.sh builds and tests it).
        let files = blocks.compactMap(\.fileOf)
        #expect(files.contains("Package.swift"))
        #expect(files.contains { $0.hasPrefix("Tests/") })
        #expect(Set(files).count == files.count, "a file of the guide is written twice: \(files)")
    }

    @Test("every error code of SyncError is in docs/PROTOCOL.md's table and docs/openapi.yaml's ErrorCode")
    func errorCodesDocumented() throws {
        let source = try String(contentsOf: Self.root.appendingPathComponent("Sources/SyncProtocol/SyncError.swift"), encoding: .utf8)
        let codes = source.components(separatedBy: "Code(\"").dropFirst().compactMap { $0.split(separator: "\"").first.map(String.init) }
        #expect(codes.count >= 30, "only \(codes.count) codes found")
        let protocolText = try String(contentsOf: Self.root.appendingPathComponent("docs/PROTOCOL.md"), encoding: .utf8)
        let openAPI = try String(contentsOf: Self.root.appendingPathComponent("docs/openapi.yaml"), encoding: .utf8)
        // Answered only on the WebSocket (`/v1/sync`, described in PROTOCOL.md alone).
        let webSocketOnly: Set<String> = ["session_revoked", "too_many_sessions"]
        for code in codes {
            #expect(protocolText.contains("| `\(code)`"), "docs/PROTOCOL.md's error codes have no row for \(code)")
            if !webSocketOnly.contains(code) {
                #expect(openAPI.contains("        - \(code)\n"), "docs/openapi.yaml's ErrorCode has no \(code)")
            }
        }
    }
}
