import { planAck, planPage } from '../logic/PagePlan.js';

/** @typedef {import('./Store.js').Store} Store */
/** @typedef {import('./Store.js').OutboxEntry} OutboxEntry */
/** @typedef {import('./Store.js').PartitionRecord} PartitionRecord */
/** @typedef {import('./Store.js').Draft} Draft */
/** @typedef {import('./Store.js').BlobRecord} BlobRecord */
/** @typedef {import('./Store.js').StoredObject} StoredObject */

const VERSION = 1;
const ALL = ['meta', 'objects', 'partitions', 'outbox', 'drafts', 'blobs', 'blobBytes', 'localExpiry'];

/**
 * @template T
 * @param {IDBRequest<T>} request
 * @returns {Promise<T>}
 */
function done(request) {
    return new Promise((resolve, reject) => {
        request.onsuccess = () => resolve(request.result);
        request.onerror = () => reject(request.error);
    });
}

/**
 * Every key of a partition's objects, `[partition, collection, id]`.
 * @param {string} partition
 */
function partitionRange(partition) {
    return IDBKeyRange.bound([partition], [partition, []]);
}

/**
 * The client's state in IndexedDB (one database per store name): the server's objects of
 * each partition keyed `[partition, collection, id]` (tombstones with a `null` body), each
 * partition's cursor, the outbox in write order, drafts, blobs (index and bytes apart) and
 * local expiries. Each method is one IndexedDB transaction, so a server page and its cursor
 * are stored together or not at all.
 * @implements {Store}
 */
export class IndexedDBStore {
    /** @param {string} name the database name */
    constructor(name) {
        this.name = name;
        /** @type {IDBDatabase | null} */
        this.db = null;
        /** @type {(() => void)[]} */
        this.wipedListeners = [];
    }

    /** @returns {Promise<{fresh: boolean}>} */
    async open() {
        let fresh = false;
        const request = indexedDB.open(this.name, VERSION);
        request.onupgradeneeded = (event) => {
            const db = request.result;
            if (event.oldVersion === 0) fresh = true;
            db.createObjectStore('meta');
            db.createObjectStore('objects');
            db.createObjectStore('partitions', { keyPath: 'partition' });
            const outbox = db.createObjectStore('outbox', { keyPath: 'seq', autoIncrement: true });
            outbox.createIndex('requestId', 'requestId', { unique: true });
            outbox.createIndex('partition', 'partition');
            const drafts = db.createObjectStore('drafts', { keyPath: 'id' });
            drafts.createIndex('partition', 'partition');
            const blobs = db.createObjectStore('blobs', { keyPath: 'digest' });
            blobs.createIndex('lastUsed', 'lastUsed');
            db.createObjectStore('blobBytes');
            db.createObjectStore('localExpiry', { keyPath: ['partition', 'collection', 'id'] });
        };
        const db = await done(request);
        this.db = db;
        const wiped = () => {
            if (this.db !== db) return;
            this.db = null;
            db.close();
            for (const listener of this.wipedListeners) listener();
        };
        // Another context deletes the database (newVersion null): let it, and start anew.
        db.onversionchange = (event) => {
            if (event.newVersion === null) wiped();
            else db.close();
        };
        // The browser removed it (site data cleared, storage evicted).
        db.onclose = wiped;
        return { fresh };
    }

    /** @param {() => void} listener */
    onWiped(listener) {
        this.wipedListeners.push(listener);
    }

    close() {
        this.db?.close();
        this.db = null;
    }

