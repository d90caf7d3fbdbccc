/// How SQL reads an object's body and version: with the counters raised beside it laid in, at
/// their version (migrations 0018 and 0020, ``ObjectCounter``). Every read of
/// `psync_objects.body` or `.version` that returns it goes through this; conditions on the body
/// (searches, indexes) may read the column itself, since counters are never indexed.
enum StoredBody {
    /// The row of `psync_counters` of the object in `table` (only read when it is counted).
    private static func counterRow(_ table: String, _ column: String) -> String {
        """
        (SELECT k.\(column) FROM psync_counters k \
        WHERE k.partition = \(table).partition AND k.collection = \(table).collection AND k.id = \(table).id)
        """
    }

    /// The body of the row of `table` (an alias of `psync_objects`), counters laid in.
    static func sql(_ table: String = "o") -> String {
        """
        (CASE WHEN \(table).counted THEN psync_with_counters(\(table).body, \(counterRow(table, "counters"))) \
        WHEN \(table).counters IS NOT NULL THEN psync_with_counters(\(table).body, \(table).counters) \
        ELSE \(table).body END)
        """
    }

    /// The version of the row of `table`: its counters' when it has counters in a row of their own.
    static func version(_ table: String = "o") -> String {
        "(CASE WHEN \(table).counted THEN coalesce(\(counterRow(table, "version")), \(table).version) ELSE \(table).version END)"
    }
}
