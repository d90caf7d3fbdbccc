import Foundation
import SyncTesting

#if canImport(Glibc)
import Glibc
#endif

/// HTTP on a raw loopback socket, for requests a client library would not send as written (an
/// upgrade without its follow-up, a path with `..` left in).
enum RawHTTP {
    /// Sends `request` on a new connection to `port` and reads the answer until the server
    /// closes the connection, `isComplete` says what arrived is enough, or 20 s pass; the
    /// answer's status (0 when none came) and text. The blocking calls run on a thread of their
    /// own: on the concurrency pool (two threads on two cores) two of them at once would hold
    /// every thread the servers in this process answer on.
    static func exchange(
        port: Int, request: String, isComplete: @escaping @Sendable (String) -> Bool = { _ in false }
    ) async throws -> (status: Int, text: String) {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try blockingExchange(port: port, request: request, isComplete: isComplete) }) }.start()
        }
    }

    private static func blockingExchange(
        port: Int, request: String, isComplete: @Sendable (String) -> Bool
    ) throws -> (status: Int, text: String) {
        do {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(fd) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard connected == 0 else { throw TestTimeout(what: "a connection") }
            var timeout = timeval(tv_sec: 20, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            _ = request.withCString { send(fd, $0, strlen($0), 0) }
            var received: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = recv(fd, &buffer, buffer.count, 0)
                // A signal (SIGCHLD of another test's process) interrupts a receive with a
                // timeout set, which is never restarted: receive again.
                if count < 0, errno == EINTR { continue }
                if count <= 0 { break }
                received += buffer[0..<count]
                if isComplete(String(decoding: received, as: UTF8.self)) { break }
            }
            let text = String(decoding: received, as: UTF8.self)
            let status = text.split(separator: " ", maxSplits: 2).dropFirst().first.flatMap { Int($0) } ?? 0
            return (status, text)
        }
    }
}
