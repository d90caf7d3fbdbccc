import Foundation
import HTTPTypes
import HummingbirdWSClient
import Logging
import NIOCore
import NIOWebSocket
import SyncProtocol

extension SyncClient {
    /// Keeps a connection to the server until cancelled: connects (refreshing the access token
    /// when needed), subscribes every open partition from its stored cursor, uploads the queue
    /// in order, pings, and after a disconnect tries again with exponential backoff and jitter.
    public func run() async {
        // Local expiries set before a restart.
        purgeLocalExpiries()
        // Other processes sharing the store (a `watch` beside a `read`): their commits show here.
        let follower = Task { await self.followOtherProcesses() }
        defer { follower.cancel() }
        var failures = 0
        while !Task.isCancelled {
            let token: String?
            do {
                token = try await freshAccessToken()
            } catch {
                token = nil
                logger.debug("cannot refresh the access token", metadata: ["error": "\(error)"])
            }
            guard let token else {
                setStatus(.offline)
                if userID == nil || (try? store.setting("refreshToken")) == nil {
                    await waitForSignIn()
                } else {
                    failures += 1
                    await backoff(failures)
                }
                continue
            }
            setStatus(.connecting)
            sessionAccepted = false
            do {
                let closeFrame = try await WebSocketClient.connect(
                    url: configuration.webSocketURL,
                    configuration: .init(
                        maxFrameSize: 1 << 20, additionalHeaders: [.authorization: "Bearer \(token)"],
                        // A dead server never answers the close handshake: give up on it soon.
                        closeTimeout: .seconds(2)),
                    logger: logger
                ) { inbound, outbound, _ in
                    await self.session(inbound: inbound, outbound: outbound)
                }
                if let closeFrame, closeFrame.closeCode == .unknown(4001) { expireAccessToken() }
            } catch {
                logger.debug("connection failed", metadata: ["error": "\(error)"])
            }
            endSession()
            failures = sessionAccepted ? 0 : failures + 1
            if Task.isCancelled { break }
            await backoff(max(failures, 1))
        }
        endSession()
    }

    private func backoff(_ failures: Int) async {
        let base = configuration.reconnectDelay * (1 << min(failures - 1, 16))
        let capped = min(base, configuration.maximumReconnectDelay)
        let jittered = capped * Double.random(in: 0.5...1.0)
        try? await Task.sleep(for: jittered)
    }

