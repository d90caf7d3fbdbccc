import PartitionSync
import SyncProtocol

extension WriteRecord {
    /// The change that creates `object` in this transaction, checked against the limits and
    /// encoded (``OperationApplier/create(_:body:)``); `nil` when this transaction knows the
    /// object with this very body already (the same document twice in an import's batch). A
    /// refusal when it knows another body under the key (``ObjectStore/importConflict``) or the
    /// key in another partition (`partition_mismatch`), as a `put` of the object would be
    /// refused by an import's careful way. Pure: the record is not changed.
    func newObject(_ object: NewObject, limits: Limits) throws(SyncError) -> ObjectChange? {
        guard case .some(.some) = known[object.key] else {
            return try OperationApplier(partition: object.partition, limits: limits).create(object.key, body: object.body)
        }
        // Known: the put applied to it, as any upload's (rare: an id twice in an export).
        let changes = try changes(of: [.put(object.key, body: object.body)], in: object.partition, limits: limits)
        guard let change = changes.first else { return nil }
        if let conflict = ObjectStore.importConflict(change) { throw conflict }
        return change
    }

    /// Takes an object created by an import's bulk insert (``WriteTransaction/insertNew(_:)``)
    /// into the record as written and let go of at once, as ``release(_:screening:keeping:)``
    /// lets go of written changes: the commit names its partition without its change (but the
    /// ones `screen` keeps), and the record holds nothing of it but what ``known`` says (which
    /// the validators of the batch's later objects read). The partition must be locked.
    mutating func insertedNew(_ change: ObjectChange, in partition: Partition, keeping screen: ChangeScreen?) {
        if screenedAt == nil { screenedAt = screen?.generation() ?? 0 }
        released[partition] = versions[partition]!
        releasedCount += 1
        if let screen, screen.keeps(partition, change) { kept[partition, default: []].append(change) }
    }

    /// Records that `stamp`'s partitions carry `clock` now (the statement that wrote them
    /// stamped them): the finish does not stamp them again.
    mutating func stamped(_ stamp: [Partition], clock: Int64?) {
        guard let clock else { return }
        for partition in stamp { clocks[partition] = clock }
    }
}
