/// How SQL reads an object's body and version: with the counters raised beside it laid in, at
/// their version (migrations 0018 and 0020, ``ObjectCounter``). Every read of
/// `psync_objects.body` or `.version` that returns it goes through this; conditions on the body
/// (searches, indexes) may read the column itself, since counters are never indexed.
///
/// A statement joins the object's row of `psync_counters` once (``join(_:)``, after the row of
/// `table` in its `FROM`) and reads the body and the version from both rows: the counters row
/// is looked up once however many of the two it returns.
enum StoredBody {
    /// The alias of the counters row joined to `table`.
    private static func counters(_ table: String) -> String { "\(table)_k" }

    /// The object's row of `psync_counters`, for a counted object (none otherwise). A lateral
    /// subquery kept whole (`OFFSET 0`): `counted` is then a one-time filter before its index
    /// lookup, which is made only for a counted object, whatever plan the statement gets (a
    /// plain join probes for every object, or reads a partition's whole counters to join them).
    static func join(_ table: String = "o") -> String {
        """
        LEFT JOIN LATERAL (SELECT k.counters, k.version FROM psync_counters k \
        WHERE \(table).counted AND k.partition = \(table).partition AND k.collection = \(table).collection \
        AND k.id = \(table).id OFFSET 0) AS \(counters(table)) ON true
        """
    }

    /// The body of the row of `table` (an alias of `psync_objects`), counters laid in.
    static func sql(_ table: String = "o") -> String {
        let k = counters(table)
        return """
            (CASE WHEN \(k).counters IS NOT NULL THEN psync_with_counters(\(table).body, \(k).counters) \
            WHEN \(table).counters IS NOT NULL THEN psync_with_counters(\(table).body, \(table).counters) \
            ELSE \(table).body END)
            """
    }

    /// The version of the row of `table`: its counters' when it has counters in a row of their own.
    static func version(_ table: String = "o") -> String {
        "coalesce(\(counters(table)).version, \(table).version)"
    }
}
