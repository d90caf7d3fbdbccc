import Foundation
import Locking

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An advisory lock (`flock`) on a file, held until ``release()`` or until the process ends:
/// the kernel drops the locks of a process that dies, so a crashed user never holds a cluster.
final class FileLock: Sendable {
    private let descriptor: Locked<Int32?>
    let path: String

    /// Takes the lock, shared or exclusive, waiting while another process holds it the other way.
    init(path: String, exclusive: Bool) async throws {
        let fd = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw EmbeddedPostgresError(.dataDirectoryUnusable, "cannot open the lock file \(path): \(String(cString: strerror(errno)))")
        }
        // Not a blocking flock: it would hold one of the few cooperative threads while it waits.
        while flock(fd, (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK || errno == EINTR else {
                close(fd)
                throw EmbeddedPostgresError(.dataDirectoryUnusable, "cannot lock \(path): \(String(cString: strerror(errno)))")
            }
            do {
                try await Task.sleep(for: .milliseconds(50))
            } catch {
                close(fd)
                throw error
            }
        }
        self.descriptor = Locked(fd)
        self.path = path
    }

    /// Makes a shared lock exclusive if no other process holds the file; `false` otherwise (the
    /// shared lock may then be gone: call this only when about to release).
    func tryExclusive() -> Bool {
        descriptor.withLock { fd in fd.map { flock($0, LOCK_EX | LOCK_NB) == 0 } ?? false }
    }

    /// Lets the lock go (closing the file); a second call does nothing.
    func release() {
        guard let fd = descriptor.withLock({ fd -> Int32? in defer { fd = nil }; return fd }) else { return }
        close(fd)
    }

    deinit {
        release()
    }
}
