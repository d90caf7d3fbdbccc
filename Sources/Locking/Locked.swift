#if PSYNC_TSAN
import Foundation
#else
import Synchronization
#endif

/// A value behind a lock: the one lock every module of PartitionSync uses.
///
/// It is `Synchronization.Mutex` in every build but one. On Linux, `Mutex` locks with futex
/// system calls that the thread sanitizer does not see, so a sanitizer build would report every
/// access to guarded state as a race and hide the real ones among them. A build compiled with
/// `-DPSYNC_TSAN` (`scripts/check-sanitizers.sh thread` passes it) guards the value with an
/// `NSLock` instead, whose pthread mutex the sanitizer understands. The API is `Mutex`'s, so the
/// choice changes nothing else.
public struct Locked<Value: ~Copyable>: ~Copyable, @unchecked Sendable {
    #if PSYNC_TSAN
    private final class Storage: @unchecked Sendable {
        let lock = NSLock()
        var value: Value
        init(_ value: consuming Value) { self.value = value }
    }
    private let storage: Storage

    public init(_ value: consuming sending Value) {
        storage = Storage(value)
    }

    public borrowing func withLock<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        storage.lock.lock()
        defer { storage.lock.unlock() }
        return try body(&storage.value)
    }
    #else
    @usableFromInline let mutex: Mutex<Value>

    @inlinable
    public init(_ value: consuming sending Value) {
        mutex = Mutex(value)
    }

    @inlinable
    public borrowing func withLock<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        try mutex.withLock(body)
    }
    #endif
}
