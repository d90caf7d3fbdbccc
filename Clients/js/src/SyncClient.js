import { systemClock } from './Clock.js';
import { Session } from './Session.js';
import { HttpApi } from './net/HttpApi.js';
import { IndexedDBStore } from './store/IndexedDBStore.js';
import { BrowserTabs, SoloTabs } from './tabs/Tabs.js';
import { applyOperations, checkOperation } from './protocol/OperationApplier.js';
import { checkPartition, objectKey } from './protocol/Partition.js';
import { SyncError } from './protocol/SyncError.js';
import { checkBlobReference, digestOf } from './protocol/BlobReference.js';
import { computeView, replay } from './logic/View.js';
import { QueryResult } from './logic/LiveQuery.js';

/** @typedef {import('./store/Store.js').Store} Store */
/** @typedef {import('./store/Store.js').Draft} Draft */
/** @typedef {import('./tabs/Tabs.js').Tabs} Tabs */
/** @typedef {import('./Clock.js').Clock} Clock */
/** @typedef {import('./Session.js').SocketLike} SocketLike */
/** @typedef {import('./logic/View.js').SyncObject} SyncObject */
/** @typedef {import('./protocol/OperationApplier.js').Operation} Operation */
/** @typedef {import('./protocol/BlobReference.js').BlobReference} BlobReference */
/** @typedef {import('./logic/LiveQuery.js').QuerySpec} QuerySpec */
/** @typedef {import('./logic/ConnectionMachine.js').ConnectionStatus} ConnectionStatus */

/**
 * What an observer of a partition gets after each change.
 * @typedef {{partition: string, objects: SyncObject[], upToDate: boolean, pendingWrites: number,
 *   progress: {received: number, total: number, fraction: number} | null}} PartitionSnapshot
 */

/**
 * Something the app should know about.
 * @typedef {{type: 'status', status: ConnectionStatus}
 *   | {type: 'rejected', requestId: string, partition: string, code: string, message: string}
 *   | {type: 'unsubscribed', partition: string, code: string}
 *   | {type: 'error', code: string, message: string, partition: string | null}
 *   | {type: 'signedOut'}
 *   | {type: 'blobRefused', digest: string, code: string, message: string}
 *   | {type: 'storeFailed', what: string, message: string}
 *   | {type: 'storeReset', reason: 'wiped'}
 *   | {type: 'leader', leader: boolean}} ClientEvent
 */

/**
 * Options of {@link SyncClient.open}. Every one but `serverURL` has a default.
 * @typedef {object} SyncClientOptions
 * @property {string} serverURL the server's base URL (`http://127.0.0.1:8080`; the page's origin when it serves the app)
 * @property {string} [storeName] the IndexedDB database, and the name tabs share a connection under. Default `psync`
 * @property {Store} [store] default an {@link IndexedDBStore} named `storeName`
 * @property {Tabs} [tabs] default {@link BrowserTabs} where Web Locks exist, else {@link SoloTabs}
 * @property {Clock} [clock] default the system clock
 * @property {() => number} [random] in [0, 1), for the reconnection jitter. Default `Math.random`
 * @property {(url: string) => SocketLike} [webSocket] default `new WebSocket(url)`
 * @property {typeof fetch} [fetch] default the global `fetch`
 * @property {number} [reconnectDelay] ms, first wait before reconnecting, doubled per failure with jitter. Default 250
 * @property {number} [maximumReconnectDelay] ms. Default 30000
 * @property {number} [pingInterval] ms. Default 20000 (the server closes sessions silent for 60 s)
 * @property {number} [pongTimeout] ms of silence after a ping that count as a dead connection. Default 10000
 * @property {number} [uploadTimeout] ms an upload may go unanswered before the connection is replaced. Default 30000
 * @property {number} [retryDelay] ms before an upload answered `unavailable` goes again. Default 1000
 * @property {number} [tokenRefreshMargin] ms before the access token expires that it is refreshed. Default 60000
 * @property {number} [maximumUploadBytes] the server's message limit. Default 16 MiB
 * @property {number} [maximumBlobBytes] the server's blob limit. Default 32 MiB
 * @property {number} [blobCacheBytes] downloaded blobs kept, least recently used out first. Default 100 MiB
 * @property {boolean} [autoStart] start connecting (or waiting to lead) at once. Default true
 */

