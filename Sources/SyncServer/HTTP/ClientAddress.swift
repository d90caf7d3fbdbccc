#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An IP address, IPv4 (4 bytes) or IPv6 (16 bytes); an IPv4-mapped IPv6 address is its IPv4
/// address, so one client has one spelling whichever socket it came through.
package struct IPAddress: Sendable, Hashable, CustomStringConvertible {
    package let bytes: [UInt8]

    /// Parses `1.2.3.4`, `::1`, `[::1]` and `1.2.3.4:5678` (a port is dropped); `nil` for
    /// anything else.
    package init?(_ text: some StringProtocol) {
        var text = String(text)
        if text.hasPrefix("["), let end = text.firstIndex(of: "]") {
            text = String(text[text.index(after: text.startIndex)..<end])
        } else if text.filter({ $0 == ":" }).count == 1, let colon = text.firstIndex(of: ":") {
            text = String(text[..<colon])
        }
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            bytes = withUnsafeBytes(of: &v4) { Array($0) }
        } else if inet_pton(AF_INET6, text, &v6) == 1 {
            let all = withUnsafeBytes(of: &v6) { Array($0) }
            bytes = all[0..<12] == [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff] ? Array(all[12...]) : all
        } else {
            return nil
        }
    }

    /// The address's one canonical spelling.
    package var description: String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        var copy = bytes
        let family = bytes.count == 4 ? AF_INET : AF_INET6
        guard inet_ntop(family, &copy, &buffer, socklen_t(buffer.count)) != nil else { return "unknown" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// One address or a block of them (`10.0.0.0/8`, `fd00::/8`, `127.0.0.1`).
package struct AddressRange: Sendable, Hashable, CustomStringConvertible {
    package let network: IPAddress
    package let prefixLength: Int

    /// Parses an address or `address/prefix`; `nil` for anything else (a prefix longer than
    /// the address, a negative one, text that is no address).
    package init?(_ text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        // A bare address: no brackets, no port.
        guard parts.count <= 2, !parts[0].contains("["), parts[0].filter({ $0 == ":" }).count != 1,
            let network = IPAddress(parts[0])
        else { return nil }
        let bits = network.bytes.count * 8
        if parts.count == 2 {
            guard let length = Int(parts[1]), (0...bits).contains(length) else { return nil }
            prefixLength = length
        } else {
            prefixLength = bits
        }
        self.network = network
    }

    /// Whether `address` is in the range (never across IPv4 and IPv6).
    package func contains(_ address: IPAddress) -> Bool {
        guard address.bytes.count == network.bytes.count else { return false }
        var remaining = prefixLength
        for (mine, theirs) in zip(network.bytes, address.bytes) where remaining > 0 {
            let mask: UInt8 = remaining >= 8 ? 0xff : ~(0xff >> UInt8(remaining))
            if mine & mask != theirs & mask { return false }
            remaining -= 8
        }
        return true
    }

    package var description: String { "\(network)/\(prefixLength)" }
}

/// Who the client of a request is, for the per-address limits (registrations, failed logins).
/// Without trusted proxies it is the peer of the connection, and `X-Forwarded-For` is ignored:
/// anyone can write that header. Behind a load balancer every peer is the balancer, so every
/// client would share one address (ten registrations an hour for everyone; fifty failed logins
/// by anyone locking every user out): a peer within ``trusted`` is a proxy, and the client is
/// the rightmost address of `X-Forwarded-For` that is not a trusted proxy (each proxy appends
/// the address it was reached from, so the entries left of the first untrusted one are the
/// client's own claims). An entry that is no address ends the walk at the last trusted hop.
package struct ClientAddressResolver: Sendable, Hashable {
    package let trusted: [AddressRange]

    package init(trusted: [AddressRange]) {
        self.trusted = trusted
    }

    private func isTrusted(_ address: IPAddress) -> Bool {
        trusted.contains { $0.contains(address) }
    }

    /// The client's address: `peer` (the connection's, `unknown` when it has none), or for a
    /// trusted peer what `forwardedFor` (the header's values, in order) says, canonical.
    package func address(peer: String, forwardedFor: [String]) -> String {
        guard !trusted.isEmpty, let peerAddress = IPAddress(peer), isTrusted(peerAddress) else { return peer }
        var client = peerAddress
        let hops = forwardedFor.flatMap { $0.split(separator: ",") }.map { $0.trimmingWhitespace() }
        for hop in hops.reversed() {
            guard let address = IPAddress(hop) else { break }
            client = address
            if !isTrusted(address) { break }
        }
        return client.description
    }
}

extension Substring {
    fileprivate func trimmingWhitespace() -> Substring {
        let start = firstIndex { $0 != " " && $0 != "\t" } ?? endIndex
        let end = lastIndex { $0 != " " && $0 != "\t" }.map(index(after:)) ?? start
        return self[start..<Swift.max(start, end)]
    }
}
