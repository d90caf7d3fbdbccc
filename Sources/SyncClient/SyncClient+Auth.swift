import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import SyncProtocol

extension SyncClient {
    /// The signed-in user, if any.
    public var userID: String? { try? store.setting("userId") }

    /// The email the client signed in with.
    public var email: String? { try? store.setting("email") }

    /// Creates an account and signs in; returns the user id.
    @discardableResult
    public func register(email: String, password: String) async throws -> String {
        try await signIn(path: "/v1/auth/register", email: email, password: password)
    }

    /// Signs in; returns the user id.
    @discardableResult
    public func login(email: String, password: String) async throws -> String {
        try await signIn(path: "/v1/auth/login", email: email, password: password)
    }

    /// Whether the signed-in account's email is verified (docs/SECURITY.md, "Identity"): until
    /// it is, no rule or invitation that names the email reaches this user.
    public func emailVerified() async throws -> Bool {
        guard let token = try await freshAccessToken() else { throw SyncError(.unauthenticated, "not signed in") }
        let (status, json) = try await get("/v1/auth/me", token: token)
        guard (200..<300).contains(status), let verified = json?["emailVerified"] else { throw Self.error(from: json, status: status) }
        return verified == .bool(true)
    }

    /// Asks the server to mail a new verification code to the account's email (the one sent at
    /// registration is replaced); `false` when the email is verified already.
    @discardableResult
    public func sendVerificationCode() async throws -> Bool {
        guard let token = try await freshAccessToken() else { throw SyncError(.unauthenticated, "not signed in") }
        let (status, json) = try await post("/v1/auth/email/code", [:], token: token)
        guard (200..<300).contains(status) else { throw Self.error(from: json, status: status) }
        return json?["sent"] == .bool(true)
    }

    /// Verifies the account's email with the code mailed to it (`K7QM-4XPA`, in any case, with
    /// or without the dash); `invalid_code` when it is not the live one.
    public func verifyEmail(code: String) async throws {
        guard let token = try await freshAccessToken() else { throw SyncError(.unauthenticated, "not signed in") }
        let (status, json) = try await post("/v1/auth/email/verify", ["code": .string(code)], token: token)
        guard (200..<300).contains(status) else { throw Self.error(from: json, status: status) }
    }

    /// Signs out: revokes the refresh token and forgets the credentials (the store keeps the data).
    public func logout() async throws {
        if let refresh = try store.setting("refreshToken") {
            _ = try? await post("/v1/auth/logout", ["refreshToken": .string(refresh)], token: nil)
        }
        try store.setSettings(["accessToken": nil, "refreshToken": nil, "accessExpires": nil, "userId": nil])
        outgoing?.finish()
    }

    private func signIn(path: String, email: String, password: String) async throws -> String {
        let (status, json) = try await post(path, ["email": .string(email), "password": .string(password)], token: nil)
        guard (200..<300).contains(status), let json else { throw Self.error(from: json, status: status) }
        try remember(json, email: email)
        signedInWakeup?.resume()
        signedInWakeup = nil
        guard let userID = json["userId"]?.stringValue else { throw SyncError(.internal, "the server sent no userId") }
        return userID
    }

    func remember(_ tokens: JSONValue, email: String?) throws {
        guard let access = tokens["accessToken"]?.stringValue, let refresh = tokens["refreshToken"]?.stringValue,
            let userID = tokens["userId"]?.stringValue, let expiresIn = tokens["expiresIn"]?.intValue
        else { throw SyncError(.internal, "the server sent incomplete tokens") }
        var values: [String: String?] = [
            "accessToken": access, "refreshToken": refresh, "userId": userID,
            "accessExpires": String(Date().timeIntervalSince1970 + Double(expiresIn)),
        ]
        if let email { values["email"] = email }
        try store.setSettings(values)
    }

    /// An access token valid for at least a minute, refreshing it when needed; `nil` when not
    /// signed in (or the refresh token was refused: then ``ClientEvent/signedOut``).
    func freshAccessToken() async throws -> String? {
        guard let access = try store.setting("accessToken"), let refresh = try store.setting("refreshToken") else { return nil }
        let expires = try store.setting("accessExpires").flatMap(Double.init) ?? 0
        if expires - Date().timeIntervalSince1970 > 60 { return access }
        let (status, json) = try await post("/v1/auth/refresh", ["refreshToken": .string(refresh)], token: nil)
        if status == 401 {
            try store.setSettings(["accessToken": nil, "refreshToken": nil, "accessExpires": nil])
            emit(.signedOut)
            return nil
        }
        guard (200..<300).contains(status), let json else { throw Self.error(from: json, status: status) }
        try remember(json, email: nil)
        return json["accessToken"]?.stringValue
    }

    /// Forgets the access token so the next connection refreshes it (after a 4001 close).
    func expireAccessToken() {
        storing("forgetting the access token") { try store.setSettings(["accessExpires": "0"]) }
    }

    func post(_ path: String, _ body: JSONValue, token: String?) async throws -> (Int, JSONValue?) {
        try await send(path, method: "POST", body: body, token: token)
    }

    func get(_ path: String, token: String?) async throws -> (Int, JSONValue?) {
        try await send(path, method: "GET", body: nil, token: token)
    }

    private func send(_ path: String, method: String, body: JSONValue?, token: String?) async throws -> (Int, JSONValue?) {
        var request = URLRequest(url: configuration.serverURL.appendingPathComponent(path))
        request.httpMethod = method
        if let body {
            request.httpBody = Data(body.jsonBytes)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        request.timeoutInterval = 30
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        let (data, response) = try await URLSession.shared.data(for: request)
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        return (status, data.isEmpty ? nil : try? JSONParser().parse(Array(data)))
    }

    static func error(from json: JSONValue?, status: Int) -> SyncError {
        if let code = json?["error"]?["code"]?.stringValue {
            return SyncError(SyncError.Code(code), json?["error"]?["message"]?.stringValue ?? "")
        }
        return SyncError(.unavailable, "the server answered \(status)")
    }
}
