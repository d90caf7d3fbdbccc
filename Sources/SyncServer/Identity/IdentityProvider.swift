import Foundation
import JWTKit
import Logging
import SyncProtocol

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Verifies access tokens of one OpenID Connect provider (``IdentityProviderConfiguration``):
/// the header names an algorithm of ours (RS256, ES256) and a key of the provider's JWKS of
/// that type, the signature holds, `iss` and `aud` are the configured ones, and `exp`, `nbf`
/// and `iat` hold with the leeway. Keys are fetched on first use, again after their lifetime,
/// and again (at most once per ``IdentityProviderConfiguration/minimumRefetchInterval``) when
/// a token names a key not known yet, so a provider's key rotation needs no restart.
package actor IdentityProvider {
    /// What a verified token says.
    package struct Identity: Sendable, Hashable {
        package var subject: String
        /// The `email` claim, when `email_verified` is true.
        package var verifiedEmail: String?
        package var expires: Date
    }

    struct Claims: JWTPayload {
        var iss: IssuerClaim
        var sub: SubjectClaim
        var aud: AudienceClaim
        var exp: ExpirationClaim
        var nbf: NotBeforeClaim?
        var iat: IssuedAtClaim?
        var email: String?
        var emailVerified: Bool?

        enum CodingKeys: String, CodingKey {
            case iss, sub, aud, exp, nbf, iat, email
            case emailVerified = "email_verified"
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            iss = try container.decode(IssuerClaim.self, forKey: .iss)
            sub = try container.decode(SubjectClaim.self, forKey: .sub)
            aud = try container.decode(AudienceClaim.self, forKey: .aud)
            exp = try container.decode(ExpirationClaim.self, forKey: .exp)
            nbf = try container.decodeIfPresent(NotBeforeClaim.self, forKey: .nbf)
            iat = try container.decodeIfPresent(IssuedAtClaim.self, forKey: .iat)
            email = try? container.decodeIfPresent(String.self, forKey: .email)
            // Some providers send the flag as the string "true".
            if let flag = try? container.decodeIfPresent(Bool.self, forKey: .emailVerified) {
                emailVerified = flag
            } else if let text = try? container.decodeIfPresent(String.self, forKey: .emailVerified) {
                emailVerified = text == "true"
            }
        }

        init(iss: String, sub: String, aud: [String], exp: Date, email: String? = nil, emailVerified: Bool? = nil) {
            self.iss = IssuerClaim(value: iss)
            self.sub = SubjectClaim(value: sub)
            self.aud = AudienceClaim(value: aud)
            self.exp = ExpirationClaim(value: exp)
            self.iat = IssuedAtClaim(value: Date())
            self.email = email
            self.emailVerified = emailVerified
        }

        // Checked by ``IdentityProvider/check(_:)``, to answer each failure precisely.
        func verify(using algorithm: some JWTAlgorithm) throws {}
    }

    /// The provider's keys as last fetched: the algorithm each key id signs with.
    private struct KeySet {
        var keys: JWTKeyCollection
        var algorithms: [String: String]
        /// When (``SyncClock/uptime``).
        var fetched: Duration
    }

    package let configuration: IdentityProviderConfiguration
    private let logger: Logger
    private var keySet: KeySet?
    private var lastFetch: Duration?
    /// What the keys' lifetime, the refetch interval and the claims' times are measured by.
    private let time: SyncClock
    private var fetching: Task<KeySet, any Error>?

    package init(configuration: IdentityProviderConfiguration, time: SyncClock = .system, logger: Logger) {
        self.configuration = configuration
        self.time = time
        self.logger = logger
    }

    /// The algorithms a provider's token may use.
    static let algorithms: Set<String> = ["RS256", "ES256"]

    /// The issuer a token claims, read without verifying it, to choose its provider; `nil`
    /// when the token is not a JWT signed with one of ``algorithms``.
    static func claimedIssuer(of token: String) -> String? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        // The payload is read only for a provider's algorithm: not for the server's own tokens.
        guard parts.count == 3, let alg = decodeSegment(parts[0])?["alg"]?.stringValue, algorithms.contains(alg),
            let payload = decodeSegment(parts[1])
        else { return nil }
        return payload["iss"]?.stringValue
    }

    /// The identity a token proves; `token_expired` or `unauthenticated` otherwise.
    package func verify(_ token: String) async throws -> Identity {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let header = Self.decodeSegment(parts[0]), let alg = header["alg"]?.stringValue,
            Self.algorithms.contains(alg), let kid = header["kid"]?.stringValue
        else {
            throw SyncError(.unauthenticated, "the access token is not valid")
        }
        var keySet = try await currentKeys()
        if keySet.algorithms[kid] == nil, let refreshed = try await refetchForUnknownKey() { keySet = refreshed }
        // The key must be one of the provider's, of the token's algorithm: no other key of the
        // collection (and none by default) is ever tried.
        guard keySet.algorithms[kid] == alg else {
            throw SyncError(.unauthenticated, "the access token is not signed by a key of its provider")
        }
        let claims: Claims
        do {
            claims = try await keySet.keys.verify(token, as: Claims.self)
        } catch {
            throw SyncError(.unauthenticated, "the access token is not valid")
        }
        return try check(claims, now: time.now())
    }

    /// The claims' checks, after the signature's.
    func check(_ claims: Claims, now: Date) throws(SyncError) -> Identity {
        let leeway = TimeInterval(configuration.leeway.components.seconds)
        guard claims.iss.value == configuration.issuer else {
            throw SyncError(.unauthenticated, "the access token is from another issuer")
        }
        guard claims.aud.value.contains(configuration.audience) else {
            throw SyncError(.unauthenticated, "the access token is for another audience")
        }
        guard !claims.sub.value.isEmpty, claims.sub.value.utf8.count <= 255 else {
            throw SyncError(.unauthenticated, "the access token has no usable subject")
        }
        if let nbf = claims.nbf, nbf.value > now.addingTimeInterval(leeway) {
            throw SyncError(.unauthenticated, "the access token is not valid yet")
        }
        if let iat = claims.iat, iat.value > now.addingTimeInterval(leeway) {
            throw SyncError(.unauthenticated, "the access token was issued in the future")
        }
        guard claims.exp.value.addingTimeInterval(leeway) > now else {
            throw SyncError(.tokenExpired, "the access token has expired; refresh it")
        }
        var email: String?
        if claims.emailVerified == true, let claimed = claims.email?.trimmingCharacters(in: .whitespaces),
            (try? AuthService.checkEmail(claimed)) != nil
        {
            email = claimed
        }
        return Identity(subject: claims.sub.value, verifiedEmail: email, expires: claims.exp.value)
    }

    // MARK: Keys

    private func currentKeys() async throws -> KeySet {
        if let keySet, time.uptime() - keySet.fetched < configuration.keysLifetime { return keySet }
        do {
            return try await fetch()
        } catch {
            // The provider is unreachable: keys past their lifetime still verify until it is back.
            if let keySet { return keySet }
            logger.error("the identity provider's keys could not be fetched", metadata: ["issuer": "\(configuration.issuer)", "error": "\(error)"])
            throw SyncError(.unavailable, "the identity provider's keys could not be fetched")
        }
    }

    private func refetchForUnknownKey() async throws -> KeySet? {
        if let lastFetch, time.uptime() - lastFetch < configuration.minimumRefetchInterval { return nil }
        return try? await fetch()
    }

    private func fetch() async throws -> KeySet {
        if let fetching { return try await fetching.value }
        let configuration = self.configuration
        let time = self.time
        let task = Task { try await Self.loadKeys(configuration, fetched: time.uptime) }
        fetching = task
        defer { fetching = nil }
        lastFetch = time.uptime()
        let keySet = try await task.value
        self.keySet = keySet
        logger.info(
            "identity provider keys fetched", metadata: ["issuer": "\(configuration.issuer)", "keys": "\(keySet.algorithms.keys.sorted())"])
        return keySet
    }

    /// Fetches the provider's keys; `fetched` tells when they arrived.
    private static func loadKeys(_ configuration: IdentityProviderConfiguration, fetched: @Sendable () -> Duration) async throws -> KeySet {
        let jwksURL: URL
        if let configured = configuration.jwksURL {
            jwksURL = configured
        } else {
            guard let discovery = URL(string: configuration.issuer.trimmingSuffix("/") + "/.well-known/openid-configuration") else {
                throw SyncError(.internal, "the issuer is not a URL")
            }
            let document = try await fetchJSON(discovery)
            guard let address = document["jwks_uri"]?.stringValue, let url = URL(string: address) else {
                throw SyncError(.internal, "the discovery document has no jwks_uri")
            }
            jwksURL = url
        }
        let jwks = try await fetchJSON(jwksURL)
        let keys = JWTKeyCollection()
        var algorithms: [String: String] = [:]
        for jwk in jwks["keys"]?.arrayValue ?? [] {
            guard let kid = jwk["kid"]?.stringValue, jwk["use"]?.stringValue ?? "sig" == "sig" else { continue }
            switch (jwk["kty"]?.stringValue, jwk["crv"]?.stringValue) {
            case ("RSA", _):
                guard jwk["alg"]?.stringValue ?? "RS256" == "RS256", let n = jwk["n"]?.stringValue, let e = jwk["e"]?.stringValue,
                    let key = try? Insecure.RSA.PublicKey(modulus: n, exponent: e)
                else { continue }
                await keys.add(rsa: key, digestAlgorithm: .sha256, kid: JWKIdentifier(string: kid))
                algorithms[kid] = "RS256"
            case ("EC", "P-256"):
                guard jwk["alg"]?.stringValue ?? "ES256" == "ES256", let x = jwk["x"]?.stringValue, let y = jwk["y"]?.stringValue,
                    let key = try? ES256PublicKey(parameters: (x, y))
                else { continue }
                await keys.add(ecdsa: key, kid: JWKIdentifier(string: kid))
                algorithms[kid] = "ES256"
            default:
                continue
            }
        }
        return KeySet(keys: keys, algorithms: algorithms, fetched: fetched())
    }

    /// Largest discovery document or key set read. 1 MiB.
    static let maximumDocumentBytes = 1 << 20

    private static func fetchJSON(_ url: URL) async throws -> JSONValue {
        guard url.scheme == "https" || (url.scheme == "http" && isLoopback(url.host ?? "")) else {
            throw SyncError(.internal, "\(url) is not https")
        }
        var request = URLRequest(url: url)
        request.timeoutInterval = 10
        let (data, response) = try await URLSession.shared.data(for: request)
        guard (response as? HTTPURLResponse)?.statusCode == 200 else {
            throw SyncError(.unavailable, "\(url) answered \((response as? HTTPURLResponse)?.statusCode ?? 0)")
        }
        guard data.count <= maximumDocumentBytes else { throw SyncError(.payloadTooLarge, "\(url) is too large") }
        return try JSONParser().parse(Array(data))
    }

    static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host == "[::1]" || host.hasPrefix("127.")
    }

    static func decodeSegment(_ segment: Substring) -> JSONValue? {
        var text = segment.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while text.count % 4 != 0 { text += "=" }
        guard let data = Data(base64Encoded: text), data.count <= 16_384 else { return nil }
        return try? JSONParser().parse(Array(data))
    }
}

extension String {
    fileprivate func trimmingSuffix(_ suffix: String) -> String {
        hasSuffix(suffix) ? String(dropLast(suffix.count)) : self
    }
}
