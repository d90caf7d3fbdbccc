/// How SQL reads an object's body: with the counters raised beside it laid in (migration 0018,
/// ``ObjectCounter``). Every read of `psync_objects.body` that returns it goes through this;
/// conditions on the body (searches, indexes) may read the column itself, since counters are
/// never indexed.
enum StoredBody {
    /// The body of the row of `table` (an alias of `psync_objects`), counters laid in.
    static func sql(_ table: String = "o") -> String {
        "(CASE WHEN \(table).counters IS NULL THEN \(table).body ELSE psync_with_counters(\(table).body, \(table).counters) END)"
    }
}
