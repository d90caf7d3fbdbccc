import SyncProtocol

extension ChangeEvent {
    /// An event's kind, collection and operation: what a ``Filter`` tests.
    package struct Shape: Sendable, Hashable {
        package var kind: ChangeEvent.Kind
        package var collection: String?
        package var operation: ChangeEvent.Operation

        package init(kind: ChangeEvent.Kind, collection: String?, operation: ChangeEvent.Operation) {
            self.kind = kind
            self.collection = collection
            self.operation = operation
        }
    }

    /// Which events a reader wants: by kind, and optionally by collection and operation.
    package struct Filter: Sendable, Hashable {
        package var kinds: Set<ChangeEvent.Kind>
        /// `nil`: every collection (and events without one).
        package var collections: Set<String>?
        /// `nil`: every operation.
        package var operations: Set<ChangeEvent.Operation>?

        package init(kinds: Set<ChangeEvent.Kind>, collections: Set<String>? = nil, operations: Set<ChangeEvent.Operation>? = nil) {
            self.kinds = kinds
            self.collections = collections
            self.operations = operations
        }

        /// Whether `event` passes: the same test the event log's SQL makes when it reads.
        package func passes(_ event: ChangeEvent) -> Bool {
            passes(Shape(kind: event.kind, collection: event.collection, operation: event.operation))
        }

        /// Whether events of this kind, collection and operation pass.
        package func passes(_ shape: Shape) -> Bool {
            guard kinds.contains(shape.kind) else { return false }
            if let collections, !collections.contains(shape.collection ?? "") { return false }
            if let operations, !operations.contains(shape.operation) { return false }
            return true
        }
    }
}
