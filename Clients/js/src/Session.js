import { ConnectionMachine } from './logic/ConnectionMachine.js';
import { Outbox } from './logic/Outbox.js';
import { TRANSIENT_CODES } from './protocol/SyncError.js';

/** @typedef {import('./logic/ConnectionMachine.js').ConnectionAction} ConnectionAction */
/** @typedef {import('./logic/Outbox.js').OutboxAction} OutboxAction */
/** @typedef {import('./store/Store.js').Store} Store */
/** @typedef {import('./Clock.js').Clock} Clock */

/**
 * A WebSocket as the session uses it (the browser's, or a test's).
 * @typedef {{send(data: string): void, close(code?: number, reason?: string): void,
 *   onopen: ((event: any) => void) | null, onmessage: ((event: {data: any}) => void) | null,
 *   onclose: ((event: {code: number}) => void) | null, onerror: ((event: any) => void) | null}} SocketLike
 */

/**
 * What the session needs from its client.
 * @typedef {object} SessionHost
 * @property {Store} store
 * @property {Clock} clock
 * @property {(url: string) => SocketLike} openSocket
 * @property {string} webSocketURL
 * @property {(refresh: boolean, usedToken: string | null) => Promise<{token: string, expiresAt: number} | {signedOut: true} | {unavailable: true}>} freshToken
 * @property {(digest: string, token: string) => Promise<{outcome: 'stored' | 'refused' | 'failed', error?: import('./protocol/SyncError.js').SyncError}>} uploadBlob
 * @property {(digests: string[]) => Promise<boolean>} repinBlobs pins the blobs again for upload; `false` when one's bytes are not kept
 * @property {(partitions: string[]) => void} changed the view of these partitions changed
 * @property {(state: {status: string, upToDate: string[], progress: Record<string, {received: number, total: number}>}) => void} stateChanged
 * @property {(event: any) => void} emit
 * @property {(what: string, error: unknown) => void} storeFailed
 * @property {() => string} newRequestId
 */

/**
 * The one loop of the tab that owns the connection: every input (socket events, timers,
 * writes queued, tokens and blob uploads finished) is an event in one queue, handled one at a
 * time to its end (store changes included) before the next. The decisions are the
 * {@link ConnectionMachine}'s and the {@link Outbox}'s; this carries out their actions.
 */
export class Session {
    /**
     * @param {SessionHost} host
     * @param {{timings?: Partial<import('./logic/ConnectionMachine.js').ConnectionTimings>, uploadTimeout?: number, retryDelay?: number, random?: () => number}} settings
     */
    constructor(host, settings) {
        this.host = host;
        this.connection = new ConnectionMachine(settings.timings ?? {}, settings.random ?? Math.random);
        this.outbox = new Outbox({ uploadTimeout: settings.uploadTimeout, retryDelay: settings.retryDelay });
        /** @type {{generation: number, socket: SocketLike} | null} */
        this.socket = null;
        /** @type {any[]} */
        this.queue = [];
        this.running = false;
        /** @type {unknown} */
        this.timer = null;
        /** @type {Set<string>} */
        this.subscribed = new Set();
        /** @type {Set<string>} */
        this.upToDate = new Set();
        /** @type {Map<string, {received: number, total: number}>} */
        this.progress = new Map();
        this.stopped = false;
        /** Messages sent over the current sockets, by type: for tests ("no duplicate upload"). */
        this.sent = { upload: 0, subscribe: 0, auth: 0, sockets: 0 };
        /** @type {string | null} */
        this.usedToken = null;
    }

    /**
     * Queues an event for the loop.
     * @param {any} event
     */
    post(event) {
        if (this.stopped) return;
        this.queue.push(event);
        if (!this.running) void this.#pump();
    }

