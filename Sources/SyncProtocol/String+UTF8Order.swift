extension String {
    /// Whether this string's UTF-8 bytes sort before `other`'s, byte by byte: the order of
    /// PostgreSQL's `COLLATE "C"`, which partitions and object keys are sorted in. Compares
    /// the contiguous bytes of native strings directly (sorting the partitions and keys of an
    /// import batch through `UTF8View`'s generic comparison took 9 % of the import's CPU).
    package func utf8Precedes(_ other: String) -> Bool {
        let compared = utf8.withContiguousStorageIfAvailable { lhs in
            other.utf8.withContiguousStorageIfAvailable { rhs in
                for index in 0..<Swift.min(lhs.count, rhs.count) where lhs[index] != rhs[index] {
                    return lhs[index] < rhs[index]
                }
                return lhs.count < rhs.count
            }
        }
        if let compared, let compared { return compared }
        return utf8.lexicographicallyPrecedes(other.utf8)
    }
}
