import HTTPTypes
import HummingbirdWSClient
import Locking
import Logging
import NIOCore
import NIOWebSocket
import SyncProtocol

/// A WebSocket client for tests: sends messages or raw frames, receives server messages with
/// timeouts, and can stop reading from the socket to play a slow consumer.
public final class TestSyncClient: Sendable {
    private let outgoing: AsyncStream<WebSocketOutboundWriter.OutboundFrame>.Continuation
    private let incoming: MessageBuffer
    private let gate: ReadGate
    private let connection: Task<WebSocketCloseFrame?, any Error>

    private init(
        outgoing: AsyncStream<WebSocketOutboundWriter.OutboundFrame>.Continuation,
        incoming: MessageBuffer, gate: ReadGate, connection: Task<WebSocketCloseFrame?, any Error>
    ) {
        self.outgoing = outgoing
        self.incoming = incoming
        self.gate = gate
        self.connection = connection
    }

    /// Connects; with a token, it goes in the upgrade request's Authorization header.
    public static func connect(url: String, token: String?) async throws -> TestSyncClient {
        var headers = HTTPFields()
        if let token { headers[.authorization] = "Bearer \(token)" }
        let (outgoingStream, outgoing) = AsyncStream.makeStream(of: WebSocketOutboundWriter.OutboundFrame.self)
        let incoming = MessageBuffer()
        let gate = ReadGate()
        let logger = TestPostgres.makeLogger("psync.test.client")
        let connected = AsyncStream.makeStream(of: Void.self)
        let connection = Task {
            defer {
                incoming.finish()
                connected.continuation.finish()
            }
            return try await WebSocketClient.connect(
                url: url, configuration: .init(maxFrameSize: 1 << 20, additionalHeaders: headers), logger: logger
            ) { inbound, outbound, _ in
                connected.continuation.yield()
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        for await frame in outgoingStream {
                            switch frame {
                            case .text(let text): try await outbound.writeTextMessage(text)
                            default: try await outbound.write(frame)
                            }
                        }
                        try await outbound.close(.normalClosure, reason: nil)
                    }
                    group.addTask {
                        var messages = inbound.messages(maxSize: 256 << 20).makeAsyncIterator()
                        while true {
                            await gate.waitWhilePaused()
                            guard let message = try await messages.next() else { break }
                            incoming.append(message)
                        }
                    }
                    try await group.next()
                    group.cancelAll()
                }
            }
        }
        var waiting = connected.stream.makeAsyncIterator()
        _ = await waiting.next()
        let client = TestSyncClient(outgoing: outgoing, incoming: incoming, gate: gate, connection: connection)
        if connection.isCancelled { throw TestTimeout(what: "the connection") }
        return client
    }

    /// Sends a protocol message.
    public func send(_ message: ClientMessage) {
        outgoing.yield(.text(message.json.jsonString))
    }

    /// Sends a text frame as it is.
    public func send(text: String) {
        outgoing.yield(.text(text))
    }

    /// Sends bytes as one frame, text or binary, whether or not they are valid UTF-8 or JSON.
    public func send(bytes: [UInt8], asText: Bool) {
        var buffer = ByteBuffer()
        buffer.writeBytes(bytes)
        outgoing.yield(.custom(WebSocketFrame(fin: true, opcode: asText ? .text : .binary, data: buffer)))
    }

    /// Sends one frame of a fragmented text message: a text frame when `first`, else a
    /// continuation frame; `fin` on the last.
    public func send(fragment bytes: [UInt8], first: Bool, fin: Bool) {
        var buffer = ByteBuffer()
        buffer.writeBytes(bytes)
        outgoing.yield(.custom(WebSocketFrame(fin: fin, opcode: first ? .text : .continuation, data: buffer)))
    }

    /// Sends any frame, including malformed ones.
    public func send(frame: WebSocketOutboundWriter.OutboundFrame) {
        outgoing.yield(frame)
    }

    /// The next server message, decoded; throws after `timeout`, or when the connection ended.
    public func next(timeout: Duration = .seconds(10)) async throws -> ServerMessage {
        let json = try await nextJSON(timeout: timeout)
        return try ServerMessage(json: json)
    }

    /// The next server message as JSON.
    public func nextJSON(timeout: Duration = .seconds(10)) async throws -> JSONValue {
        guard let message = try await nextMessage(timeout: timeout) else { throw ConnectionClosed() }
        switch message {
        case .text(let text): return try JSONParser().parse(text)
        case .binary(let buffer): return try JSONParser().parse(buffer.readableBytesView)
        }
    }

    /// Skips messages until one matches; returns it.
    public func next(timeout: Duration = .seconds(10), where matches: (ServerMessage) -> Bool) async throws -> ServerMessage {
        let deadline = ContinuousClock.now + timeout
        while true {
            let remaining = deadline - ContinuousClock.now
            guard remaining > .zero else { throw TestTimeout(what: "a matching message") }
            let message = try await next(timeout: remaining)
            if matches(message) { return message }
        }
    }

    /// Whether a message arrives within `interval` (it is consumed).
    public func receivesNothing(within interval: Duration) async throws -> Bool {
        do {
            _ = try await nextMessage(timeout: interval)
            return false
        } catch is TestTimeout {
            return true
        }
    }

    private func nextMessage(timeout: Duration) async throws -> WebSocketMessage? {
        try await incoming.next(timeout: timeout)
    }

    /// Stops reading from the socket: the server's writes back up, as with a slow client.
    public func pauseReading() { gate.pause() }

    /// Reads again.
    public func resumeReading() { gate.resume() }

    /// Closes the connection and returns the server's close frame, if any.
    @discardableResult
    public func close() async -> WebSocketCloseFrame? {
        outgoing.finish()
        return try? await connection.value
    }

    /// Waits for the server to close the connection; returns its close code (1000, 4001, …).
    public func closeCode(timeout: Duration = .seconds(10)) async throws -> Int? {
        try await withThrowingTaskGroup(of: Int??.self) { group in
            group.addTask {
                guard let frame = try? await self.connection.value else { return .some(nil) }
                return Int(UInt16(webSocketErrorCode: frame.closeCode))
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                return .some(nil)
            }
            let first = try await group.next()!
            group.cancelAll()
            guard let result = first else { return nil }
            guard let code = result else { throw TestTimeout(what: "the connection to close") }
            return code
        }
    }
}

