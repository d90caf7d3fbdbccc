import Locking

/// Whether the optimistic path may take the objects a batch of `put`s touches to be new and
/// skip reading them (``ObjectStore/optimisticBatch(_:epoch:)``), decided per collection from
/// how that guess fared: a client creating messages always puts new ones, a client saving a
/// whole record with `put` changes one that exists. After a wrong guess the collection's puts
/// are read first for a while, then guessed again.
final class NewObjectGuess: Sendable {
    /// Uploads touching a collection that read first after a wrong guess.
    static let cooldown = 64

    /// Per collection: how many more batches read before guessing again.
    private let reading = Locked<[String: Int]>([:])

    /// Whether to guess for a batch of puts of these collections (and count the batch).
    func guess(_ collections: Set<String>) -> Bool {
        reading.withLock { reading in
            var guess = true
            for collection in collections {
                guard let left = reading[collection] else { continue }
                guess = false
                reading[collection] = left > 1 ? left - 1 : nil
            }
            return guess
        }
    }

    /// A guess failed for a batch of these collections.
    func failed(_ collections: Set<String>) {
        reading.withLock { reading in
            // Bounded: collections are named by applications, but stay few.
            if reading.count > 10_000 { reading.removeAll() }
            for collection in collections { reading[collection] = Self.cooldown }
        }
    }
}
