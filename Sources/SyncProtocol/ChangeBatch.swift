/// A page of a partition's objects: part of a snapshot, or the changes after a cursor.
public struct ChangeBatch: Sendable, Hashable {
    public var partition: Partition
    /// Objects in (version, collection, id) order; tombstones have no body.
    public var objects: [SyncObject]
    /// Where the next page starts.
    public var cursor: Cursor
    /// Whether this page reaches the partition's newest committed version.
    public var upToDate: Bool
    /// Whether this is the first page of a full snapshot: the reader drops its copy first.
    public var reset: Bool
    /// On an up-to-date batch: the partition version the reader's copy is now complete up to
    /// (an addition to the contract; a client compares it with an ack's `version`).
    public var version: Int64?
    /// On the first page of a catch-up that more pages follow, when the subscription asked for
    /// progress: how many objects the whole catch-up holds, this page's included, as the
    /// server counted them when it read this page (an estimate: what commits during the
    /// catch-up comes too). An addition to the contract.
    public var total: Int?

    public init(
        partition: Partition, objects: [SyncObject], cursor: Cursor, upToDate: Bool, reset: Bool, version: Int64? = nil, total: Int? = nil
    ) {
        self.partition = partition
        self.objects = objects
        self.cursor = cursor
        self.upToDate = upToDate
        self.reset = reset
        self.version = version
        self.total = total
    }

    /// The wire form (without the `type` field of the WebSocket message).
    public var json: JSONValue {
        var fields: [String: JSONValue] = [
            "partition": .string(partition.description), "objects": .array(objects.map(\.json)),
            "cursor": .string(cursor.rawValue), "upToDate": .bool(upToDate), "reset": .bool(reset),
        ]
        if let version { fields["version"] = .int(version) }
        if let total { fields["total"] = .int(Int64(total)) }
        return .object(fields)
    }

    /// Decodes the wire form.
    public init(json: JSONValue) throws(SyncError) {
        guard let partitionText = json["partition"]?.stringValue, let objects = json["objects"]?.arrayValue,
            let cursor = json["cursor"]?.stringValue, let upToDate = json["upToDate"]?.boolValue
        else {
            throw SyncError(.badRequest, "a change batch has partition, objects, cursor and upToDate")
        }
        var decoded: [SyncObject] = []
        decoded.reserveCapacity(objects.count)
        for object in objects { decoded.append(try SyncObject(json: object)) }
        self.init(
            partition: try Partition(partitionText), objects: decoded, cursor: Cursor(rawValue: cursor),
            upToDate: upToDate, reset: json["reset"]?.boolValue ?? false, version: json["version"]?.intValue,
            total: json["total"]?.intValue.map(Int.init))
    }
}
