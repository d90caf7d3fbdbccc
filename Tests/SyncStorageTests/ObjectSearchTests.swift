import PartitionSync
import PostgresNIO
import SyncProtocol
@testable import SyncStorage
import SyncTesting
import Testing

@Suite("Body searches in memory", .timeLimit(.minutes(30)))
struct ObjectSearchTests {
    /// Bodies and searches whose in-memory answer must equal PostgreSQL's.
    static let bodies: [[String: JSONValue]] = [
        ["conversations": [["id": "c1", "unreadCount": 3, "members": [["userName": "a"]]], ["id": "c2"]]],
        ["conversations": [["id": "c10"]], "userName": "a"],
        ["conversations": [], "userName": "b"],
        ["conversations": ["c1"], "userName": 7],
        ["conversations": ["id": "c1"], "profile": ["name": "c1", "age": 30, "vip": true, "none": .null]],
        ["conversations": [["id": "c1", "tags": ["x", "y"]], ["id": 1.0]], "profile": ["name": ["first": "a"]]],
        [:],
        // For element fields: nested arrays, elements of other kinds, ids of other types,
        // a member array one level down, an array of arrays.
        ["conversations": [[["id": "c1"]], "c1", .null, ["name": "x"], ["id": ["c1"]], ["id": .null]]],
        ["conversations": [["id": ["nested": "c1"]], ["id": 7]], "rooms": ["list": [["id": "c1"], ["id": "c2"]]]],
        ["rooms": ["list": ["id": "c2"]]],
    ]
    static let searches: [ObjectSearch] = [
        ObjectSearch(collection: "Doc", path: "conversations", condition: .arrayContains(["id": "c1"])),
        ObjectSearch(collection: "Doc", path: "conversations", condition: .arrayContains(["id": "c1", "unreadCount": 3])),
        ObjectSearch(collection: "Doc", path: "conversations", condition: .arrayContains(["members": [["userName": "a"]]])),
        ObjectSearch(collection: "Doc", path: "conversations", condition: .arrayContains(["tags": ["y"]])),
        ObjectSearch(collection: "Doc", path: "conversations", condition: .arrayContains(["id": 1])),
        ObjectSearch(collection: "Doc", path: "conversations", condition: .arrayContains("c1")),
        ObjectSearch(collection: "Doc", path: "conversations", condition: .arrayContains([:])),
        ObjectSearch(collection: "Doc", path: "userName", condition: .field(["a", "7"])),
        ObjectSearch(collection: "Doc", path: "profile.name", condition: .field(["c1"])),
        ObjectSearch(collection: "Doc", path: "profile.age", condition: .field(["30"])),
        ObjectSearch(collection: "Doc", path: "profile.vip", condition: .field(["true"])),
        ObjectSearch(collection: "Doc", path: "profile.none", condition: .field(["null", ""])),
        ObjectSearch(collection: "Doc", path: "conversations", condition: .elementField("id", "c1")),
        ObjectSearch(collection: "Doc", path: "conversations", condition: .elementField("id", "c2")),
        ObjectSearch(collection: "Doc", path: "conversations", condition: .elementField("id", 1)),
        ObjectSearch(collection: "Doc", path: "conversations", condition: .elementField("id", 7.0)),
        ObjectSearch(collection: "Doc", path: "conversations", condition: .elementField("id", .null)),
        ObjectSearch(collection: "Doc", path: "conversations", condition: .elementField("id", ["c1"])),
        ObjectSearch(collection: "Doc", path: "conversations", condition: .elementField("id", ["nested": "c1"])),
        ObjectSearch(collection: "Doc", path: "conversations", condition: .elementField("name", "x")),
        ObjectSearch(collection: "Doc", path: "rooms.list", condition: .elementField("id", "c2")),
        ObjectSearch(collection: "Doc", path: "profile", condition: .elementField("name", "c1")),
    ]

    @Test("searches evaluated in memory answer as PostgreSQL's jsonb operators do")
    func agreesWithPostgreSQL() async throws {
        try await TestDatabase.with { db in
            for predicate in Self.searches {
                for body in Self.bodies {
                    let literal = "'{" + predicate.path.split(separator: ".").joined(separator: ",") + "}'"
                    var query: PostgresQuery
                    switch predicate.condition {
                    case .field(let values):
                        query = PostgresQuery(unsafeSQL: "SELECT coalesce($1::jsonb #>> \(literal) = ANY($2), false)")
                        query.binds.append(JSONB(value: .object(body)), context: .default)
                        query.binds.append(Array(values), context: .default)
                    case .arrayContains(let element):
                        query = PostgresQuery(unsafeSQL: "SELECT coalesce(($1::jsonb #> \(literal)) @> $2, false)")
                        query.binds.append(JSONB(value: .object(body)), context: .default)
                        query.binds.append(JSONB(value: .array([element])), context: .default)
                    case .elementField(let field, let value):
                        let expression = ObjectIndex.elementsExpression(path: predicate.path, field: field, of: "$1::jsonb")
                        query = PostgresQuery(unsafeSQL: "SELECT coalesce(\(expression) @> $2, false)")
                        query.binds.append(JSONB(value: .object(body)), context: .default)
                        query.binds.append(JSONB(value: .array([value])), context: .default)
                    }
                    var expected: Bool?
                    for try await value in try await db.client.query(query, logger: db.logger).decode(Bool.self) { expected = value }
                    #expect(predicate.matches(body) == expected, "\(predicate) on \(JSONValue.object(body))")
                }
            }
        }
    }
}
