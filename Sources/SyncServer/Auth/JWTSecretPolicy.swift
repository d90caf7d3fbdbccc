import Foundation
import PartitionSync

/// Which secrets the server accepts for signing access tokens. Anyone who knows the secret
/// can mint a token for any user, so a short, published, placeholder or low-entropy secret is
/// refused at start rather than accepted silently.
package enum JWTSecretPolicy {
    /// Fewest bytes a secret has.
    package static let minimumBytes = 32
    /// Least estimated entropy, in bits (length times the Shannon entropy of its bytes).
    package static let minimumEntropyBits = 128.0
    /// What the refusal tells the operator to do.
    package static let advice = "generate one with `openssl rand -base64 48`"

    /// Secrets that were published, e.g. the default that docker-compose.yml once carried.
    static let published: Set<String> = ["change-me-to-a-long-random-secret-of-32-bytes-or-more"]
    /// Words that mark a secret as a placeholder somebody forgot to replace.
    static let placeholders = [
        "change-me", "changeme", "change_me", "replace-me", "replaceme", "your-secret", "yoursecret", "placeholder",
        "example", "default-secret", "jwt-secret", "jwtsecret", "my-secret", "mysecret", "supersecret", "secretkey",
    ]

    /// Why `secret` is refused, or `nil` when it is acceptable.
    package static func weakness(of secret: String) -> String? {
        let bytes = Array(secret.utf8)
        if published.contains(secret) { return "is the published example secret" }
        if bytes.count < minimumBytes { return "is shorter than \(minimumBytes) bytes" }
        let lowered = secret.lowercased()
        if let word = placeholders.first(where: { lowered.contains($0) }) { return "looks like a placeholder (\"\(word)\")" }
        if Set(bytes).count == 1 { return "repeats one character" }
        if entropyBits(bytes) < minimumEntropyBits { return "has too little entropy" }
        return nil
    }

    /// Length times the Shannon entropy of the byte distribution: an upper bound on what a
    /// human-chosen secret holds, and about 8 bits a byte short of a random one's.
    static func entropyBits(_ bytes: [UInt8]) -> Double {
        var counts: [UInt8: Int] = [:]
        for byte in bytes { counts[byte, default: 0] += 1 }
        let total = Double(bytes.count)
        let perByte = counts.values.reduce(0.0) { sum, count in
            let p = Double(count) / total
            return sum - p * log2(p)
        }
        return perByte * total
    }
}
