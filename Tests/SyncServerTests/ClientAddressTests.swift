@testable import SyncServer
import Testing

/// Who the client is, for the per-address limits: the peer, or behind a trusted proxy what its
/// `X-Forwarded-For` says (behind a load balancer every peer is the balancer: one address for
/// everyone, and fifty failed logins by anyone locked every user out).
@Suite("Client address")
struct ClientAddressTests {
    static let balancer = ClientAddressResolver(trusted: [AddressRange("10.0.0.0/8")!, AddressRange("::1")!])

    @Test("without trusted proxies, or from a peer that is not one, the peer is the client and the header is ignored")
    func untrustedPeer() {
        #expect(ClientAddressResolver(trusted: []).address(peer: "10.1.2.3", forwardedFor: ["203.0.113.9"]) == "10.1.2.3")
        #expect(Self.balancer.address(peer: "198.51.100.7", forwardedFor: ["203.0.113.9"]) == "198.51.100.7")
        #expect(Self.balancer.address(peer: "unknown", forwardedFor: ["203.0.113.9"]) == "unknown")
    }

    @Test("from a trusted proxy: the rightmost address that is not a trusted proxy, whatever the client claimed left of it")
    func rightmostUntrusted() {
        #expect(Self.balancer.address(peer: "10.0.0.5", forwardedFor: ["203.0.113.9"]) == "203.0.113.9")
        // The client wrote its own header (a forged address); the balancer appended the real one.
        #expect(Self.balancer.address(peer: "10.0.0.5", forwardedFor: ["1.1.1.1, 203.0.113.9"]) == "203.0.113.9")
        // Two proxies: the inner one appended the outer one's address.
        #expect(Self.balancer.address(peer: "10.0.0.5", forwardedFor: ["203.0.113.9", "10.9.9.9"]) == "203.0.113.9")
        // Every hop a proxy: the leftmost.
        #expect(Self.balancer.address(peer: "10.0.0.5", forwardedFor: ["10.7.7.7, 10.8.8.8"]) == "10.7.7.7")
        // No header: the proxy itself.
        #expect(Self.balancer.address(peer: "10.0.0.5", forwardedFor: []) == "10.0.0.5")
    }

    @Test("an entry that is no address ends the walk at the last trusted hop; ports, brackets and spellings come out canonical")
    func garbageAndSpellings() {
        #expect(Self.balancer.address(peer: "10.0.0.5", forwardedFor: ["203.0.113.9, not-an-address, 10.2.2.2"]) == "10.2.2.2")
        #expect(Self.balancer.address(peer: "10.0.0.5", forwardedFor: ["  203.0.113.9:4711 "]) == "203.0.113.9")
        #expect(Self.balancer.address(peer: "::1", forwardedFor: ["[2001:DB8:0:0::1]:443"]) == "2001:db8::1")
        #expect(Self.balancer.address(peer: "10.0.0.5", forwardedFor: ["::ffff:203.0.113.9"]) == "203.0.113.9")
    }

    @Test("ranges: CIDR blocks of both families, single addresses, and what is refused")
    func ranges() throws {
        let block = try #require(AddressRange("192.168.4.0/22"))
        #expect(block.contains(IPAddress("192.168.7.255")!))
        #expect(!block.contains(IPAddress("192.168.8.0")!))
        #expect(!block.contains(IPAddress("::ffff:c0a8:0800")!))
        let six = try #require(AddressRange("fd00::/8"))
        #expect(six.contains(IPAddress("fd12:3456::1")!))
        #expect(!six.contains(IPAddress("fe80::1")!))
        #expect(!six.contains(IPAddress("10.0.0.1")!))
        #expect(AddressRange("0.0.0.0/0")!.contains(IPAddress("8.8.8.8")!))
        #expect(AddressRange("127.0.0.1")!.description == "127.0.0.1/32")
        for bad in ["10.0.0.0/33", "10.0.0.0/-1", "10.0.0.0/", "example.com", "10.0.0.1:80", "[::1]", "::/129", "1.2.3.4/8/8"] {
            #expect(AddressRange(bad) == nil, "\(bad)")
        }
    }
}
