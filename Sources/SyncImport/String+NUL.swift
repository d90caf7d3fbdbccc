#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension String {
    /// Whether the text holds U+0000, which PostgreSQL's text and jsonb cannot store: searched
    /// with `memchr` on the contiguous UTF-8 (`utf8.contains(0)` walked the view a byte at a
    /// time, for every string and field name of every document).
    var containsNUL: Bool {
        var text = self
        return text.withUTF8 { bytes in
            guard let base = bytes.baseAddress, !bytes.isEmpty else { return false }
            return memchr(base, 0, bytes.count) != nil
        }
    }
}