    private func waitForSignIn() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                if userID != nil { continuation.resume() } else { signedInWakeup = continuation }
            }
        } onCancel: {
            Task { await self.cancelSignInWait() }
        }
    }

    private func cancelSignInWait() {
        signedInWakeup?.resume()
        signedInWakeup = nil
    }

    /// Serves one connection until it ends.
    private func session(inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter) async {
        let (messages, sink) = AsyncStream.makeStream(of: ClientMessage.self)
        outgoing = sink
        let ping = configuration.pingInterval
        let pongTimeout = configuration.pongTimeout
        lastHeard = .now
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await message in messages {
                    do { try await outbound.writeTextMessage(message.json.jsonString) } catch { break }
                }
            }
            group.addTask {
                do {
                    for try await frame in inbound.messages(maxSize: 256 << 20) {
                        let json: JSONValue
                        switch frame {
                        case .text(let text): json = try JSONParser(maximumDepth: 512).parse(text)
                        case .binary(let buffer): json = try JSONParser(maximumDepth: 512).parse(buffer.readableBytesView)
                        }
                        await self.handle(try ServerMessage(json: json))
                    }
                } catch {
                    await self.logger.debug("session ended", metadata: ["error": "\(error)"])
                }
            }
            group.addTask {
                // Liveness: a connection that stays silent for `pongTimeout` after a ping is
                // dead (a server that froze, a network that dropped it without a reset).
                while !Task.isCancelled {
                    try? await Task.sleep(for: ping)
                    if Task.isCancelled { return }
                    let sent = ContinuousClock.now
                    sink.yield(.ping(nonce: .int(Int64(Date().timeIntervalSince1970 * 1000))))
                    try? await Task.sleep(for: pongTimeout)
                    if Task.isCancelled { return }
                    if await self.lastHeard < sent {
                        await self.logger.notice("no answer to a ping: dropping the connection")
                        return
                    }
                }
            }
            group.addTask {
                await self.uploadLoop()
            }
            // The reader ends first (the server closed, the connection broke) or the liveness
            // check gives up on a silent connection.
            await group.next()
            group.cancelAll()
        }
    }

    private func endSession() {
        outgoing?.finish()
        outgoing = nil
        subscriptionsWaitFor = nil
        setStatus(.offline)
        answerWaiter?.continuation.resume(returning: .disconnected)
        answerWaiter = nil
        wakeUploader()
    }

    // MARK: Messages from the server

    func handle(_ message: ServerMessage) {
        lastHeard = .now
        defer { stateChanged() }
        switch message {
        case .ready:
            sessionAccepted = true
            setStatus(.online)
            // The oldest unacknowledged upload may have been applied already, its ack lost with
            // the last connection or process. Its effect would come in the partition's changes
            // while it is still replayed from the queue, shown twice until the (replayed) ack:
            // so it goes first, and the partitions are subscribed once it is answered.
            subscriptionsWaitFor = storing("reading the upload queue", or: nil, { try store.nextToSend() })?.requestId
            if subscriptionsWaitFor == nil { subscribeOpenPartitions() }
            wakeUploader()
        case .changes(let batch):
            guard storing("reading whether \(batch.partition) is open", or: false, { try store.isOpen(batch.partition) }) else { return }
            received.append(BatchRecord(partition: batch.partition, reset: batch.reset, upToDate: batch.upToDate, keys: batch.objects.map(\.key)))
            if received.count > 10_000 { received.removeFirst(5_000) }
            do {
                try store.apply(batch)
            } catch {
                logger.error("cannot store a change batch", metadata: ["error": "\(error)"])
                emit(.storeFailed("storing changes of \(batch.partition)", "\(error)"))
                return
            }
            if batch.upToDate {
                upToDate.insert(batch.partition)
                progress[batch.partition] = nil
            } else if let total = batch.total {
                progress[batch.partition] = SyncProgress(received: batch.objects.count, total: total)
            } else {
                progress[batch.partition]?.received += batch.objects.count
            }
            publish(batch.partition)
        case .ack(let requestId, let partition, _, let version):
            storing("recording the acknowledgement of \(requestId)") { try store.acknowledge(requestId, version: version) }
            answer(requestId, .acknowledged)
            publish(partition)
        case .rejected(let requestId, let partition, let error, let objects):
            storing("reverting the refused upload \(requestId)") {
                if try store.isOpen(partition) { try store.replace(objects, in: partition) }
                try store.remove(requestId)
            }
            answer(requestId, .rejected)
            publish(partition)
            refusals.append(RefusedWrite(requestId: requestId, partition: partition, error: error))
            if refusals.count > 100 { refusals.removeFirst(refusals.count - 100) }
            emit(.rejected(requestId: requestId, partition: partition, error: error))
        case .error(let error, let partition):
            if let waiter = answerWaiter, let partition,
                (try? store.nextToSend())?.requestId == waiter.requestId, (try? store.nextToSend())?.partition == partition
            {
                answer(waiter.requestId, .failed)
            }
            emit(.error(error, partition: partition))
        case .unsubscribed(let partition, let code):
            storing("closing \(partition)") { _ = try store.setOpen(partition, false) }
            subscribed.remove(partition)
            upToDate.remove(partition)
            progress[partition] = nil
            publish(partition)
            emit(.unsubscribed(partition: partition, code: code))
        case .pong:
            break
        }
    }

    private func subscribeOpenPartitions() {
        subscriptionsWaitFor = nil
        for (partition, cursor) in storing("reading the open partitions", or: [], { try store.openPartitions() })
        where !subscribed.contains(partition) {
            subscribed.insert(partition)
            outgoing?.yield(.subscribe(partition: partition, cursor: cursor, progress: true))
        }
    }

    private func answer(_ requestId: String, _ outcome: UploadAnswer) {
        if requestId == subscriptionsWaitFor, outcome != .disconnected { subscribeOpenPartitions() }
        guard let waiter = answerWaiter, waiter.requestId == requestId else { return }
        answerWaiter = nil
        waiter.continuation.resume(returning: outcome)
    }

    // MARK: The upload queue

    func wakeUploader() {
        uploadWakeup?.resume()
        uploadWakeup = nil
    }

    /// Sends the queue in order, one upload at a time, each until it is answered.
    private func uploadLoop() async {
        while !Task.isCancelled {
            // Blobs first: a write queued after a blob was attached may reference it.
            if status == .online, let blob = storing("reading the blobs to upload", or: nil, { try store.nextBlobToUpload() }) {
                switch await upload(blob) {
                case .stored:
                    storing("recording the upload of blob \(blob.digest)") {
                        try store.blobUploaded(blob.digest)
                        try store.evictBlobs(toFit: configuration.blobCacheBytes)
                    }
                    stateChanged()
                case .refused(let error):
                    storing("recording the refusal of blob \(blob.digest)") { try store.blobUploaded(blob.digest) }
                    emit(.blobRefused(blob.digest, error))
                    stateChanged()
                case .failed:
                    // The queue is stuck behind this blob for now: downloads wait no longer.
                    if subscriptionsWaitFor != nil { subscribeOpenPartitions() }
                    try? await Task.sleep(for: configuration.reconnectDelay * 4)
                }
                continue
            }
            guard status == .online, let next = storing("reading the upload queue", or: nil, { try store.nextToSend() }) else {
                await withTaskCancellationHandler {
                    await withCheckedContinuation { continuation in
                        if Task.isCancelled {
                            continuation.resume()
                            return
                        }
                        if uploadWakeup != nil { uploadWakeup?.resume() }
                        uploadWakeup = continuation
                    }
                } onCancel: {
                    Task { await self.wakeUploader() }
                }
                continue
            }
            let outcome = await send(next)
            switch outcome {
            case .acknowledged, .rejected:
                continue
            case .failed:
                try? await Task.sleep(for: configuration.reconnectDelay * 4)
            case .disconnected:
                return
            }
        }
    }

    private func send(_ upload: LocalStore.PendingUpload) async -> UploadAnswer {
        let timeout = configuration.uploadTimeout
        let timer = Task {
            try? await Task.sleep(for: timeout)
            if !Task.isCancelled { self.answer(upload.requestId, .disconnected) }
        }
        defer { timer.cancel() }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                if Task.isCancelled {
                    continuation.resume(returning: .disconnected)
                    return
                }
                answerWaiter = (upload.requestId, continuation)
                outgoing?.yield(.upload(requestId: upload.requestId, partition: upload.partition, operations: upload.operations))
            }
        } onCancel: {
            Task { await self.answer(upload.requestId, .disconnected) }
        }
    }
}
