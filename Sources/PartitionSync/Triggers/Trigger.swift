import Logging
import SyncProtocol

/// A server-side handler of change events, registered by an application.
///
/// ```swift
/// let unread = Trigger(name: "unread-counts", collections: ["ChatMessage"], operations: [.insert]) { event, context in
///     let room = event.partition!.value
///     ...
///     try await context.apply(operationsPerPartition)
/// }
/// ```
///
/// Each event is handled in a transaction that also advances the trigger's position: the
/// handler's database writes (through the context) and the progress commit together, so a
/// crash neither loses an event nor applies its writes twice. Effects outside the database are
/// at least once.
public struct Trigger: Sendable {
    /// How events are handed to the handler.
    public enum Mode: Sendable, Hashable {
        /// One at a time, in event order (the default).
        case ordered
        /// Up to `maximum` at a time; each event still handled exactly once.
        case concurrent(maximum: Int)
    }

    /// What happens when the handler throws.
    public struct RetryPolicy: Sendable, Hashable {
        /// Attempts in all, the first included. Default 5.
        public var attempts: Int
        /// Wait before the second attempt, doubled for each next one. Default 100 ms.
        public var initialBackoff: Duration
        /// The longest wait between attempts. Default 10 s.
        public var maximumBackoff: Duration

        public init(attempts: Int = 5, initialBackoff: Duration = .milliseconds(100), maximumBackoff: Duration = .seconds(10)) {
            self.attempts = max(1, attempts)
            self.initialBackoff = initialBackoff
            self.maximumBackoff = maximumBackoff
        }

        package func backoff(afterAttempt attempt: Int) -> Duration {
            let factor = 1 << min(attempt - 1, 20)
            return min(initialBackoff * factor, maximumBackoff)
        }
    }

    public typealias Handler = @Sendable (ChangeEvent, TriggerContext) async throws -> Void
    /// A handler of a run of events at once, in order (see ``init(name:kinds:collections:operations:where:retry:gathering:images:handlingRuns:)``).
    public typealias RunHandler = @Sendable ([ChangeEvent], TriggerContext) async throws -> Void

    /// A stable name: the trigger's position and dead letters are stored under it.
    public let name: String
    public let kinds: Set<ChangeEvent.Kind>
    /// Collections of object events; `nil`: all.
    public let collections: Set<String>?
    /// Operations; `nil`: all.
    public let operations: Set<ChangeEvent.Operation>?
    /// A further filter on the event.
    public let predicate: (@Sendable (ChangeEvent) -> Bool)?
    public let mode: Mode
    public let retry: RetryPolicy
    /// The handler of one event (for a trigger made with a run handler: the run handler
    /// called with that event alone).
    public let handler: Handler
    /// The handler of a run of events, for a trigger made with one.
    public let runHandler: RunHandler?
    /// For a run handler: the shortest time between the starts of two runs. Events that
    /// arrive meanwhile wait and make the next run longer, which a handler that folds events
    /// turns into fewer writes. Zero: each run starts as soon as there are events.
    public let gathering: Duration
    /// What of its object an update's images carry to this trigger: whole by default, or
    /// without large fields the trigger reads only when they change (``ChangeEvent/Images``).
    public let images: ChangeEvent.Images

    /// A trigger on object changes.
    public init(
        name: String, collections: Set<String>? = nil, operations: Set<ChangeEvent.Operation>? = nil,
        where predicate: (@Sendable (ChangeEvent) -> Bool)? = nil, mode: Mode = .ordered, retry: RetryPolicy = .init(),
        images: ChangeEvent.Images = .whole, handler: @escaping Handler
    ) {
        self.init(
            name: name, kinds: [.object], collections: collections, operations: operations, where: predicate, mode: mode, retry: retry,
            images: images, handler: handler)
    }

    /// A trigger on any kind of event: `.user` (registered, deleted) and `.session` (opened,
    /// closed) as well as `.object`.
    public init(
        name: String, kinds: Set<ChangeEvent.Kind>, collections: Set<String>? = nil, operations: Set<ChangeEvent.Operation>? = nil,
        where predicate: (@Sendable (ChangeEvent) -> Bool)? = nil, mode: Mode = .ordered, retry: RetryPolicy = .init(),
        images: ChangeEvent.Images = .whole, handler: @escaping Handler
    ) {
        self.name = name
        self.kinds = kinds
        self.collections = collections
        self.operations = operations
        self.predicate = predicate
        self.mode = mode
        self.retry = retry
        self.handler = handler
        self.runHandler = nil
        self.gathering = .zero
        self.images = images
    }

    /// An ordered trigger whose handler takes the matching events of a run together: all
    /// those handled in one transaction (up to ``TriggerConfiguration/eventsPerTransaction``),
    /// in order. A handler that folds many events into fewer writes — RChat's unread counts
    /// add each room's new messages to each member's count once per run, not once per
    /// message — does less work per event the further behind the trigger is. When a run
    /// fails, its events are handled again one at a time (each a run of one), with retries
    /// and dead letters as usual. Its writes carry the depth of the run's deepest event, plus
    /// one. With `gathering`, runs start at most that often (see ``gathering``).
    public init(
        name: String, kinds: Set<ChangeEvent.Kind> = [.object], collections: Set<String>? = nil,
        operations: Set<ChangeEvent.Operation>? = nil, where predicate: (@Sendable (ChangeEvent) -> Bool)? = nil,
        retry: RetryPolicy = .init(), gathering: Duration = .zero, images: ChangeEvent.Images = .whole,
        handlingRuns runHandler: @escaping RunHandler
    ) {
        self.name = name
        self.kinds = kinds
        self.collections = collections
        self.operations = operations
        self.predicate = predicate
        self.mode = .ordered
        self.retry = retry
        self.handler = { event, context in try await runHandler([event], context) }
        self.runHandler = runHandler
        self.gathering = gathering
        self.images = images
    }

    /// The part of ``matches(_:)`` the event log applies when reading (all but the predicate).
    package var filter: ChangeEvent.Filter {
        ChangeEvent.Filter(kinds: kinds, collections: collections, operations: operations)
    }

    /// Whether the trigger handles the event.
    public func matches(_ event: ChangeEvent) -> Bool {
        filter.passes(event) && (predicate?(event) ?? true)
    }
}