/** @param {string} partition */
function checkedPartition(partition) {
    return checkPartition(partition);
}

/**
 * The browser client of a PartitionSync server: partitions as live collections over one
 * WebSocket per browser (shared by its tabs), an offline store in IndexedDB and a queue of writes.
 *
 * ```js
 * const client = await SyncClient.open({ serverURL: location.origin });
 * if (!client.userId) await client.login('ann@example.com', 'correct horse');
 * const room = await client.openPartition(`user=${client.userId}`);
 * room.subscribe((snapshot) => render(snapshot.objects));
 * await room.write([{ op: 'set', collection: 'User', id: client.userId, path: 'presence', value: 'On-Line' }]);
 * ```
 */
export class SyncClient {
    /** @param {SyncClientOptions} options */
    static async open(options) {
        const client = new SyncClient(options);
        await client.#init();
        return client;
    }

    /**
     * @param {SyncClientOptions} options use {@link SyncClient.open}
     */
    constructor(options) {
        this.options = options;
        this.storeName = options.storeName ?? 'psync';
        /** @type {Store} */
        this.store = options.store ?? new IndexedDBStore(this.storeName);
        /** @type {Tabs} */
        this.tabs = options.tabs ?? (BrowserTabs.available ? new BrowserTabs(this.storeName) : new SoloTabs());
        /** @type {Clock} */
        this.clock = options.clock ?? systemClock;
        this.http = new HttpApi(options.serverURL, options.fetch);
        this.leader = false;
        /** @type {Session | null} */
        this.session = null;
        /** @type {ConnectionStatus} */
        this.status = 'offline';
        /** @type {Set<string>} */
        this.upToDate = new Set();
        /** @type {Record<string, {received: number, total: number}>} */
        this.progress = {};
        /** @type {Map<string, Set<(snapshot: PartitionSnapshot) => void>>} */
        this.observers = new Map();
        /** @type {Set<(event: ClientEvent) => void>} */
        this.listeners = new Set();
        /** @type {ClientEvent[]} events before the first listener, kept for it */
        this.backlog = [];
        /** @type {Set<() => void>} */
        this.waiters = new Set();
        /** @type {Map<string, unknown>} */
        this.expiryTimers = new Map();
        /** @type {unknown} */
        this.localExpiryTimer = null;
        /** @type {Set<string>} partitions this tab opened */
        this.opened = new Set();
        /** @type {{userId: string, email?: string, accessToken: string, refreshToken: string, expiresAt: number} | null} */
        this.credentials = null;
        this.closed = false;
    }

    async #init() {
        const { fresh } = await this.store.open();
        this.store.onWiped(() => void this.#recoverFromWipe());
        this.#checkWipedWhileAway(fresh);
        this.credentials = (await this.store.getMeta('credentials')) ?? null;
        this.tabs.onMessage((message) => this.#tabMessage(message));
        if (typeof addEventListener === 'function') {
            addEventListener('online', () => this.session?.post({ type: 'networkUp' }));
        }
        if (this.options.autoStart !== false) this.start();
    }

    /**
     * A marker beside the store tells a store created anew from one wiped since the last visit.
     * @param {boolean} fresh
     */
    #checkWipedWhileAway(fresh) {
        if (typeof localStorage === 'undefined') return;
        const marker = `psync:${this.storeName}:created`;
        try {
            if (fresh && localStorage.getItem(marker)) this.#emit({ type: 'storeReset', reason: 'wiped' });
            localStorage.setItem(marker, '1');
        } catch { /* storage disabled */ }
    }

    // MARK: Lifecycle

