import { applyOperations } from '../../src/protocol/OperationApplier.js';

/**
 * A PartitionSync server in memory, speaking the WebSocket protocol to SyncClients in the
 * same process through fake sockets: enough of the contract (auth, subscribe with cursors,
 * uploads answered once per request id, changes to subscribers) to test the client's loop
 * without a network. `online = false` refuses connections; `dropAckOnce` applies an upload and
 * closes the connection instead of answering it. `pageSize` splits a subscription's pages
 * (the first of several says the catch-up's `total`, as the server does for `progress`);
 * `resetNext` answers the next subscription with a reset whatever its cursor (a restored or
 * pruned history).
 */
export class FakeServer {
    constructor() {
        /** @type {Map<string, {version: number, objects: Map<string, any>}>} */
        this.partitions = new Map();
        /** @type {Map<string, any>} stored outcomes by request id */
        this.outcomes = new Map();
        /** @type {Map<string, number>} how often each request id was applied */
        this.applied = new Map();
        /** @type {Set<FakeSocket>} */
        this.sockets = new Set();
        this.online = true;
        this.dropAckOnce = false;
        /** @type {(upload: any) => {code: string, details?: any} | null} */
        this.refuse = () => null;
        /** @type {Set<string>} digests uploaded */
        this.blobs = new Set();
        /** @type {Map<string, Uint8Array>} bytes GET /v1/blobs answers */
        this.blobBodies = new Map();
        this.connections = 0;
        this.pageSize = Infinity;
        this.resetNext = false;
    }

    /** @param {string} name */
    partition(name) {
        let p = this.partitions.get(name);
        if (!p) {
            p = { version: 0, objects: new Map() };
            this.partitions.set(name, p);
        }
        return p;
    }

    /** @param {string} url */
    socket(url) {
        void url;
        const socket = new FakeSocket(this);
        setImmediate(() => {
            if (!this.online) return socket.serverClose(1006);
            this.connections += 1;
            this.sockets.add(socket);
            socket.onopen?.({});
        });
        return socket;
    }

    /** Closes every connection (the server going down). @param {number} [code] */
    dropAll(code = 1001) {
        for (const socket of [...this.sockets]) socket.serverClose(code);
    }

    /** @param {FakeSocket} socket @param {any} message */
    receive(socket, message) {
        switch (message.type) {
            case 'auth': return socket.deliver({ type: 'ready', userId: 'u1' });
            case 'ping': return socket.deliver({ type: 'pong', nonce: message.nonce });
            case 'subscribe': {
                socket.subscriptions.add(message.partition);
                const p = this.partition(message.partition);
                const from = message.cursor === null || this.resetNext ? -1 : Number(String(message.cursor).slice(1));
                this.resetNext = false;
                const objects = [...p.objects.values()].filter((o) => o.version > from && !(from < 0 && o.deleted));
                const pages = Math.max(1, Math.ceil(objects.length / this.pageSize));
                for (let page = 0; page < pages; page += 1) {
                    const last = page === pages - 1;
                    socket.deliver({
                        type: 'changes', partition: message.partition, reset: from < 0 && page === 0, upToDate: last,
                        cursor: last ? `v${p.version}` : `v${from}`, version: p.version,
                        objects: objects.slice(page * this.pageSize, (page + 1) * this.pageSize),
                        ...(message.progress && page === 0 && !last ? { total: objects.length } : {}),
                    });
                }
                return undefined;
            }
            case 'unsubscribe':
                socket.subscriptions.delete(message.partition);
                return undefined;
            case 'upload': return this.upload(socket, message);
        }
        return undefined;
    }

    /** @param {FakeSocket} socket @param {any} message */
    upload(socket, message) {
        const stored = this.outcomes.get(message.requestId);
        if (stored) return socket.deliver(stored);
        const p = this.partition(message.partition);
        const state = (/** @type {string} */ key) => {
            const o = p.objects.get(key);
            return o === undefined ? undefined : o.deleted ? null : o.body;
        };
        const refusal = this.refuse(message);
        let changes;
        try {
            if (refusal) throw Object.assign(new Error(refusal.code), refusal);
            changes = applyOperations(message.partition, message.operations, state);
        } catch (error) {
            const e = /** @type {any} */ (error);
            const keys = [...new Set(message.operations.map((/** @type {any} */ o) => `${o.collection}/${o.id}`))];
            const objects = keys.map((key) => p.objects.get(key) ?? { collection: key.split('/')[0], id: key.slice(key.indexOf('/') + 1), version: 0, deleted: true });
            const answer = { type: 'rejected', requestId: message.requestId, partition: message.partition, code: e.code, message: e.message, details: e.details, objects };
            this.outcomes.set(message.requestId, answer);
            return socket.deliver(answer);
        }
        p.version += 1;
        const changed = [];
        for (const [key, body] of changes) {
            const slash = key.indexOf('/');
            const o = body === null
                ? { collection: key.slice(0, slash), id: key.slice(slash + 1), version: p.version, deleted: true }
                : { collection: key.slice(0, slash), id: key.slice(slash + 1), version: p.version, deleted: false, body };
            p.objects.set(key, o);
            changed.push(o);
        }
        this.applied.set(message.requestId, (this.applied.get(message.requestId) ?? 0) + 1);
        const ack = { type: 'ack', requestId: message.requestId, partition: message.partition, cursor: `v${p.version}`, version: p.version };
        this.outcomes.set(message.requestId, ack);
        if (this.dropAckOnce) {
            this.dropAckOnce = false;
            socket.serverClose(1006);
        } else {
            socket.deliver(ack);
        }
        for (const other of this.sockets) {
            if (other.subscriptions.has(message.partition)) {
                other.deliver({ type: 'changes', partition: message.partition, reset: false, upToDate: true, cursor: `v${p.version}`, version: p.version, objects: changed });
            }
        }
        return undefined;
    }
}

/** The client's end of a connection to a {@link FakeServer}. */
export class FakeSocket {
    /** @param {FakeServer} server */
    constructor(server) {
        this.server = server;
        /** @type {Set<string>} */
        this.subscriptions = new Set();
        this.open = true;
        /** @type {((e: any) => void) | null} */ this.onopen = null;
        /** @type {((e: {data: any}) => void) | null} */ this.onmessage = null;
        /** @type {((e: {code: number}) => void) | null} */ this.onclose = null;
        /** @type {((e: any) => void) | null} */ this.onerror = null;
    }

    /** @param {string} data */
    send(data) {
        if (!this.open) return;
        const message = JSON.parse(data);
        setImmediate(() => this.open && this.server.receive(this, message));
    }

    /** @param {any} message */
    deliver(message) {
        const text = JSON.stringify(message);
        setImmediate(() => this.open && this.onmessage?.({ data: text }));
    }

    close() {
        this.serverClose(1000);
    }

    /** @param {number} code */
    serverClose(code) {
        if (!this.open) return;
        this.open = false;
        this.server.sockets.delete(this);
        setImmediate(() => this.onclose?.({ code }));
    }
}
