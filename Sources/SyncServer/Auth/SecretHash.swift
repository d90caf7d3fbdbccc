import Crypto
import Foundation
import PartitionSync

/// Random secrets (refresh tokens, API keys) and the SHA-256 digests they are stored as.
enum SecretHash {
    /// A random secret with a prefix naming its kind, e.g. `psr_…` for a refresh token.
    static func makeSecret(prefix: String) -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let text = Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        return prefix + text
    }

    /// The digest stored in place of a secret. Secrets have 256 bits of entropy, so a fast
    /// hash is enough: there is nothing to guess.
    static func digest(_ secret: String) -> Data {
        Data(SHA256.hash(data: Data(secret.utf8)))
    }
}
