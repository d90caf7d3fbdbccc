import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import SyncProtocol

/// A small HTTP client for tests, over URLSession, speaking JSON.
public struct TestHTTPClient: Sendable {
    public let baseURL: String

    public struct Response: Sendable {
        public var status: Int
        public var json: JSONValue?
        public var headers: [String: String]
        public var text: String
        /// The body's bytes.
        public var data: Data
    }

    public struct Tokens: Sendable {
        public var userID: String
        public var accessToken: String
        public var refreshToken: String
    }

    public init(baseURL: String) {
        self.baseURL = baseURL
    }

    public func get(_ path: String, token: String? = nil) async throws -> Response {
        try await request("GET", path, body: nil, token: token)
    }

    public func post(_ path: String, _ body: JSONValue?, token: String? = nil) async throws -> Response {
        try await request("POST", path, body: body.map { Data($0.jsonBytes) }, token: token)
    }

    /// Sends a request; `body` goes as JSON unless `headers` names another `Content-Type`.
    public func request(
        _ method: String, _ path: String, body: Data?, token: String? = nil, headers: [String: String] = [:]
    ) async throws -> Response {
        var request = URLRequest(url: URL(string: baseURL + path)!)
        request.httpMethod = method
        request.httpBody = body
        request.timeoutInterval = 30
        if body != nil { request.setValue("application/json", forHTTPHeaderField: "Content-Type") }
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = response as! HTTPURLResponse
        var headers: [String: String] = [:]
        for (key, value) in http.allHeaderFields {
            if let key = key as? String, let value = value as? String { headers[key.lowercased()] = value }
        }
        return Response(
            status: http.statusCode, json: try? JSONParser().parse(Array(data)), headers: headers,
            text: String(decoding: data, as: UTF8.self), data: data)
    }

    /// Registers and returns the tokens; fails the test on any other answer.
    public func register(_ email: String, password: String) async throws -> Tokens {
        let response = try await post("/v1/auth/register", ["email": .string(email), "password": .string(password)])
        guard response.status == 201, let json = response.json, let tokens = Tokens(json: json) else {
            throw UnexpectedResponse(response: response)
        }
        return tokens
    }

    /// Logs in and returns the tokens.
    public func login(_ email: String, password: String) async throws -> Tokens {
        let response = try await post("/v1/auth/login", ["email": .string(email), "password": .string(password)])
        guard response.status == 200, let json = response.json, let tokens = Tokens(json: json) else {
            throw UnexpectedResponse(response: response)
        }
        return tokens
    }
}

extension TestHTTPClient.Tokens {
    init?(json: JSONValue) {
        guard let userID = json["userId"]?.stringValue, let access = json["accessToken"]?.stringValue,
            let refresh = json["refreshToken"]?.stringValue
        else { return nil }
        self.init(userID: userID, accessToken: access, refreshToken: refresh)
    }
}

/// An HTTP answer a test did not expect.
public struct UnexpectedResponse: Error, CustomStringConvertible {
    public var response: TestHTTPClient.Response
    public var description: String { "unexpected HTTP \(response.status): \(response.text.prefix(300))" }
}
