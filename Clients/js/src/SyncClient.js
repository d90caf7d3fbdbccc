import { systemClock } from './Clock.js';
import { Session } from './Session.js';
import { HttpApi } from './net/HttpApi.js';
import { IndexedDBStore } from './store/IndexedDBStore.js';
import { BrowserTabs, SoloTabs } from './tabs/Tabs.js';
import { checkPartition } from './protocol/Partition.js';
import { ClientEvents } from './events/ClientEvents.js';
import { Authenticator } from './auth/Authenticator.js';
import { PartitionObservers } from './view/PartitionObservers.js';
import { LocalExpiry } from './view/LocalExpiry.js';
import { LocalWrites } from './writes/LocalWrites.js';
import { Drafts } from './writes/Drafts.js';
import { Blobs } from './blobs/Blobs.js';
import { PartitionHandle } from './PartitionHandle.js';

export { PartitionHandle };

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
/** @typedef {import('./view/PartitionObservers.js').PartitionSnapshot} PartitionSnapshot */
/** @typedef {import('./events/ClientEvents.js').ClientEvent} ClientEvent */
/** @typedef {import('./SyncClientOptions.js').SyncClientOptions} SyncClientOptions */
/** @typedef {import('./auth/Authenticator.js').Credentials} Credentials */

/**
 * The browser client of a PartitionSync server: partitions as live collections over one
 * WebSocket per browser (shared by its tabs), an offline store in IndexedDB and a queue of writes.
 * This class is the API and the tabs' coordination; each concern is a part of its own
 * (`auth/`, `view/`, `writes/`, `blobs/`, `events/`), and the leading tab's connection is a
 * {@link Session}.
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

    /** @type {ClientEvents} */ #events;
    /** @type {Authenticator} */ #auth;
    /** @type {PartitionObservers} */ #views;
    /** @type {LocalExpiry} */ #expiry;
    /** @type {LocalWrites} */ #writes;
    /** @type {Drafts} */ #drafts;
    /** @type {Blobs} */ #blobs;

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
        /** @type {Set<string>} partitions this tab opened */
        this.opened = new Set();
        this.closed = false;

        const { store, clock, tabs, http } = this;
        const storeFailed = (/** @type {string} */ what, /** @type {unknown} */ error) => this.#storeFailed(what, error);
        this.#events = new ClientEvents();
        this.#auth = new Authenticator({
            store, clock, http, tabs, tokenRefreshMargin: options.tokenRefreshMargin,
            emit: (event) => this.#emit(event),
            tellSession: (event) => this.session?.post(event),
        });
        this.#views = new PartitionObservers({
            store, clock, storeFailed,
            isUpToDate: (partition) => this.upToDate.has(partition),
            progress: (partition) => this.progress[partition],
            tellTabs: (partitions) => tabs.broadcast({ type: 'changed', partitions }),
            wake: () => this.#events.wake(),
        });
        this.#expiry = new LocalExpiry({
            store, clock, storeFailed,
            closed: () => this.closed,
            changed: (partitions) => this.#views.changed(partitions, true),
            partitionsChanged: () => this.#partitionsChanged(),
        });
        this.#writes = new LocalWrites({
            store, maximumUploadBytes: options.maximumUploadBytes,
            changed: (partitions, broadcast) => this.#views.changed(partitions, broadcast),
            outboxChanged: () => {
                this.session?.post({ type: 'outboxChanged' });
                tabs.broadcast({ type: 'outbox' });
            },
        });
        this.#drafts = new Drafts({
            store, clock, writes: this.#writes,
            changed: (partitions, broadcast) => this.#views.changed(partitions, broadcast),
        });
        this.#blobs = new Blobs({
            store, clock, http, maximumBlobBytes: options.maximumBlobBytes, blobCacheBytes: options.blobCacheBytes,
            freshToken: () => this.#auth.freshToken(false, null),
            outboxChanged: () => this.#writes.outboxChanged([]),
        });
    }

    async #init() {
        const { fresh } = await this.store.open();
        this.store.onWiped(() => void this.#recoverFromWipe());
        this.#checkWipedWhileAway(fresh);
        await this.#auth.load();
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
        void this.#expiry.schedule();
    }

    /** Stops: closes the connection (handing it to another tab) and the store. */
    close() {
        if (this.closed) return;
        this.closed = true;
        this.session?.stop();
        this.session = null;
        this.leader = false;
        this.tabs.close();
        this.#views.close();
        this.#expiry.close();
        this.store.close();
    }

    /** @returns {import('./Session.js').SessionHost} */
    #sessionHost() {
        return {
            store: this.store,
            clock: this.clock,
            webSocketURL: this.http.webSocketURL,
            openSocket: this.options.webSocket ?? ((url) => /** @type {SocketLike} */ (/** @type {unknown} */ (new WebSocket(url)))),
            freshToken: (refresh, used) => this.#auth.freshToken(refresh, used),
            uploadBlob: (digest) => this.#blobs.upload(digest),
            repinBlobs: (digests) => this.#blobs.repin(digests),
            changed: (partitions) => this.#views.changed(partitions, true),
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
                this.#views.changed(message.partitions, false);
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
                void this.#auth.load().then(() => this.session?.post({ type: 'signedIn' }));
                break;
            case 'signedOut':
                this.#auth.forget();
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
        this.#views.changed([...touched], false);
        this.#events.wake();
    }

    // MARK: Credentials (auth/Authenticator.js)

    /** The signed-in user's tokens (and email), or `null`. @returns {Credentials | null} */
    get credentials() {
        return this.#auth.credentials;
    }

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
        return this.#auth.signIn('register', email, password);
    }

    /**
     * @param {string} email
     * @param {string} password
     * @returns {Promise<string>} the user id
     */
    login(email, password) {
        return this.#auth.signIn('login', email, password);
    }

    /**
     * Whether the account's email is verified: until it is, no rule or invitation that names
     * the email reaches this user (docs/SECURITY.md, "Identity").
     * @returns {Promise<boolean>}
     */
    emailVerified() {
        return this.#auth.emailVerified();
    }

    /**
     * Mails a new verification code, replacing the last; `false` when the email is verified.
     * @returns {Promise<boolean>}
     */
    sendVerificationCode() {
        return this.#auth.sendVerificationCode();
    }

    /**
     * Verifies the account's email with the code mailed to it (`K7QM-4XPA`, any case).
     * @param {string} code
     * @returns {Promise<void>}
     */
    verifyEmail(code) {
        return this.#auth.verifyEmail(code);
    }

    /** Signs out: revokes the login on the server and forgets the credentials (the data stays). */
    logout() {
        return this.#auth.logout();
    }

    // MARK: Partitions (view/PartitionObservers.js)

    /**
     * Opens a partition: kept in the store and followed live while connected (by whichever tab
     * leads). Returns its handle.
     * @param {string} partition
     * @returns {Promise<PartitionHandle>}
     */
    async openPartition(partition) {
        checkPartition(partition);
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
    snapshot(partition) {
        return this.#views.snapshot(partition);
    }

    /**
     * Calls `listener` with the partition's snapshot now, then after every change.
     * @param {string} partition
     * @param {(snapshot: PartitionSnapshot) => void} listener
     * @returns {() => void} stops
     */
    observe(partition, listener) {
        return this.#views.observe(partition, listener);
    }

    /**
     * A live query: `listener` gets the result now, then only when it changes.
     * @param {string} partition
     * @param {QuerySpec} spec
     * @param {(result: SyncObject[]) => void} listener
     * @returns {() => void} stops
     */
    query(partition, spec, listener) {
        return this.#views.query(partition, spec, listener);
    }

    // MARK: Writing (writes/LocalWrites.js, writes/Drafts.js)

    /**
     * Applies operations to the local copy at once, queues them and returns the upload's request
     * id. A write that fails against the copy of an open partition (an unknown object, a path
     * that does not fit) throws its {@link SyncError} and queues nothing.
     * @param {string} partition
     * @param {Operation[]} operations
     * @returns {Promise<string>}
     */
    write(partition, operations) {
        return this.#writes.write(partition, operations);
    }

    /** Writes not yet acknowledged, and attached blobs not yet uploaded. @returns {Promise<number>} */
    unacknowledgedWrites() {
        return this.#writes.unacknowledged();
    }

    /**
     * Saves operations as a draft (shown in this browser's view, never uploaded) under `id`,
     * replacing the draft with that id.
     * @param {string} partition @param {Operation[]} operations @param {string} [id]
     * @returns {Promise<Draft>}
     */
    saveDraft(partition, operations, id) {
        return this.#drafts.save(partition, operations, id);
    }

    /** @param {string} [partition] @returns {Promise<Draft[]>} */
    drafts(partition) {
        return this.#drafts.list(partition);
    }

    /**
     * Queues a draft as one ordinary write; returns its request id.
     * @param {string} id
     * @returns {Promise<string>}
     */
    publishDraft(id) {
        return this.#drafts.publish(id);
    }

    /** @param {string} id @returns {Promise<void>} */
    discardDraft(id) {
        return this.#drafts.discard(id);
    }

    // MARK: Blobs (blobs/Blobs.js)

    /**
     * Keeps bytes as a blob and returns the reference to put into a body. They are stored at
     * once and uploaded before any write queued after this call (after a reload too).
     * @param {ArrayBuffer | Uint8Array | Blob} data
     * @param {string} contentType
     * @returns {Promise<BlobReference>}
     */
    attach(data, contentType) {
        return this.#blobs.attach(data, contentType);
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
    blob(reference, partition) {
        return this.#blobs.blob(reference, partition);
    }

    // MARK: Local expiry (view/LocalExpiry.js)

    /**
     * Drops this browser's copy of an object (or, with `key` null, of the whole partition,
     * which is closed) at `at` (ms since 1970), leaving the server's alone.
     * @param {string} partition @param {{collection: string, id: string} | null} key @param {number} at
     * @returns {Promise<void>}
     */
    expireLocally(partition, key, at) {
        return this.#expiry.expire(partition, key, at);
    }

    // MARK: Events and waiting (events/ClientEvents.js)

    /**
     * @param {(event: ClientEvent) => void} listener
     * @returns {() => void} stops
     */
    on(listener) {
        return this.#events.on(listener);
    }

    /** @param {ClientEvent} event */
    #emit(event) {
        if (event.type === 'status' && this.leader) this.status = event.status;
        this.#events.emit(event);
    }

    /**
     * @param {string} what
     * @param {unknown} error
     */
    #storeFailed(what, error) {
        this.#emit({ type: 'storeFailed', what, message: error instanceof Error ? error.message : String(error) });
    }

    /**
     * Resolves `true` once `condition` holds, checking it again whenever the client's state
     * changes (no polling); `false` after `timeout` ms. For tests and command-line tools.
     * @param {() => boolean | Promise<boolean>} condition
     * @param {number} timeout
     * @returns {Promise<boolean>}
     */
    waitUntil(condition, timeout) {
        return this.#events.waitUntil(condition, timeout);
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
        this.#views.changed(this.#views.partitions, false);
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