    /**
     * Runs `body` in one transaction; resolves once it committed.
     * @template T
     * @param {string[]} stores
     * @param {IDBTransactionMode} mode
     * @param {(tx: IDBTransaction) => Promise<T>} body
     * @param {boolean} [strict] durable against a crash of the machine, not only of the page
     * @returns {Promise<T>}
     */
    async #transaction(stores, mode, body, strict = false) {
        if (!this.db) throw new Error('the store is not open');
        const tx = this.db.transaction(stores, mode, { durability: strict ? 'strict' : 'default' });
        const committed = new Promise((resolve, reject) => {
            tx.oncomplete = () => resolve(undefined);
            tx.onerror = () => reject(tx.error);
            tx.onabort = () => reject(tx.error ?? new Error('the transaction was aborted'));
        });
        let result;
        try {
            result = await body(tx);
        } catch (error) {
            try { tx.abort(); } catch { /* already finished */ }
            await committed.catch(() => undefined);
            throw error;
        }
        await committed;
        return result;
    }

    /** @param {string} key */
    getMeta(key) {
        return this.#transaction(['meta'], 'readonly', (tx) => done(tx.objectStore('meta').get(key)));
    }

    /** @param {Record<string, any>} values */
    setMeta(values) {
        return this.#transaction(['meta'], 'readwrite', async (tx) => {
            const meta = tx.objectStore('meta');
            for (const [key, value] of Object.entries(values)) {
                if (value === undefined) meta.delete(key);
                else meta.put(value, key);
            }
        }, true);
    }

    /**
     * @param {string} partition
     * @param {boolean} open
     * @returns {Promise<PartitionRecord>}
     */
    setOpen(partition, open) {
        return this.#transaction(['partitions'], 'readwrite', async (tx) => {
            const store = tx.objectStore('partitions');
            /** @type {PartitionRecord | undefined} */
            const existing = await done(store.get(partition));
            const record = { ...(existing ?? { partition, cursor: null, confirmedVersion: 0 }), open };
            store.put(record);
            return record;
        });
    }

    /** @returns {Promise<PartitionRecord[]>} */
    partitions() {
        return this.#transaction(['partitions'], 'readonly', (tx) => done(tx.objectStore('partitions').getAll()));
    }

    /** @param {import('./Store.js').ChangeBatch} batch */
    applyPage(batch) {
        return this.#transaction(['objects', 'partitions', 'outbox'], 'readwrite', async (tx) => {
            const objects = tx.objectStore('objects');
            const record = await done(tx.objectStore('partitions').get(batch.partition));
            /** @type {OutboxEntry[]} */
            const entries = await done(tx.objectStore('outbox').index('partition').getAll(batch.partition));
            const plan = planPage(batch, record, entries);
            if (plan.reset) objects.delete(partitionRange(batch.partition));
            for (const o of plan.objects) objects.put(o, [batch.partition, o.collection, o.id]);
            tx.objectStore('partitions').put(plan.record);
            for (const seq of plan.confirmed) tx.objectStore('outbox').delete(seq);
            return { confirmed: plan.confirmed.length };
        });
    }

    /** @param {string} partition */
    readPartition(partition) {
        return this.#transaction(['objects', 'outbox', 'drafts', 'partitions'], 'readonly', async (tx) => {
            /** @type {StoredObject[]} */
            const server = await done(tx.objectStore('objects').getAll(partitionRange(partition)));
            /** @type {OutboxEntry[]} */
            const pending = await done(tx.objectStore('outbox').index('partition').getAll(partition));
            /** @type {Draft[]} */
            const drafts = await done(tx.objectStore('drafts').index('partition').getAll(partition));
            /** @type {PartitionRecord | undefined} */
            const record = await done(tx.objectStore('partitions').get(partition));
            pending.sort((a, b) => a.seq - b.seq);
            drafts.sort((a, b) => a.seq - b.seq);
            return { server, pending, drafts, record };
        });
    }

    /** @param {{requestId: string, partition: string, operations: import('./Store.js').Operation[]}} write */
    enqueue(write) {
        return this.#transaction(['outbox'], 'readwrite', async (tx) => {
            const entry = { requestId: write.requestId, partition: write.partition, operations: write.operations, ackedVersion: null, attempt: 0 };
            const seq = /** @type {number} */ (await done(tx.objectStore('outbox').add(entry)));
            return { ...entry, seq };
        }, true);
    }

    /** @param {{requestId: string, partition: string, operations: import('./Store.js').Operation[]}[]} writes */
    requeue(writes) {
        return this.#transaction(['outbox'], 'readwrite', async (tx) => {
            const outbox = tx.objectStore('outbox');
            for (const write of writes) {
                const existing = await done(outbox.index('requestId').getKey(write.requestId));
                if (existing === undefined) {
                    outbox.add({ requestId: write.requestId, partition: write.partition, operations: write.operations, ackedVersion: null, attempt: 0 });
                }
            }
        }, true);
    }

    queue() {
        return this.#transaction(['outbox', 'blobs'], 'readonly', async (tx) => {
            /** @type {OutboxEntry[]} */
            const entries = await done(tx.objectStore('outbox').getAll());
            /** @type {(BlobRecord & {seq: number})[]} */
            const blobs = await done(tx.objectStore('blobs').getAll());
            const pinned = blobs.filter((b) => b.pendingUpload).sort((a, b) => a.seq - b.seq).map((b) => b.digest);
            return { entries: entries.sort((a, b) => a.seq - b.seq), blobs: pinned };
        });
    }

    /**
     * @param {string} requestId
     * @param {number | undefined} version
     */
    acknowledge(requestId, version) {
        return this.#transaction(['outbox', 'partitions'], 'readwrite', async (tx) => {
            const outbox = tx.objectStore('outbox');
            const seq = await done(outbox.index('requestId').getKey(requestId));
            if (seq === undefined) return null;
            /** @type {OutboxEntry} */
            const entry = await done(outbox.get(seq));
            const record = await done(tx.objectStore('partitions').get(entry.partition));
            if (planAck(record, version) === 'keep') outbox.put({ ...entry, ackedVersion: version });
            else outbox.delete(seq);
            return entry.partition;
        });
    }

    /**
     * @param {string} requestId
     * @param {string} partition
     * @param {{collection: string, id: string, version: number, deleted: boolean, body?: import('./Store.js').JSONObject}[]} objects
     */
    reject(requestId, partition, objects) {
        return this.#transaction(['outbox', 'partitions', 'objects'], 'readwrite', async (tx) => {
            const record = await done(tx.objectStore('partitions').get(partition));
            if (record?.open) {
                const store = tx.objectStore('objects');
                for (const o of objects) {
                    const key = [partition, o.collection, o.id];
                    if (o.deleted) store.delete(key);
                    else store.put({ collection: o.collection, id: o.id, version: o.version, body: o.body ?? null }, key);
                }
            }
            const outbox = tx.objectStore('outbox');
            const seq = await done(outbox.index('requestId').getKey(requestId));
            if (seq === undefined) return false;
            outbox.delete(seq);
            return true;
        });
    }

    /**
     * @param {string} requestId
     * @param {string} newRequestId
     */
    resendAs(requestId, newRequestId) {
        return this.#transaction(['outbox'], 'readwrite', async (tx) => {
            const outbox = tx.objectStore('outbox');
            const seq = await done(outbox.index('requestId').getKey(requestId));
            if (seq === undefined) return false;
            /** @type {OutboxEntry} */
            const entry = await done(outbox.get(seq));
            outbox.put({ ...entry, requestId: newRequestId, attempt: entry.attempt + 1 });
            return true;
        }, true);
    }

    /** @param {Omit<Draft, 'seq'>} draft */
    saveDraft(draft) {
        return this.#transaction(['drafts', 'meta'], 'readwrite', async (tx) => {
            const drafts = tx.objectStore('drafts');
            /** @type {Draft | undefined} */
            const existing = await done(drafts.get(draft.id));
            let seq = existing?.seq;
            if (seq === undefined) {
                seq = ((await done(tx.objectStore('meta').get('draftSeq'))) ?? 0) + 1;
                tx.objectStore('meta').put(seq, 'draftSeq');
            }
            const saved = { ...draft, seq: /** @type {number} */ (seq) };
            drafts.put(saved);
            return saved;
        }, true);
    }

    /**
     * @param {string} [partition]
     * @returns {Promise<Draft[]>}
     */
    drafts(partition) {
        return this.#transaction(['drafts'], 'readonly', async (tx) => {
            const store = tx.objectStore('drafts');
            /** @type {Draft[]} */
            const all = await done(partition === undefined ? store.getAll() : store.index('partition').getAll(partition));
            return all.sort((a, b) => a.seq - b.seq);
        });
    }

    /** @param {string} id */
    removeDraft(id) {
        return this.#transaction(['drafts'], 'readwrite', async (tx) => {
            const existing = await done(tx.objectStore('drafts').get(id));
            tx.objectStore('drafts').delete(id);
            return existing !== undefined;
        });
    }

    /**
     * @param {string} id
     * @param {string} requestId
     */
    publishDraft(id, requestId) {
        return this.#transaction(['drafts', 'outbox'], 'readwrite', async (tx) => {
            /** @type {Draft | undefined} */
            const draft = await done(tx.objectStore('drafts').get(id));
            if (!draft) return null;
            const entry = { requestId, partition: draft.partition, operations: draft.operations, ackedVersion: null, attempt: 0 };
            const seq = /** @type {number} */ (await done(tx.objectStore('outbox').add(entry)));
            tx.objectStore('drafts').delete(id);
            return { ...entry, seq };
        }, true);
    }

    /**
     * @param {import('./Store.js').BlobReference} reference
     * @param {ArrayBuffer} bytes
     * @param {boolean} pendingUpload
     * @param {number} now
     */
    keepBlob(reference, bytes, pendingUpload, now) {
        return this.#transaction(['blobs', 'blobBytes', 'meta'], 'readwrite', async (tx) => {
            const digest = reference['@blob'];
            /** @type {(BlobRecord & {seq: number}) | undefined} */
            const existing = await done(tx.objectStore('blobs').get(digest));
            const seq = ((await done(tx.objectStore('meta').get('blobSeq'))) ?? 0) + 1;
            tx.objectStore('meta').put(seq, 'blobSeq');
            tx.objectStore('blobs').put({
                digest, length: reference.length, contentType: reference.contentType,
                pendingUpload: pendingUpload || (existing?.pendingUpload ?? false),
                seq: existing?.pendingUpload ? existing.seq : seq, lastUsed: now,
            });
            if (!existing) tx.objectStore('blobBytes').put(bytes, digest);
        }, pendingUpload);
    }

    /**
     * @param {string} digest
     * @param {number} now
     */
    blobBytes(digest, now) {
        return this.#transaction(['blobs', 'blobBytes'], 'readwrite', async (tx) => {
            const record = await done(tx.objectStore('blobs').get(digest));
            if (!record) return null;
            tx.objectStore('blobs').put({ ...record, lastUsed: now });
            return /** @type {ArrayBuffer | null} */ ((await done(tx.objectStore('blobBytes').get(digest))) ?? null);
        });
    }

    /**
     * @param {string} digest
     * @returns {Promise<BlobRecord | null>}
     */
    blobRecord(digest) {
        return this.#transaction(['blobs'], 'readonly', async (tx) => (await done(tx.objectStore('blobs').get(digest))) ?? null);
    }

    /** @param {string} digest */
    blobUploaded(digest) {
        return this.#transaction(['blobs'], 'readwrite', async (tx) => {
            const record = await done(tx.objectStore('blobs').get(digest));
            if (record) tx.objectStore('blobs').put({ ...record, pendingUpload: false });
        });
    }

    /** @param {number} limit */
    evictBlobs(limit) {
        return this.#transaction(['blobs', 'blobBytes'], 'readwrite', async (tx) => {
            /** @type {BlobRecord[]} */
            const all = await done(tx.objectStore('blobs').index('lastUsed').getAll());
            let total = all.filter((b) => !b.pendingUpload).reduce((sum, b) => sum + b.length, 0);
            for (const blob of all) {
                if (total <= limit) break;
                if (blob.pendingUpload) continue;
                tx.objectStore('blobs').delete(blob.digest);
                tx.objectStore('blobBytes').delete(blob.digest);
                total -= blob.length;
            }
        });
    }

    /**
     * @param {string} partition
     * @param {{collection: string, id: string} | null} key
     * @param {number} at
     */
    setLocalExpiry(partition, key, at) {
        return this.#transaction(['localExpiry'], 'readwrite', async (tx) => {
            tx.objectStore('localExpiry').put({ partition, collection: key?.collection ?? '', id: key?.id ?? '', at });
        });
    }

    /** @param {number} now */
    purgeLocalExpiries(now) {
        return this.#transaction(['localExpiry', 'objects', 'partitions'], 'readwrite', async (tx) => {
            /** @type {{partition: string, collection: string, id: string, at: number}[]} */
            const all = await done(tx.objectStore('localExpiry').getAll());
            const changed = new Set();
            const closed = new Set();
            for (const due of all.filter((e) => e.at <= now)) {
                tx.objectStore('localExpiry').delete([due.partition, due.collection, due.id]);
                if (due.collection === '') {
                    tx.objectStore('objects').delete(partitionRange(due.partition));
                    tx.objectStore('partitions').put({ partition: due.partition, cursor: null, confirmedVersion: 0, open: false });
                    closed.add(due.partition);
                } else {
                    tx.objectStore('objects').delete([due.partition, due.collection, due.id]);
                }
                changed.add(due.partition);
            }
            return { changed: [...changed], closed: [...closed] };
        });
    }

    nextLocalExpiry() {
        return this.#transaction(['localExpiry'], 'readonly', async (tx) => {
            /** @type {{at: number}[]} */
            const all = await done(tx.objectStore('localExpiry').getAll());
            return all.length ? Math.min(...all.map((e) => e.at)) : null;
        });
    }
}

export { ALL as STORE_NAMES };
