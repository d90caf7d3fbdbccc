import SyncProtocol

extension ChangeEvent {
    /// What of its object an update's before and after images carry to a trigger: whole, or
    /// without large fields the trigger reads only when the update changes them.
    ///
    /// ```swift
    /// // Every member of every room is listed in `conversations` (0.4 MB for a room of 5,000);
    /// // a presence or a name changes far more often, and needs none of it.
    /// Trigger(name: "user-changed", collections: ["User"], images: .withoutUnchanged(["conversations"])) { event, context in … }
    /// ```
    ///
    /// A field is left out of the images of an update (or a replace) that neither changes nor removes
    /// it, nor anything inside it (``ChangeEvent/changedFields`` and ``ChangeEvent/removedFields``
    /// name no path under it); it stays in every other event's images (inserts, deletes,
    /// imports, updates that change it). The event log leaves it out as it reads, so the
    /// field is neither sent by the database nor parsed; the event as recorded keeps it, for
    /// every other trigger. The trigger's `where:` predicate sees the same images as its
    /// handler when events are handed to it (it also sees the whole images when the write
    /// decides whether to record the event at all), so it should not depend on a field it
    /// leaves out unless that field changed.
    public struct Images: Sendable, Hashable {
        /// Top-level fields left out of an update's images when the update does not touch them.
        public var withoutUnchanged: Set<String>

        /// The whole objects (the default).
        public static let whole = Images(withoutUnchanged: [])

        /// An update's images without `fields` (top-level names) when it does not touch them.
        public static func withoutUnchanged(_ fields: Set<String>) -> Images {
            Images(withoutUnchanged: fields)
        }

        private init(withoutUnchanged: Set<String>) {
            self.withoutUnchanged = withoutUnchanged
        }

        /// The fields left out of `event`'s images: none unless it is an update or a replace, and none the
        /// update touches. The event log's read makes the same choice in SQL.
        public func leftOut(of event: ChangeEvent) -> Set<String> {
            guard !withoutUnchanged.isEmpty, event.operation == .update || event.operation == .replace else { return [] }
            var fields = withoutUnchanged
            for path in event.changedFields + event.removedFields {
                fields.remove(String(path.prefix { $0 != "." }))
            }
            return fields
        }

        /// `event` with its images as a trigger taking these images sees them (an application's
        /// tests hand events so to a handler).
        public func applied(to event: ChangeEvent) -> ChangeEvent {
            let fields = leftOut(of: event)
            guard !fields.isEmpty else { return event }
            var event = event
            for field in fields {
                event.before?.removeValue(forKey: field)
                event.after?.removeValue(forKey: field)
            }
            return event
        }
    }
}
