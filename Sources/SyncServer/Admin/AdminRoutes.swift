import Foundation
import Hummingbird
import PartitionSync
import SyncProtocol
import SyncStorage
import SyncTriggers

/// The admin endpoints (docs/PROTOCOL.md, "Admin endpoints"), which the web console and
/// `psync triggers` read: triggers and their dead letters, and retrying one; this instance's
/// counts over the last minutes, partitions and their objects, accounts with their sessions;
/// revoking a user's sessions and deleting an account. Every one takes an admin API
/// key (``AdminAccess``).
struct AdminRoutes: Sendable {
    let access: AdminAccess
    let store: ObjectStore
    let auth: AuthService
    let hub: SubscriptionHub
    let history: MetricsHistory
    let triggers: TriggerAdmin
    let instance: String

    func add(to router: Router<SyncRequestContext>) {
        let admin = router.group("v1/admin")
        admin.get("triggers") { request, _ in
            try await self.access.require(request)
            let reports = try await self.triggers.reports()
            return Response.json(.array(reports.map { report in
                [
                    "name": .string(report.name), "position": .int(report.position), "lag": .int(report.lag),
                    "leaseHolder": report.leaseHolder.map(JSONValue.string) ?? .null, "deadLetters": .int(Int64(report.deadLetters)),
                ]
            }))
        }
        admin.get("dead-letters") { request, _ in
            try await self.access.require(request)
            let trigger = request.uri.queryParameters["trigger"].map(String.init)
            if let trigger, trigger.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
                throw SyncError(.badRequest, "a trigger name holds no control characters")
            }
            let letters = try await self.triggers.deadLetters(trigger: trigger)
            return Response.json(.array(letters.map { letter in
                [
                    "id": .int(letter.id), "trigger": .string(letter.trigger), "position": .int(letter.position),
                    "attempts": .int(Int64(letter.attempts)), "error": .string(letter.error),
                    "created": .string(JSONValue.iso8601(letter.created)),
                ]
            }))
        }
        admin.post("dead-letters/:id/retry") { request, context in
            try await self.access.require(request)
            guard let id = context.parameters.get("id").flatMap(Int64.init) else { throw SyncError(.badRequest, "a dead letter id is a number") }
            do {
                try await self.triggers.retry(id)
            } catch let error as TriggerError where error.code == .notFound {
                throw SyncError(.notFound, error.message)
            } catch let error as SyncError {
                throw error
            } catch {
                throw SyncError(.validationFailed, "the handler failed again; the dead letter stays open")
            }
            return Response(status: .noContent)
        }
        admin.get("overview") { request, _ -> Response in
            try await self.access.require(request)
            return Response.json(try await self.overview())
        }
        admin.get("partitions") { request, _ -> Response in
            try await self.access.require(request)
            let prefix = try request.textParameter("prefix") ?? ""
            let limit = try request.limitParameter(fallback: 50, maximum: 500)
            let found = try await AdminQueries(store: self.store).partitions(prefix: prefix, after: try request.textParameter("after"), limit: limit)
            let members = self.hub.members(of: found.compactMap { try? Partition($0.partition) })
            return Response.json(.array(found.map { Self.json($0, subscribers: (try? Partition($0.partition)).flatMap { members[$0] } ?? 0) }))
        }
        admin.get("partitions/:partition/objects") { request, context -> Response in
            try await self.access.require(request)
            let partition = try context.partitionParameter()
            let limit = try request.limitParameter(fallback: 50, maximum: 500)
            var after: ObjectKey?
            if let text = try request.textParameter("after") {
                guard let slash = text.firstIndex(of: "/") else { throw SyncError(.badRequest, "after is <collection>/<id>") }
                after = try ObjectKey(collection: String(text[..<slash]), id: String(text[text.index(after: slash)...]))
            }
            // The head first: changes after it (polled with `changes`) cover whatever the
            // page read below misses or reads newer.
            let (version, history) = try await self.store.head(of: partition)
            let head = CursorPosition(epoch: try await self.store.epoch(), version: version, timeline: history.timeline(of: version))
            let objects = try await AdminQueries(store: self.store).objects(
                in: partition, collection: try request.textParameter("collection"), after: after, limit: limit)
            let next: JSONValue = objects.count == limit ? objects.last.map { .string("\($0.key.collection)/\($0.key.id)") } ?? .null : .null
            let page: JSONValue = ["objects": .array(objects.map(\.json)), "next": next, "cursor": .string(head.cursor.rawValue)]
            return Response.json(page)
        }
        admin.get("partitions/:partition/changes") { request, context -> Response in
            try await self.access.require(request)
            let partition = try context.partitionParameter()
            let cursor = try request.textParameter("cursor").map(Cursor.init(rawValue:))
            let limit = try request.limitParameter(fallback: 500, maximum: 5_000)
            return Response.json(try await self.store.changes(in: partition, after: cursor, limit: limit).json)
        }
        admin.get("events/:position") { request, context -> Response in
            try await self.access.require(request)
            guard let position = context.parameters.get("position").flatMap(Int64.init), position > 0 else {
                throw SyncError(.badRequest, "an event position is a positive number")
            }
            guard let event = try await EventLog(store: self.store).event(at: position) else { throw SyncError(.notFound, "no event \(position)") }
            return Response.json(Self.json(event))
        }
        admin.get("users") { request, _ -> Response in
            try await self.access.require(request)
            let users = try await AdminQueries(store: self.store).users(
                emailPrefix: try request.textParameter("email") ?? "", limit: try request.limitParameter(fallback: 50, maximum: 500))
            return Response.json(.array(users.map(Self.json)))
        }
        admin.post("users/:id/revoke-sessions") { request, context -> Response in
            try await self.access.require(request)
            let logins = try await self.auth.revokeSessions(userID: try Self.userID(context))
            return Response.json(["logins": .int(Int64(logins))])
        }
        admin.delete("users/:id") { request, context -> Response in
            try await self.access.require(request)
            do {
                try await self.auth.deleteAccount(userID: try Self.userID(context))
            } catch let error as SyncError where error.code == .unauthenticated {
                throw SyncError(.notFound, "no such account")
            }
            return Response(status: .noContent)
        }
    }

    private static func userID(_ context: SyncRequestContext) throws -> String {
        guard let id = context.parameters.get("id"), !id.isEmpty, id.count <= 256 else { throw SyncError(.badRequest, "a user id") }
        return id
    }

    private static func json(_ summary: AdminQueries.PartitionSummary, subscribers: Int) -> JSONValue {
        [
            "partition": .string(summary.partition), "version": .int(summary.version), "updated": .string(JSONValue.iso8601(summary.updated)),
            "objects": .int(summary.objects), "bytes": .int(summary.bytes), "subscribers": .int(Int64(subscribers)),
        ]
    }

    private static func json(_ event: ChangeEvent) -> JSONValue {
        var fields: [String: JSONValue] = [
            "position": .int(event.position), "kind": .string(event.kind.rawValue), "operation": .string(event.operation.rawValue),
            "author": .string(event.author), "depth": .int(Int64(event.depth)), "created": .string(JSONValue.iso8601(event.created)),
            "changedFields": .array(event.changedFields.map(JSONValue.string)), "removedFields": .array(event.removedFields.map(JSONValue.string)),
        ]
        if let key = event.key { fields["collection"] = .string(key.collection); fields["id"] = .string(key.id) }
        if let partition = event.partition { fields["partition"] = .string(partition.description) }
        if let version = event.version { fields["version"] = .int(version) }
        if let userID = event.userID { fields["userId"] = .string(userID) }
        fields["before"] = event.before.map(JSONValue.object) ?? .null
        fields["after"] = event.after.map(JSONValue.object) ?? .null
        return .object(fields)
    }

    private static func json(_ user: AdminQueries.UserSummary) -> JSONValue {
        let sessions: [String: JSONValue] = user.sessions.mapValues { .int(Int64($0)) }
        return [
            "id": .string(user.id), "email": .string(user.email), "created": .string(JSONValue.iso8601(user.created)),
            "sessions": .object(sessions), "online": .bool(user.sessions.values.contains { $0 > 0 }),
        ]
    }

    private static func json(_ sample: MetricsHistory.Sample) -> JSONValue {
        let errors: [String: JSONValue] = sample.counts.errors.mapValues { .int(Int64($0)) }
        return [
            "at": .string(JSONValue.iso8601(sample.at)), "sessions": .int(Int64(sample.counts.sessions)),
            "subscriptions": .int(Int64(sample.counts.subscriptions)), "uploads": .int(Int64(sample.counts.uploads)),
            "changesPushed": .int(Int64(sample.counts.changesPushed)), "errors": .object(errors),
        ]
    }

    /// This instance's counts over the last minutes, the instances, and the triggers' lag.
    private func overview() async throws -> JSONValue {
        let instances: [JSONValue] = try await AdminQueries(store: store).instances().map {
            ["name": .string($0.name), "expires": .string(JSONValue.iso8601($0.expires))]
        }
        let triggers: [JSONValue] = try await self.triggers.reports().map {
            ["name": .string($0.name), "lag": .int($0.lag), "deadLetters": .int(Int64($0.deadLetters))]
        }
        let sessions = try await AdminQueries(store: store).openSessions()
        return [
            "instance": .string(instance), "instances": .array(instances), "samples": .array(history.recent.map(Self.json)),
            "triggers": .array(triggers), "sessionsEverywhere": .int(Int64(sessions)),
        ]
    }
}
