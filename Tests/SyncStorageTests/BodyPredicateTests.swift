import PostgresNIO
import SyncProtocol
@testable import SyncStorage
import SyncTesting
import Testing

@Suite("Body searches in memory", .timeLimit(.minutes(30)))
struct BodyPredicateTests {
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
    static let searches: [BodyPredicate] = [
        BodyPredicate(path: "conversations", condition: .arrayContains(["id": "c1"])),
        BodyPredicate(path: "conversations", condition: .arrayContains(["id": "c1", "unreadCount": 3])),
        BodyPredicate(path: "conversations", condition: .arrayContains(["members": [["userName": "a"]]])),
        BodyPredicate(path: "conversations", condition: .arrayContains(["tags": ["y"]])),
        BodyPredicate(path: "conversations", condition: .arrayContains(["id": 1])),
        BodyPredicate(path: "conversations", condition: .arrayContains("c1")),
        BodyPredicate(path: "conversations", condition: .arrayContains([:])),
        BodyPredicate(path: "userName", condition: .field(["a", "7"])),
        BodyPredicate(path: "profile.name", condition: .field(["c1"])),
        BodyPredicate(path: "profile.age", condition: .field(["30"])),
        BodyPredicate(path: "profile.vip", condition: .field(["true"])),
        BodyPredicate(path: "profile.none", condition: .field(["null", ""])),
        BodyPredicate(path: "conversations", condition: .elementField("id", "c1")),
        BodyPredicate(path: "conversations", condition: .elementField("id", "c2")),
        BodyPredicate(path: "conversations", condition: .elementField("id", 1)),
        BodyPredicate(path: "conversations", condition: .elementField("id", 7.0)),
        BodyPredicate(path: "conversations", condition: .elementField("id", .null)),
        BodyPredicate(path: "conversations", condition: .elementField("id", ["c1"])),
        BodyPredicate(path: "conversations", condition: .elementField("id", ["nested": "c1"])),
        BodyPredicate(path: "conversations", condition: .elementField("name", "x")),
        BodyPredicate(path: "rooms.list", condition: .elementField("id", "c2")),
        BodyPredicate(path: "profile", condition: .elementField("name", "c1")),
    ]

    @Test("searches evaluated in memory answer as PostgreSQL's jsonb operators do")
    func agreesWithPostgreSQL() async throws {
        try await TestDatabase.with { db in
            for predicate in Self.searches {
                for body in Self.bodies {
                    let literal = "'{" + predicate.path.joined(separator: ",") + "}'"
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
                        let expression = ObjectIndex.elementsExpression(path: predicate.path.joined(separator: "."), field: field, of: "$1::jsonb")
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
