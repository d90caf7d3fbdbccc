import Foundation

/// An OpenID Connect provider whose access tokens the server accepts (docs/SECURITY.md,
/// "Identity providers"): RS256 or ES256 tokens signed by a key of its JWKS, issued by
/// ``issuer`` for ``audience``.
package struct IdentityProviderConfiguration: Sendable, Hashable {
    /// The provider's issuer identifier, exactly as its tokens' `iss` claim gives it
    /// (`https://accounts.example.com`).
    package var issuer: String
    /// The `aud` a token must name: the identifier the provider gave this application.
    package var audience: String
    /// Where the provider publishes its signing keys; `nil`: read from its discovery document
    /// (`<issuer>/.well-known/openid-configuration`, `jwks_uri`). Either must be `https`,
    /// except on a loopback host.
    package var jwksURL: URL?
    /// How long fetched keys are used before they are fetched again. Default 1 hour.
    package var keysLifetime: Duration = .seconds(3600)
    /// Shortest time between two fetches caused by tokens signed with a key not known yet
    /// (the provider rotated its keys, or a forger names an invented key). Default 60 seconds.
    package var minimumRefetchInterval: Duration = .seconds(60)
    /// Clock difference allowed when checking `exp`, `nbf` and `iat`. Default 60 seconds.
    package var leeway: Duration = .seconds(60)

    package init(issuer: String, audience: String, jwksURL: URL? = nil) {
        self.issuer = issuer
        self.audience = audience
        self.jwksURL = jwksURL
    }
}
