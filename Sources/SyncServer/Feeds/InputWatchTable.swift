import PartitionSync
import SyncProtocol
import SyncStorage

/// Which subscribers' permission decisions depend on which inputs, as a value without I/O: the
/// ``SubscriptionHub`` asks it, under its lock, whom a commit or a created object concerns, and
/// tells them after. Subscribers are held weakly: a session that ended without unwatching
/// is not kept alive by its decisions.
struct InputWatchTable {
    typealias Subscriber = any FeedSubscriber

    struct Watcher {
        weak var subscriber: Subscriber?
        /// ``generation`` when it began watching.
        var since = 0
    }

    /// Grows with every watch begun: a transaction that screened its changes at one
    /// generation (``ChangeScreen``) did not ask about watches begun after it.
    private(set) var generation = 0

    private(set) var partitions: [Partition: [ObjectIdentifier: Watcher]] = [:]
    /// The newest version seen of each watched partition: a decision is checked again once per
    /// new version, whether a notification or the poll reports it.
    private var versions: [Partition: Int64] = [:]
    /// Objects decisions found absent: their creation, in any partition, can change them.
    private(set) var absentObjects: [ObjectKey: [ObjectIdentifier: Watcher]] = [:]

    /// Notes a new version of a partition; the subscribers whose decisions it may change.
    ///
    /// A watched partition whose version was not known yet counts as changed when a
    /// notification says so, not when the poll first reads it.
    mutating func committed(_ partition: Partition, version: Int64, polled: Bool) -> [Subscriber] {
        guard let entries = partitions[partition] else { return [] }
        let known = versions[partition]
        versions[partition] = max(version, known ?? version)
        guard known.map({ version > $0 }) ?? !polled else { return [] }
        return entries.values.compactMap(\.subscriber)
    }

    /// As ``committed(_:version:polled:)`` for a commit of this process that screened the
    /// changes it let go of at `generation`: each subscriber with whether it began watching
    /// after that (the screen did not ask about it).
    mutating func committed(_ partition: Partition, version: Int64, screenedAt generation: Int) -> [(subscriber: Subscriber, late: Bool)] {
        guard let entries = partitions[partition], !committed(partition, version: version, polled: false).isEmpty else { return [] }
        return entries.values.compactMap { watcher in watcher.subscriber.map { ($0, watcher.since > generation) } }
    }

    /// The subscribers watching a partition now.
    func watchers(of partition: Partition) -> [Subscriber] {
        partitions[partition]?.values.compactMap(\.subscriber) ?? []
    }

    /// The changes that create an object a decision found absent, each with the subscribers
    /// whose decisions depend on it.
    func created(by changes: [ObjectChange]) -> [(ObjectChange, [Subscriber])] {
        guard !absentObjects.isEmpty else { return [] }
        return changes.compactMap { change in
            guard change.after.body != nil, let entries = absentObjects[change.key] else { return nil }
            return (change, entries.values.compactMap(\.subscriber))
        }
    }

    /// The subscribers watching an absent object.
    func watchers(ofAbsent key: ObjectKey) -> [Subscriber] {
        absentObjects[key]?.values.compactMap(\.subscriber) ?? []
    }

    /// Every watched partition with each subscriber watching it.
    var everyPartitionWatch: [(PermissionInput, Subscriber)] {
        partitions.flatMap { partition, entries in
            entries.values.compactMap(\.subscriber).map { (PermissionInput.partition(partition), $0) }
        }
    }

    /// Routes changes of `inputs` to a subscriber. `versionsRead` gives, for partitions a
    /// decision read before it watched them, the version it read: the inputs returned changed
    /// since (a newer version was already seen here).
    mutating func watch(_ inputs: [PermissionInput], versionsRead: [Partition: Int64], for subscriber: Subscriber) -> [PermissionInput] {
        var changed: [PermissionInput] = []
        let id = ObjectIdentifier(subscriber)
        generation += 1
        for input in inputs {
            switch input {
            case .partition(let partition):
                partitions[partition, default: [:]][id] = Watcher(subscriber: subscriber, since: generation)
                guard let read = versionsRead[partition] else { continue }
                if let known = versions[partition] {
                    if known > read { changed.append(input) }
                } else {
                    versions[partition] = read
                }
            case .absentObject(let key):
                absentObjects[key, default: [:]][id] = Watcher(subscriber: subscriber, since: generation)
            }
        }
        return changed
    }

    /// Stops routing changes of `inputs` to a subscriber.
    mutating func unwatch(_ inputs: [PermissionInput], for subscriber: ObjectIdentifier) {
        for input in inputs {
            switch input {
            case .partition(let partition):
                partitions[partition]?.removeValue(forKey: subscriber)
                if partitions[partition]?.isEmpty == true {
                    partitions.removeValue(forKey: partition)
                    versions.removeValue(forKey: partition)
                }
            case .absentObject(let key):
                absentObjects[key]?.removeValue(forKey: subscriber)
                if absentObjects[key]?.isEmpty == true { absentObjects.removeValue(forKey: key) }
            }
        }
    }

    /// How many inputs are watched.
    var count: Int { partitions.count + absentObjects.count }
}