    async #pump() {
        this.running = true;
        try {
            while (this.queue.length > 0) {
                const event = this.queue.shift();
                try {
                    await this.#handle(event);
                } catch (error) {
                    this.host.storeFailed(`handling ${event.type}`, error);
                }
            }
        } finally {
            this.running = false;
        }
        this.#arm();
    }

    #arm() {
        if (this.timer !== null) this.host.clock.clearTimeout(this.timer);
        this.timer = null;
        if (this.stopped) return;
        const deadlines = [this.connection.nextDeadline(), this.outbox.nextDeadline()].filter((d) => d !== null);
        if (deadlines.length === 0) return;
        const at = Math.min(.../** @type {number[]} */ (deadlines));
        this.timer = this.host.clock.setTimeout(() => {
            this.timer = null;
            this.post({ type: 'tick' });
        }, Math.max(0, at - this.host.clock.now()));
    }

    /** Stops for good: closes the socket first (so a next leader never overlaps it). */
    stop() {
        this.#runConnection(this.connection.stop());
        this.stopped = true;
        this.queue = [];
        if (this.timer !== null) this.host.clock.clearTimeout(this.timer);
    }

    /** @param {any} event */
    async #handle(event) {
        const now = this.host.clock.now();
        switch (event.type) {
            case 'start':
                await this.#reloadQueue();
                return this.#runConnection(this.connection.start(now));
            case 'signedIn':
                return this.#runConnection(this.connection.signedIn(now));
            case 'signedOut':
                this.#runConnection(this.connection.stop());
                return this.#runConnection(this.connection.start(now));
            case 'networkUp':
                return this.#runConnection(this.connection.retryNow(now));
            case 'restart':
                return this.#runConnection(this.connection.drop(now, event.reason));
            case 'tick':
                this.#runConnection(this.connection.tick(now));
                return this.#runOutbox(this.outbox.tick(now));
            case 'token':
                if ('token' in event.result) {
                    this.usedToken = event.result.token;
                    return this.#runConnection(this.connection.tokenReady(now, event.result.token, event.result.expiresAt));
                }
                return this.#runConnection(this.connection.tokenMissing(now, 'signedOut' in event.result));
            case 'socketOpen':
                return this.#runConnection(this.connection.socketOpened(now, event.generation));
            case 'socketMessage': {
                let message;
                try {
                    message = JSON.parse(event.data);
                } catch {
                    return;
                }
                return this.#runConnection(this.connection.messageReceived(now, event.generation, message));
            }
            case 'socketClose':
                if (this.socket?.generation === event.generation) this.socket = null;
                return this.#runConnection(this.connection.socketClosed(now, event.generation, event.code));
            case 'outboxChanged':
                return this.#reloadQueue();
            case 'partitionsChanged':
                return this.#subscribeNew();
            case 'blobDone':
                if (event.outcome === 'stored' || event.outcome === 'refused') {
                    await this.host.store.blobUploaded(event.digest);
                    // The outbox is shorter: whoever shows or waits for it looks again.
                    this.host.changed([]);
                    if (event.outcome === 'refused') {
                        this.host.emit({ type: 'blobRefused', digest: event.digest, code: event.error?.code, message: event.error?.message });
                    }
                }
                await this.#reloadQueue();
                return this.#runOutbox(this.outbox.blobDone(event.digest, event.outcome, now));
            default:
                return undefined;
        }
    }

    /** Gives the outbox the queue as the store holds it now. */
    async #reloadQueue() {
        const { entries, blobs } = await this.host.store.queue();
        await this.#runOutbox(this.outbox.setQueue(entries, blobs, this.host.clock.now()));
    }

    /** @param {object} message */
    #send(message) {
        if (!this.socket) return;
        const type = /** @type {any} */ (message).type;
        if (type in this.sent) this.sent[/** @type {'upload'} */ (type)] += 1;
        try {
            this.socket.socket.send(JSON.stringify(message));
        } catch {
            // The close event follows.
        }
    }

    /** @param {ConnectionAction[]} actions */
    async #runConnection(actions) {
        for (const action of actions) {
            switch (action.type) {
                case 'fetchToken': {
                    const used = this.usedToken;
                    this.host.freshToken(action.refresh, action.refresh ? used : null)
                        .then((result) => this.post({ type: 'token', result }))
                        .catch(() => this.post({ type: 'token', result: { unavailable: true } }));
                    break;
                }
                case 'openSocket': {
                    const generation = action.generation;
                    let socket;
                    try {
                        socket = this.host.openSocket(this.host.webSocketURL);
                    } catch {
                        this.post({ type: 'socketClose', generation, code: 1006 });
                        break;
                    }
                    this.sent.sockets += 1;
                    this.socket = { generation, socket };
                    socket.onopen = () => this.post({ type: 'socketOpen', generation });
                    socket.onmessage = (e) => this.post({ type: 'socketMessage', generation, data: typeof e.data === 'string' ? e.data : new TextDecoder().decode(e.data) });
                    socket.onclose = (e) => this.post({ type: 'socketClose', generation, code: e.code });
                    socket.onerror = () => undefined;
                    break;
                }
                case 'closeSocket':
                    if (this.socket && this.socket.generation === action.generation) {
                        const { socket } = this.socket;
                        this.socket = null;
                        socket.onclose = null;
                        socket.onmessage = null;
                        try { socket.close(1000, action.reason.slice(0, 100)); } catch { /* closing already */ }
                    }
                    break;
                case 'send':
                    this.#send(action.message);
                    break;
                case 'status':
                    if (action.status !== 'online') {
                        const partitions = [...this.upToDate, ...this.progress.keys()];
                        this.upToDate.clear();
                        this.progress.clear();
                        this.subscribed.clear();
                        this.host.changed(partitions);
                    }
                    this.#publishState();
                    this.host.emit({ type: 'status', status: action.status });
                    break;
                case 'sessionStarted':
                    this.subscribed.clear();
                    await this.#runOutbox(this.outbox.sessionStarted(this.host.clock.now()));
                    break;
                case 'sessionEnded':
                    await this.#runOutbox(this.outbox.sessionEnded());
                    break;
                case 'deliver':
                    await this.#deliver(action.message);
                    break;
            }
        }
    }

    /** @param {OutboxAction[]} actions */
    async #runOutbox(actions) {
        for (const action of actions) {
            switch (action.type) {
                case 'upload':
                    this.#send({ type: 'upload', requestId: action.entry.requestId, partition: action.entry.partition, operations: action.entry.operations });
                    break;
                case 'uploadBlob': {
                    const digest = action.digest;
                    const token = this.usedToken ?? '';
                    this.host.uploadBlob(digest, token)
                        .then(({ outcome, error }) => this.post({ type: 'blobDone', digest, outcome, error }))
                        .catch(() => this.post({ type: 'blobDone', digest, outcome: 'failed' }));
                    break;
                }
                case 'subscribeAll':
                    await this.#subscribeNew();
                    break;
                case 'dropConnection':
                    await this.#runConnection(this.connection.drop(this.host.clock.now(), action.reason));
                    break;
            }
        }
    }

    /** Subscribes the open partitions not yet subscribed, unsubscribes the closed ones. */
    async #subscribeNew() {
        if (this.connection.phase !== 'online' || this.outbox.holdFor !== null) return;
        const records = await this.host.store.partitions();
        for (const record of records) {
            if (record.open && !this.subscribed.has(record.partition)) {
                this.subscribed.add(record.partition);
                this.#send({ type: 'subscribe', partition: record.partition, cursor: record.cursor, progress: true });
            } else if (!record.open && this.subscribed.has(record.partition)) {
                this.subscribed.delete(record.partition);
                this.upToDate.delete(record.partition);
                this.progress.delete(record.partition);
                this.#send({ type: 'unsubscribe', partition: record.partition });
            }
        }
    }

    #publishState() {
        this.host.stateChanged({
            status: this.connection.status, upToDate: [...this.upToDate], progress: Object.fromEntries(this.progress),
        });
    }

    /**
     * A message of the server, the session being online.
     * @param {any} message
     */
    async #deliver(message) {
        const now = this.host.clock.now();
        const store = this.host.store;
        switch (message.type) {
            case 'changes': {
                if (!this.subscribed.has(message.partition)) return; // unsubscribed meanwhile
                try {
                    await store.applyPage(message);
                } catch (error) {
                    this.host.storeFailed(`storing changes of ${message.partition}`, error);
                    return;
                }
                if (message.upToDate) {
                    this.upToDate.add(message.partition);
                    this.progress.delete(message.partition);
                } else if (typeof message.total === 'number') {
                    this.progress.set(message.partition, { received: message.objects.length, total: message.total });
                } else {
                    const progress = this.progress.get(message.partition);
                    if (progress) progress.received += message.objects.length;
                }
                this.#publishState();
                this.host.changed([message.partition]);
                if (message.upToDate) await this.#reloadQueue();
                return;
            }
            case 'ack': {
                const partition = await store.acknowledge(message.requestId, message.version);
                await this.#reloadQueue();
                await this.#runOutbox(this.outbox.answered(message.requestId, 'acknowledged', now));
                this.host.changed([partition ?? message.partition]);
                return;
            }
            case 'rejected': {
                const entry = this.outbox.entries.find((e) => e.requestId === message.requestId);
                const digests = message.code === 'blob_missing' && Array.isArray(message.details?.digests) ? message.details.digests : null;
                // The server does not take a digest this user has not shown it holds: if the
                // bytes are here, upload them and send the write again (the refusal is final
                // for its request id, so under a new one: nothing of it was applied).
                if (entry && digests && digests.length > 0 && entry.attempt < 3 && (await this.host.repinBlobs(digests))) {
                    await store.resendAs(message.requestId, this.host.newRequestId());
                    await this.#reloadQueue();
                    await this.#runOutbox(this.outbox.answered(message.requestId, 'resend', now));
                    return;
                }
                await store.reject(message.requestId, message.partition, message.objects ?? []);
                await this.#reloadQueue();
                await this.#runOutbox(this.outbox.answered(message.requestId, 'rejected', now));
                this.host.changed([message.partition]);
                this.host.emit({ type: 'rejected', requestId: message.requestId, partition: message.partition, code: message.code, message: message.message });
                return;
            }
            case 'error': {
                const inFlight = this.outbox.inFlight;
                if (inFlight?.kind === 'upload' && TRANSIENT_CODES.has(message.code)) {
                    const entry = this.outbox.entries.find((e) => e.requestId === inFlight.requestId);
                    if (!message.partition || entry?.partition === message.partition) {
                        await this.#runOutbox(this.outbox.answered(inFlight.requestId, 'transient', now));
                    }
                }
                if (message.partition && !TRANSIENT_CODES.has(message.code)) this.subscribed.delete(message.partition);
                this.host.emit({ type: 'error', code: message.code, message: message.message, partition: message.partition ?? null });
                return;
            }
            case 'unsubscribed':
                await store.setOpen(message.partition, false);
                this.subscribed.delete(message.partition);
                this.upToDate.delete(message.partition);
                this.progress.delete(message.partition);
                this.#publishState();
                this.host.changed([message.partition]);
                this.host.emit({ type: 'unsubscribed', partition: message.partition, code: message.code });
                return;
            default:
                return;
        }
    }
}
