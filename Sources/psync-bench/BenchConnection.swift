import Foundation
import HTTPTypes
import HummingbirdWSClient
import Locking
import Logging
import NIOCore
import SyncProtocol

/// One WebSocket session of the benchmark, speaking the protocol directly (no store, no
/// queue): what it receives goes to `onMessage` on the connection's reading task.
final class BenchConnection: Sendable {
    private let outgoing: AsyncStream<String>.Continuation
    private let task: Task<Void, Never>

    private init(outgoing: AsyncStream<String>.Continuation, task: Task<Void, Never>) {
        self.outgoing = outgoing
        self.task = task
    }

    /// Connects with the user's token and returns once the server said `ready`. With
    /// `onChanges`, `changes` messages are not parsed but scanned (``ChangesScan``) and handed
    /// to it with their bytes; every other message goes to `onMessage`.
    static func connect(
        _ url: String, token: String, logger: Logger,
        onChanges: (@Sendable (ChangesScan, UnsafeRawBufferPointer) -> Void)? = nil,
        onMessage: @escaping @Sendable (ServerMessage) -> Void
    ) async throws -> BenchConnection {
        let (messages, sink) = AsyncStream.makeStream(of: String.self)
        let ready = Once<Result<Void, any Error>>()
        let task = Task {
            do {
                try await WebSocketClient.connect(
                    url: url,
                    configuration: .init(maxFrameSize: 1 << 24, additionalHeaders: [.authorization: "Bearer \(token)"], closeTimeout: .seconds(2)),
                    logger: logger
                ) { inbound, outbound, _ in
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        group.addTask {
                            for await text in messages { try await outbound.write(.text(text)) }
                        }
                        group.addTask {
                            for try await frame in inbound.messages(maxSize: 256 << 20) {
                                if let onChanges, case .text(var text) = frame {
                                    let scanned = text.withUTF8 { bytes -> Bool in
                                        let raw = UnsafeRawBufferPointer(bytes)
                                        guard let scan = ChangesScan(raw), scan.type == "changes" else { return false }
                                        onChanges(scan, raw)
                                        return true
                                    }
                                    if scanned { continue }
                                }
                                let json: JSONValue
                                switch frame {
                                case .text(let text): json = try JSONParser(maximumDepth: 512).parse(text)
                                case .binary(let buffer): json = try JSONParser(maximumDepth: 512).parse(buffer.readableBytesView)
                                }
                                let message = try ServerMessage(json: json)
                                if case .ready = message { ready.set(.success(())) }
                                onMessage(message)
                            }
                        }
                        try await group.next()
                        group.cancelAll()
                    }
                }
                ready.set(.failure(BenchError("the server closed the connection before ready")))
            } catch {
                ready.set(.failure(error))
            }
        }
        try await ready.value.get()
        return BenchConnection(outgoing: sink, task: task)
    }

    func send(_ message: ClientMessage) {
        outgoing.yield(message.json.jsonString)
    }

    /// Closes the connection and waits until it is closed.
    func close() async {
        outgoing.finish()
        task.cancel()
        await task.value
    }
}

/// A value set once and awaited by anyone.
final class Once<Value: Sendable>: Sendable {
    private let state = Locked<(value: Value?, waiters: [CheckedContinuation<Value, Never>])>((nil, []))

    func set(_ value: Value) {
        let waiters = state.withLock { state -> [CheckedContinuation<Value, Never>] in
            guard state.value == nil else { return [] }
            state.value = value
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(returning: value) }
    }

    var isSet: Bool { state.withLock { $0.value != nil } }

    var value: Value {
        get async {
            await withCheckedContinuation { continuation in
                let now = state.withLock { state -> Value? in
                    if let value = state.value { return value }
                    state.waiters.append(continuation)
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        }
    }
}
