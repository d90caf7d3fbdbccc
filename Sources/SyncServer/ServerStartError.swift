import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why the server could not start.
package struct ServerStartError: Error, Sendable, Hashable, CustomStringConvertible {
    package struct Code: RawRepresentable, Sendable, Hashable {
        package var rawValue: String
        package init(rawValue: String) { self.rawValue = rawValue }
        /// Another process listens on the address and port.
        package static let addressInUse = Code(rawValue: "address_in_use")
    }

    package var code: Code
    package var message: String

    static func addressInUse(host: String, port: Int) -> ServerStartError {
        ServerStartError(code: .addressInUse, message: "port \(port) on \(host) is in use (is another server running?)")
    }

    package var description: String { message }

    /// Throws ``Code/addressInUse`` when another process listens on `host`:`port`, before
    /// anything else starts: an embedded database, a connection pool or migrations started
    /// first would print their own lines (and warnings as they are cancelled) ahead of the one
    /// that matters. The server's own bind still answers the same way if another process
    /// takes the port in between. Port 0 (any free port) is not checked.
    package static func checkAddress(host: String, port: Int) throws {
        guard port > 0, port <= Int(UInt16.max) else { return }
        var hints = addrinfo()
        hints.ai_flags = AI_PASSIVE
        hints.ai_family = AF_UNSPEC
        #if canImport(Glibc)
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
        hints.ai_socktype = SOCK_STREAM
        #endif
        var list: UnsafeMutablePointer<addrinfo>?
        // An address that does not resolve is the server's bind to report.
        guard getaddrinfo(host, String(port), &hints, &list) == 0, let first = list else { return }
        defer { freeaddrinfo(list) }
        let fd = socket(first.pointee.ai_family, first.pointee.ai_socktype, first.pointee.ai_protocol)
        guard fd >= 0 else { return }
        defer { close(fd) }
        // As the server binds: a port whose last connections wait in TIME_WAIT is free.
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        if bind(fd, first.pointee.ai_addr, first.pointee.ai_addrlen) != 0, errno == EADDRINUSE {
            throw addressInUse(host: host, port: port)
        }
    }
}