/// The connection ended while a message was awaited.
public struct ConnectionClosed: Error {}

/// Received messages waiting to be read, with reads that give up after a timeout without
/// losing anything (cancelling a read of an AsyncStream would end the stream).
final class MessageBuffer: Sendable {
    private struct State {
        var items: [WebSocketMessage] = []
        var finished = false
        var waiter: (id: Int, continuation: CheckedContinuation<WebSocketMessage?, any Error>)?
        var nextID = 0
    }

    private let state = Locked(State())

    func append(_ message: WebSocketMessage) {
        let waiter = state.withLock { state -> CheckedContinuation<WebSocketMessage?, any Error>? in
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter.continuation
            }
            state.items.append(message)
            return nil
        }
        waiter?.resume(returning: message)
    }

    func finish() {
        let waiter = state.withLock { state -> CheckedContinuation<WebSocketMessage?, any Error>? in
            state.finished = true
            defer { state.waiter = nil }
            return state.waiter?.continuation
        }
        waiter?.resume(returning: nil)
    }

    func next(timeout: Duration) async throws -> WebSocketMessage? {
        try await withCheckedThrowingContinuation { continuation in
            let id = state.withLock { state -> Int? in
                if !state.items.isEmpty {
                    continuation.resume(returning: state.items.removeFirst())
                    return nil
                }
                if state.finished {
                    continuation.resume(returning: nil)
                    return nil
                }
                state.nextID += 1
                state.waiter = (state.nextID, continuation)
                return state.nextID
            }
            guard let id else { return }
            Task {
                try? await Task.sleep(for: timeout)
                let expired = self.state.withLock { state -> CheckedContinuation<WebSocketMessage?, any Error>? in
                    guard let waiter = state.waiter, waiter.id == id else { return nil }
                    state.waiter = nil
                    return waiter.continuation
                }
                expired?.resume(throwing: TestTimeout(what: "a message"))
            }
        }
    }
}

/// Lets the socket reader pause.
final class ReadGate: Sendable {
    private let state = Locked<(paused: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func pause() { state.withLock { $0.paused = true } }

    func resume() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.paused = false
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    func waitWhilePaused() async {
        await withCheckedContinuation { continuation in
            let proceed = state.withLock { state -> Bool in
                if state.paused {
                    state.waiters.append(continuation)
                    return false
                }
                return true
            }
            if proceed { continuation.resume() }
        }
    }
}

extension TestSyncClient {
    /// Uploads and waits for the answer to this request id (`ack` or `rejected`, or an
    /// `error` about the partition), skipping other messages.
    public func upload(_ operations: [SyncOperation], to partition: Partition, requestId: String, timeout: Duration = .seconds(10)) async throws -> ServerMessage {
        send(.upload(requestId: requestId, partition: partition, operations: operations))
        return try await next(timeout: timeout) { message in
            switch message {
            case .ack(let id, _, _, _), .rejected(let id, _, _, _): return id == requestId
            case .error(_, let target): return target == partition
            default: return false
            }
        }
    }

    /// Subscribes to `partition` and returns its copy once it is up to date, or the error the
    /// server answered instead.
    public func subscribe(_ partition: Partition, timeout: Duration = .seconds(15)) async throws -> Result<PartitionCopy, SyncError> {
        send(.subscribe(partition: partition, cursor: nil))
        var copy = PartitionCopy()
        let deadline = ContinuousClock.now + timeout
        while true {
            let remaining = deadline - ContinuousClock.now
            guard remaining > .zero else { throw TestTimeout(what: "\(partition) to be up to date") }
            switch try await next(timeout: remaining) {
            case .changes(let batch) where batch.partition == partition:
                copy.apply(batch)
                if batch.upToDate { return .success(copy) }
            case .error(let error, let target) where target == partition:
                return .failure(error)
            default:
                continue
            }
        }
    }
}

extension ServerMessage {
    /// Whether this is an `ack`.
    public var isAck: Bool {
        if case .ack = self { return true }
        return false
    }

    /// The error code of a `rejected`, or `nil`.
    public var rejectionCode: SyncError.Code? {
        if case .rejected(_, _, let error, _) = self { return error.code }
        return nil
    }
}
