/// Building paths from components, so that ids and names are values, never path syntax: an id
/// holding `]`, `=` or `.` cannot make a path invalid or address another field.
///
/// ```swift
/// let unread = try Path.field("conversations").element(where: "id", is: conversationID).field("unreadCount")
/// ```
extension Path {
    /// A path of one top-level field.
    public static func field(_ name: String) -> Path {
        // One field component: always a valid path.
        try! Path([.field(name)])
    }

    /// This path, then a field of the object it leads to.
    public func field(_ name: String) throws(SyncError) -> Path {
        try Path(components + [.field(name)])
    }

    /// This path, then the first element of the array it leads to whose `field` is the string
    /// `value`.
    public func element(where field: String, is value: String) throws(SyncError) -> Path {
        try Path(components + [.match(field: field, value: value)])
    }

    /// This path, then the element at `position` of the array it leads to.
    public func index(_ position: Int) throws(SyncError) -> Path {
        guard position >= 0 else { throw SyncError(.invalidPath, "an index is not negative") }
        return try Path(components + [.index(position)])
    }
}