    /** Starts connecting: this tab leads when no other tab of the store does, else follows the one that does. */
    start() {
        this.tabs.campaign(() => this.#becomeLeader());
        if (!this.leader) this.tabs.broadcast({ type: 'hello' });
    }

    #becomeLeader() {
        if (this.closed) return;
        this.leader = true;
        const session = new Session(this.#sessionHost(), {
            timings: stripUndefined({
                reconnectDelay: this.options.reconnectDelay, maximumReconnectDelay: this.options.maximumReconnectDelay,
                pingInterval: this.options.pingInterval, pongTimeout: this.options.pongTimeout,
                tokenRefreshMargin: this.options.tokenRefreshMargin,
            }),
            uploadTimeout: this.options.uploadTimeout, retryDelay: this.options.retryDelay, random: this.options.random,
        });
        this.session = session;
        this.#emit({ type: 'leader', leader: true });
        session.post({ type: 'start' });
        void this.#scheduleLocalExpiry();
    }

    /** Stops: closes the connection (handing it to another tab) and the store. */
    close() {
        if (this.closed) return;
        this.closed = true;
        this.session?.stop();
        this.session = null;
        this.leader = false;
        this.tabs.close();
        for (const timer of this.expiryTimers.values()) this.clock.clearTimeout(timer);
        if (this.localExpiryTimer !== null) this.clock.clearTimeout(this.localExpiryTimer);
        this.store.close();
    }

    /** @returns {import('./Session.js').SessionHost} */
    #sessionHost() {
        return {
            store: this.store,
            clock: this.clock,
            webSocketURL: this.http.webSocketURL,
            openSocket: this.options.webSocket ?? ((url) => /** @type {SocketLike} */ (/** @type {unknown} */ (new WebSocket(url)))),
            freshToken: (refresh, used) => this.#freshToken(refresh, used),
            uploadBlob: (digest) => this.#uploadBlob(digest),
            repinBlobs: (digests) => this.#repinBlobs(digests),
            changed: (partitions) => this.#changed(partitions, true),
            stateChanged: (state) => {
                this.#applyState(state);
                this.tabs.broadcast({ type: 'state', state });
            },
            emit: (event) => {
                this.#emit(event);
                this.tabs.broadcast({ type: 'event', event });
            },
            storeFailed: (what, error) => this.#storeFailed(what, error),
            newRequestId: () => crypto.randomUUID(),
        };
    }

    /** @param {any} message */
    #tabMessage(message) {
        switch (message?.type) {
            case 'hello':
                if (this.session) this.tabs.broadcast({ type: 'state', state: this.#state() });
                break;
            case 'state':
                if (!this.leader) this.#applyState(message.state);
                break;
            case 'changed':
                this.#changed(message.partitions, false);
                break;
            case 'event':
                this.#emit(message.event);
                break;
            case 'outbox':
                this.session?.post({ type: 'outboxChanged' });
                break;
            case 'partitions':
                this.session?.post({ type: 'partitionsChanged' });
                break;
            case 'signedIn':
                void this.store.getMeta('credentials').then((c) => {
                    this.credentials = c ?? null;
                    this.session?.post({ type: 'signedIn' });
                });
                break;
            case 'signedOut':
                this.credentials = null;
                this.session?.post({ type: 'signedOut' });
                break;
        }
    }

    #state() {
        return { status: this.status, upToDate: [...this.upToDate], progress: { ...this.progress } };
    }

    /** @param {{status: string, upToDate: string[], progress: Record<string, {received: number, total: number}>}} state */
    #applyState(state) {
        const before = new Set([...this.upToDate, ...Object.keys(this.progress)]);
        const statusChanged = this.status !== state.status;
        this.status = /** @type {ConnectionStatus} */ (state.status);
        this.upToDate = new Set(state.upToDate);
        this.progress = { ...state.progress };
        if (statusChanged && !this.leader) this.#emit({ type: 'status', status: this.status });
        const touched = new Set([...before, ...this.upToDate, ...Object.keys(this.progress)]);
        this.#changed([...touched], false);
        this.#wake();
    }

    // MARK: Credentials

    /** The signed-in user's id, or `null`. */
    get userId() {
        return this.credentials?.userId ?? null;
    }

    /**
     * @param {string} email
     * @param {string} password
     * @returns {Promise<string>} the user id
     */
    register(email, password) {
        return this.#signIn('register', email, password);
    }

    /**
     * @param {string} email
     * @param {string} password
     * @returns {Promise<string>} the user id
     */
    login(email, password) {
        return this.#signIn('login', email, password);
    }

    /**
     * @param {'register' | 'login'} kind
     * @param {string} email
     * @param {string} password
     */
    async #signIn(kind, email, password) {
        const tokens = await this.http.signIn(kind, email, password);
        await this.#remember(tokens, email);
        this.tabs.broadcast({ type: 'signedIn' });
        this.session?.post({ type: 'signedIn' });
        return tokens.userId;
    }

    /**
     * @param {import('./net/HttpApi.js').Tokens} tokens
     * @param {string} [email]
     */
    async #remember(tokens, email) {
        this.credentials = {
            userId: tokens.userId, email: email ?? this.credentials?.email, accessToken: tokens.accessToken,
            refreshToken: tokens.refreshToken, expiresAt: this.clock.now() + tokens.expiresIn * 1000,
        };
        await this.store.setMeta({ credentials: this.credentials });
    }

    /**
     * Whether the account's email is verified: until it is, no rule or invitation that names
     * the email reaches this user (docs/SECURITY.md, "Identity").
     * @returns {Promise<boolean>}
     */
    async emailVerified() {
        return (await this.http.account(await this.#signedInToken())).emailVerified === true;
    }

    /**
     * Mails a new verification code, replacing the last; `false` when the email is verified.
     * @returns {Promise<boolean>}
     */
    async sendVerificationCode() {
        return this.http.sendVerificationCode(await this.#signedInToken());
    }

    /**
     * Verifies the account's email with the code mailed to it (`K7QM-4XPA`, any case).
     * @param {string} code
     */
    async verifyEmail(code) {
        await this.http.verifyEmail(await this.#signedInToken(), code);
    }

    /** An access token, or the error that there is none now. */
    async #signedInToken() {
        const token = await this.#freshToken(false, null);
        if (!('token' in token)) throw new SyncError('signedOut' in token ? 'unauthenticated' : 'unavailable', 'not signed in now');
        return token.token;
    }

    /** Signs out: revokes the login on the server and forgets the credentials (the data stays). */
    async logout() {
        const refresh = this.credentials?.refreshToken;
        if (refresh) await this.http.logout(refresh).catch(() => undefined);
        this.credentials = null;
        await this.store.setMeta({ credentials: undefined });
        this.tabs.broadcast({ type: 'signedOut' });
        this.session?.post({ type: 'signedOut' });
    }

    /**
     * An access token valid for a while yet, refreshed when needed. One tab refreshes at a
     * time (a Web Lock), reading the stored tokens inside the lock: a tab that waited finds the
     * token another refreshed. A refresh that fails on the network keeps the credentials (the
     * server's refresh grace answers the same refresh token again); only the server's
     * `unauthenticated` signs the user out.
     * @param {boolean} refresh refresh even a token that looks valid (the server closed with 4001)
     * @param {string | null} usedToken the token the server refused
     * @returns {Promise<{token: string, expiresAt: number} | {signedOut: true} | {unavailable: true}>}
     */
    #freshToken(refresh, usedToken) {
        return this.tabs.exclusive('auth', async () => {
            const credentials = (await this.store.getMeta('credentials').catch(() => null)) ?? this.credentials;
            if (!credentials) return { signedOut: /** @type {const} */ (true) };
            this.credentials = credentials;
            const margin = this.options.tokenRefreshMargin ?? 60_000;
            const valid = credentials.expiresAt - this.clock.now() > margin;
            if (valid && (!refresh || credentials.accessToken !== usedToken)) {
                return { token: credentials.accessToken, expiresAt: credentials.expiresAt };
            }
            try {
                const tokens = await this.http.refresh(credentials.refreshToken);
                await this.#remember(tokens);
                const fresh = /** @type {{accessToken: string, expiresAt: number}} */ (this.credentials);
                return { token: fresh.accessToken, expiresAt: fresh.expiresAt };
            } catch (error) {
                if (error instanceof SyncError && error.code === 'unauthenticated') {
                    this.credentials = null;
                    await this.store.setMeta({ credentials: undefined }).catch(() => undefined);
                    this.#emit({ type: 'signedOut' });
                    this.tabs.broadcast({ type: 'event', event: { type: 'signedOut' } });
                    return { signedOut: /** @type {const} */ (true) };
                }
                return { unavailable: /** @type {const} */ (true) };
            }
        });
    }

    // MARK: Partitions

    /**
     * Opens a partition: kept in the store and followed live while connected (by whichever tab
     * leads). Returns its handle.
     * @param {string} partition
     * @returns {Promise<PartitionHandle>}
     */
    async openPartition(partition) {
        checkedPartition(partition);
        await this.store.setOpen(partition, true);
        this.opened.add(partition);
        this.#partitionsChanged();
        return new PartitionHandle(this, partition);
    }

    /**
     * Stops following a partition (its objects stay until it is opened again).
     * @param {string} partition
     */
    async closePartition(partition) {
        await this.store.setOpen(partition, false);
        this.opened.delete(partition);
        this.#partitionsChanged();
    }

    #partitionsChanged() {
        this.session?.post({ type: 'partitionsChanged' });
        this.tabs.broadcast({ type: 'partitions' });
    }

    /**
     * The objects as the app should show them: the server's, the pending writes on top, then this
     * browser's drafts; those whose `@expiresAt` has passed left out.
     * @param {string} partition
     * @returns {Promise<SyncObject[]>}
     */
    async objects(partition) {
        return (await this.snapshot(partition)).objects;
    }

    /**
     * @param {string} partition
     * @returns {Promise<PartitionSnapshot>}
     */
    async snapshot(partition) {
        const { server, pending, drafts } = await this.store.readPartition(partition);
        const now = this.clock.now();
        const { objects, nextExpiry } = computeView(partition, server, [...pending, ...drafts], now);
        this.#scheduleExpiry(partition, nextExpiry, now);
        const progress = this.progress[partition];
        return {
            partition, objects, upToDate: this.upToDate.has(partition), pendingWrites: pending.length,
            progress: progress ? { ...progress, fraction: progress.total > 0 ? Math.min(1, progress.received / progress.total) : 1 } : null,
        };
    }

    /**
     * Shows the partition again when its next object's `@expiresAt` passes.
     * @param {string} partition
     * @param {number | null} at
     * @param {number} now
     */
    #scheduleExpiry(partition, at, now) {
        const existing = this.expiryTimers.get(partition);
        if (existing !== undefined) this.clock.clearTimeout(existing);
        this.expiryTimers.delete(partition);
        if (at === null || !this.observers.get(partition)?.size) return;
        this.expiryTimers.set(partition, this.clock.setTimeout(() => {
            this.expiryTimers.delete(partition);
            this.#changed([partition], false);
        }, at - now + 1));
    }

    /**
     * Calls `listener` with the partition's snapshot now, then after every change.
     * @param {string} partition
     * @param {(snapshot: PartitionSnapshot) => void} listener
     * @returns {() => void} stops
     */
    observe(partition, listener) {
        const set = this.observers.get(partition) ?? new Set();
        this.observers.set(partition, set);
        set.add(listener);
        void this.snapshot(partition).then((s) => set.has(listener) && listener(s), (e) => this.#storeFailed('reading the view', e));
        return () => set.delete(listener);
    }

    /**
     * A live query: `listener` gets the result now, then only when it changes.
     * @param {string} partition
     * @param {QuerySpec} spec
     * @param {(result: SyncObject[]) => void} listener
     * @returns {() => void} stops
     */
    query(partition, spec, listener) {
        const result = new QueryResult(spec);
        return this.observe(partition, (snapshot) => {
            const changed = result.update(snapshot.objects);
            if (changed) listener(changed);
        });
    }

    /**
     * Re-reads the views of partitions for their observers (coalesced); tells the other tabs when `broadcast`.
     * @param {string[]} partitions
     * @param {boolean} broadcast
     */
    #changed(partitions, broadcast) {
        const unique = [...new Set(partitions)];
        if (broadcast && unique.length) this.tabs.broadcast({ type: 'changed', partitions: unique });
        for (const partition of unique) {
            const set = this.observers.get(partition);
            if (!set || set.size === 0) continue;
            void this.snapshot(partition).then((s) => {
                for (const listener of set) listener(s);
            }, (e) => this.#storeFailed('reading the view', e));
        }
        this.#wake();
    }

    // MARK: Writing

    /**
     * Applies operations to the local copy at once, queues them and returns the upload's request
     * id. A write that fails against the copy of an open partition (an unknown object, a path
     * that does not fit) throws its {@link SyncError} and queues nothing.
     * @param {string} partition
     * @param {Operation[]} operations
     * @returns {Promise<string>}
     */
    async write(partition, operations) {
        checkedPartition(partition);
        await this.#check(partition, operations);
        const requestId = crypto.randomUUID();
        await this.store.enqueue({ requestId, partition, operations });
        this.#outboxChanged([partition]);
        return requestId;
    }

    /** @param {string[]} partitions */
    #outboxChanged(partitions) {
        this.#changed(partitions, true);
        this.session?.post({ type: 'outboxChanged' });
        this.tabs.broadcast({ type: 'outbox' });
    }

    /**
     * @param {string} partition
     * @param {Operation[]} operations
     */
    async #check(partition, operations) {
        if (!Array.isArray(operations) || operations.length === 0) throw new SyncError('invalid_operation', 'a write has operations');
        operations.forEach(checkOperation);
        const size = new TextEncoder().encode(JSON.stringify({ type: 'upload', requestId: crypto.randomUUID(), partition, operations })).length;
        const limit = this.options.maximumUploadBytes ?? 16 << 20;
        if (size > limit) throw new SyncError('payload_too_large', `the upload would be ${size} bytes; the server takes at most ${limit}`);
        const { server, pending, record } = await this.store.readPartition(partition);
        if (!record?.open) return;
        const states = replay(partition, server, pending);
        applyOperations(partition, operations, (key) => states.get(key)?.state);
    }

    /** Writes not yet acknowledged, and attached blobs not yet uploaded. */
    async unacknowledgedWrites() {
        const { entries, blobs } = await this.store.queue();
        return entries.filter((e) => e.ackedVersion === null).length + blobs.length;
    }

    // MARK: Drafts

    /**
     * Saves operations as a draft (shown in this browser's view, never uploaded) under `id`,
     * replacing the draft with that id.
     * @param {string} partition @param {Operation[]} operations @param {string} [id]
     * @returns {Promise<Draft>}
     */
    async saveDraft(partition, operations, id) {
        checkedPartition(partition);
        await this.#check(partition, operations);
        const draft = await this.store.saveDraft({ id: id ?? crypto.randomUUID(), partition, operations, savedAt: this.clock.now() });
        this.#changed([partition], true);
        return draft;
    }

    /** @param {string} [partition] */
    drafts(partition) {
        return this.store.drafts(partition);
    }

    /**
     * Queues a draft as one ordinary write; returns its request id.
     * @param {string} id
     */
    async publishDraft(id) {
        const draft = (await this.store.drafts()).find((d) => d.id === id);
        if (!draft) throw new SyncError('not_found', `no draft ${id}`);
        await this.#check(draft.partition, draft.operations);
        const entry = await this.store.publishDraft(id, crypto.randomUUID());
        if (!entry) throw new SyncError('not_found', `no draft ${id}`);
        this.#outboxChanged([draft.partition]);
        return entry.requestId;
    }

    /** @param {string} id */
    async discardDraft(id) {
        const draft = (await this.store.drafts()).find((d) => d.id === id);
        if (!draft) return;
        await this.store.removeDraft(id);
        this.#changed([draft.partition], true);
    }

    // MARK: Blobs

    /**
     * Keeps bytes as a blob and returns the reference to put into a body. They are stored at
     * once and uploaded before any write queued after this call (after a reload too).
     * @param {ArrayBuffer | Uint8Array | Blob} data
     * @param {string} contentType
     * @returns {Promise<BlobReference>}
     */
    async attach(data, contentType) {
        const bytes = data instanceof Blob ? await data.arrayBuffer()
            : data instanceof Uint8Array ? data.slice().buffer : data.slice(0);
        const limit = this.options.maximumBlobBytes ?? 32 << 20;
        if (bytes.byteLength > limit) throw new SyncError('payload_too_large', `the blob is ${bytes.byteLength} bytes; the server takes at most ${limit}`);
        const reference = checkBlobReference({ '@blob': await digestOf(bytes), length: bytes.byteLength, contentType });
        await this.store.keepBlob(reference, bytes, true, this.clock.now());
        this.#outboxChanged([]);
        return reference;
    }

    /**
     * A blob's bytes, read through a partition whose objects reference it: from the local
     * cache, or downloaded, checked against the digest and cached. `not_found` when the server
     * has no blob this user may read there; `unavailable` offline when not cached;
     * `digest_mismatch` when the bytes are not the blob's.
     * @param {BlobReference} reference
     * @param {string} partition
     * @returns {Promise<Blob>}
     */
    async blob(reference, partition) {
        checkBlobReference(reference);
        const digest = reference['@blob'];
        const cached = await this.store.blobBytes(digest, this.clock.now());
        if (cached) return new Blob([cached], { type: reference.contentType });
        const token = await this.#freshToken(false, null);
        if (!('token' in token)) throw new SyncError('signedOut' in token ? 'unauthenticated' : 'unavailable', 'cannot download the blob now');
        const bytes = await this.http.getBlob(token.token, digest, partition);
        if ((await digestOf(bytes)) !== digest) throw new SyncError('digest_mismatch', `the downloaded bytes are not ${digest}`);
        await this.store.keepBlob(reference, bytes, false, this.clock.now());
        await this.store.evictBlobs(this.options.blobCacheBytes ?? 100 << 20);
        return new Blob([bytes], { type: reference.contentType });
    }

    /**
     * @param {string} digest
     * @returns {Promise<{outcome: 'stored' | 'refused' | 'failed', error?: SyncError}>}
     */
    async #uploadBlob(digest) {
        const record = await this.store.blobRecord(digest);
        const bytes = await this.store.blobBytes(digest, this.clock.now());
        if (!record || !bytes) return { outcome: 'refused', error: new SyncError('not_found', `the bytes of ${digest} are gone from the local store`) };
        const token = await this.#freshToken(false, null);
        if (!('token' in token)) return { outcome: 'failed' };
        try {
            const result = await this.http.putBlob(token.token, digest, bytes, record.contentType);
            if (result.outcome === 'stored') await this.store.evictBlobs(this.options.blobCacheBytes ?? 100 << 20);
            return result;
        } catch {
            return { outcome: 'failed' };
        }
    }

    /** @param {string[]} digests */
    async #repinBlobs(digests) {
        for (const digest of digests) {
            const record = await this.store.blobRecord(digest);
            if (!record) return false;
        }
        for (const digest of digests) {
            const record = /** @type {import('./store/Store.js').BlobRecord} */ (await this.store.blobRecord(digest));
            await this.store.keepBlob({ '@blob': digest, length: record.length, contentType: record.contentType }, new ArrayBuffer(0), true, this.clock.now());
        }
        return true;
    }

    // MARK: Local expiry

    /**
     * Drops this browser's copy of an object (or, with `key` null, of the whole partition,
     * which is closed) at `at` (ms since 1970), leaving the server's alone.
     * @param {string} partition @param {{collection: string, id: string} | null} key @param {number} at
     */
    async expireLocally(partition, key, at) {
        await this.store.setLocalExpiry(partition, key, at);
        await this.#scheduleLocalExpiry();
    }

    async #scheduleLocalExpiry() {
        if (this.localExpiryTimer !== null) this.clock.clearTimeout(this.localExpiryTimer);
        this.localExpiryTimer = null;
        const next = await this.store.nextLocalExpiry().catch(() => null);
        if (next === null || this.closed) return;
        this.localExpiryTimer = this.clock.setTimeout(async () => {
            this.localExpiryTimer = null;
            try {
                const { changed, closed } = await this.store.purgeLocalExpiries(this.clock.now());
                if (closed.length) this.#partitionsChanged();
                this.#changed(changed, true);
            } catch (error) {
                this.#storeFailed('purging local expiries', error);
            }
            await this.#scheduleLocalExpiry();
        }, Math.max(0, next - this.clock.now()));
    }

    // MARK: Events and waiting

    /**
     * @param {(event: ClientEvent) => void} listener
     * @returns {() => void} stops
     */
    on(listener) {
        this.listeners.add(listener);
        const backlog = this.backlog;
        this.backlog = [];
        for (const event of backlog) listener(event);
        return () => this.listeners.delete(listener);
    }

    /** @param {ClientEvent} event */
    #emit(event) {
        if (event.type === 'status' && this.leader) this.status = event.status;
        if (this.listeners.size === 0) {
            if (this.backlog.length < 100) this.backlog.push(event);
        } else {
            for (const listener of this.listeners) listener(event);
        }
        this.#wake();
    }

    /**
     * @param {string} what
     * @param {unknown} error
     */
    #storeFailed(what, error) {
        this.#emit({ type: 'storeFailed', what, message: error instanceof Error ? error.message : String(error) });
    }

    #wake() {
        for (const waiter of [...this.waiters]) waiter();
    }

    /**
     * Resolves `true` once `condition` holds, checking it again whenever the client's state
     * changes (no polling); `false` after `timeout` ms. For tests and command-line tools.
     * @param {() => boolean | Promise<boolean>} condition
     * @param {number} timeout
     */
    waitUntil(condition, timeout) {
        return new Promise((resolve) => {
            let settled = false;
            let checking = false;
            let again = false;
            const finish = (/** @type {boolean} */ value) => {
                if (settled) return;
                settled = true;
                this.waiters.delete(check);
                globalThis.clearTimeout(timer);
                resolve(value);
            };
            const check = async () => {
                if (checking) { again = true; return; }
                checking = true;
                try {
                    do {
                        again = false;
                        if (await condition()) return finish(true);
                    } while (again && !settled);
                } finally {
                    checking = false;
                }
            };
            const timer = globalThis.setTimeout(() => finish(false), timeout);
            this.waiters.add(check);
            void check();
        });
    }

    /**
     * Whether the partition's copy caught up since the connection was made.
     * @param {string} partition
     */
    isUpToDate(partition) {
        return this.upToDate.has(partition);
    }

    // MARK: A wiped store

    /**
     * The store was deleted under the client (site data cleared, storage evicted, another
     * context deleting the database): open a new one, keep what this tab still knows (the
     * credentials, the partitions it opened, the writes the leader had not had answered, with
     * their request ids, so none is applied twice), start the session over from the server,
     * and say so.
     */
    async #recoverFromWipe() {
        if (this.closed) return;
        const unanswered = this.session?.outbox.entries.filter((e) => e.ackedVersion === null) ?? [];
        try {
            await this.store.open();
            if (this.credentials) await this.store.setMeta({ credentials: this.credentials });
            for (const partition of this.opened) await this.store.setOpen(partition, true);
            if (unanswered.length) await this.store.requeue(unanswered);
        } catch (error) {
            this.#storeFailed('recreating the wiped store', error);
        }
        this.#emit({ type: 'storeReset', reason: 'wiped' });
        this.session?.post({ type: 'outboxChanged' });
        this.session?.post({ type: 'restart', reason: 'the store was wiped' });
        this.#changed([...this.observers.keys()], false);
    }
}

/**
 * @template {object} T
 * @param {T} value
 * @returns {Partial<T>}
 */
function stripUndefined(value) {
    return /** @type {Partial<T>} */ (Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)));
}

/**
 * An open partition: its objects, its changes, its writes.
 */
export class PartitionHandle {
    /**
     * @param {SyncClient} client
     * @param {string} partition
     */
    constructor(client, partition) {
        this.client = client;
        this.partition = partition;
    }

    objects() { return this.client.objects(this.partition); }

    /**
     * @param {string} collection
     * @param {string} id
     */
    async object(collection, id) {
        const key = objectKey(collection, id);
        return (await this.objects()).find((o) => objectKey(o.collection, o.id) === key) ?? null;
    }

    /** @param {(snapshot: PartitionSnapshot) => void} listener */
    subscribe(listener) { return this.client.observe(this.partition, listener); }

    /**
     * @param {QuerySpec} spec
     * @param {(result: SyncObject[]) => void} listener
     */
    query(spec, listener) { return this.client.query(this.partition, spec, listener); }

    /** @param {Operation[]} operations */
    write(operations) { return this.client.write(this.partition, operations); }
}
