import { planAck, planPage } from '../logic/PagePlan.js';
import { copy } from '../protocol/json.js';

/** @typedef {import('./Store.js').Store} Store */
/** @typedef {import('./Store.js').OutboxEntry} OutboxEntry */
/** @typedef {import('./Store.js').PartitionRecord} PartitionRecord */
/** @typedef {import('./Store.js').Draft} Draft */
/** @typedef {import('./Store.js').BlobRecord} BlobRecord */
/** @typedef {import('./Store.js').StoredObject} StoredObject */

/**
 * The store in memory, with the same behaviour as {@link IndexedDBStore}: for tests without a
 * browser, and for apps that want nothing kept. Values are copied in and out, as IndexedDB does.
 * `wipe()` empties it as a browser clearing site data would.
 * @implements {Store}
 */
export class MemoryStore {
    constructor() {
        /** @type {Map<string, any>} */ this.meta = new Map();
        /** @type {Map<string, Map<string, StoredObject>>} */ this.objects = new Map();
        /** @type {Map<string, PartitionRecord>} */ this.records = new Map();
        /** @type {Map<number, OutboxEntry>} */ this.outbox = new Map();
        this.nextSeq = 1;
        /** @type {Map<string, Draft>} */ this.draftMap = new Map();
        this.draftSeq = 0;
        /** @type {Map<string, BlobRecord & {seq: number}>} */ this.blobs = new Map();
        /** @type {Map<string, ArrayBuffer>} */ this.bytes = new Map();
        this.blobSeq = 0;
        /** @type {Map<string, {partition: string, collection: string, id: string, at: number}>} */ this.expiries = new Map();
        /** @type {(() => void)[]} */
        this.wipedListeners = [];
        this.created = false;
    }

    #reset() {
        for (const map of [this.meta, this.objects, this.records, this.outbox, this.draftMap, this.blobs, this.bytes, this.expiries]) map.clear();
        this.nextSeq = 1;
        this.draftSeq = 0;
        this.blobSeq = 0;
    }

    async open() {
        const fresh = !this.created;
        this.created = true;
        return { fresh };
    }

    /** Empties the store and tells the client, as a browser clearing the site's data would. */
    wipe() {
        this.#reset();
        this.created = false;
        for (const listener of this.wipedListeners) listener();
    }

    /** @param {() => void} listener */
    onWiped(listener) {
        this.wipedListeners.push(listener);
    }

    close() {}

    /** @param {string} key */
    async getMeta(key) {
        return copy(this.meta.get(key));
    }

    /** @param {Record<string, any>} values */
    async setMeta(values) {
        for (const [key, value] of Object.entries(values)) {
            if (value === undefined) this.meta.delete(key);
            else this.meta.set(key, copy(value));
        }
    }

    /**
     * @param {string} partition
     * @param {boolean} open
     */
    async setOpen(partition, open) {
        const record = { ...(this.records.get(partition) ?? { partition, cursor: null, confirmedVersion: 0 }), open };
        this.records.set(partition, record);
        return copy(record);
    }

    async partitions() {
        return copy([...this.records.values()]);
    }

    /** @param {string} partition */
    #entriesOf(partition) {
        return [...this.outbox.values()].filter((e) => e.partition === partition).sort((a, b) => a.seq - b.seq);
    }

    /** @param {import('./Store.js').ChangeBatch} batch */
    async applyPage(batch) {
        const plan = planPage(copy(batch), this.records.get(batch.partition), this.#entriesOf(batch.partition));
        if (plan.reset) this.objects.delete(batch.partition);
        const objects = this.objects.get(batch.partition) ?? new Map();
        this.objects.set(batch.partition, objects);
        for (const o of plan.objects) objects.set(`${o.collection}/${o.id}`, o);
        this.records.set(batch.partition, plan.record);
        for (const seq of plan.confirmed) this.outbox.delete(seq);
        return { confirmed: plan.confirmed.length };
    }

    /** @param {string} partition */
    async readPartition(partition) {
        return copy({
            server: [...(this.objects.get(partition)?.values() ?? [])],
            pending: this.#entriesOf(partition),
            drafts: [...this.draftMap.values()].filter((d) => d.partition === partition).sort((a, b) => a.seq - b.seq),
            record: this.records.get(partition),
        });
    }

    /** @param {{requestId: string, partition: string, operations: import('./Store.js').Operation[]}} write */
    async enqueue(write) {
        if ([...this.outbox.values()].some((e) => e.requestId === write.requestId)) throw new Error('duplicate request id');
        const entry = { ...copy(write), ackedVersion: null, attempt: 0, seq: this.nextSeq++ };
        this.outbox.set(entry.seq, entry);
        return copy(entry);
    }

    /** @param {{requestId: string, partition: string, operations: import('./Store.js').Operation[]}[]} writes */
    async requeue(writes) {
        for (const write of writes) {
            if (![...this.outbox.values()].some((e) => e.requestId === write.requestId)) await this.enqueue(write);
        }
    }

    async queue() {
        const blobs = [...this.blobs.values()].filter((b) => b.pendingUpload).sort((a, b) => a.seq - b.seq).map((b) => b.digest);
        return copy({ entries: [...this.outbox.values()].sort((a, b) => a.seq - b.seq), blobs });
    }

    /** @param {string} requestId */
    #find(requestId) {
        return [...this.outbox.values()].find((e) => e.requestId === requestId);
    }

    /**
     * @param {string} requestId
     * @param {number | undefined} version
     */
    async acknowledge(requestId, version) {
        const entry = this.#find(requestId);
        if (!entry) return null;
        if (planAck(this.records.get(entry.partition), version) === 'keep') entry.ackedVersion = /** @type {number} */ (version);
        else this.outbox.delete(entry.seq);
        return entry.partition;
    }

    /**
     * @param {string} requestId
     * @param {string} partition
     * @param {{collection: string, id: string, version: number, deleted: boolean, body?: import('./Store.js').JSONObject}[]} objects
     */
    async reject(requestId, partition, objects) {
        if (this.records.get(partition)?.open) {
            const stored = this.objects.get(partition) ?? new Map();
            this.objects.set(partition, stored);
            for (const o of objects) {
                if (o.deleted) stored.delete(`${o.collection}/${o.id}`);
                else stored.set(`${o.collection}/${o.id}`, { collection: o.collection, id: o.id, version: o.version, body: copy(o.body ?? null) });
            }
        }
        const entry = this.#find(requestId);
        if (!entry) return false;
        this.outbox.delete(entry.seq);
        return true;
    }

    /**
     * @param {string} requestId
     * @param {string} newRequestId
     */
    async resendAs(requestId, newRequestId) {
        const entry = this.#find(requestId);
        if (!entry) return false;
        entry.requestId = newRequestId;
        entry.attempt += 1;
        return true;
    }

    /** @param {Omit<Draft, 'seq'>} draft */
    async saveDraft(draft) {
        const seq = this.draftMap.get(draft.id)?.seq ?? ++this.draftSeq;
        const saved = { ...copy(draft), seq };
        this.draftMap.set(draft.id, saved);
        return copy(saved);
    }

    /** @param {string} [partition] */
    async drafts(partition) {
        return copy([...this.draftMap.values()].filter((d) => partition === undefined || d.partition === partition).sort((a, b) => a.seq - b.seq));
    }

    /** @param {string} id */
    async removeDraft(id) {
        return this.draftMap.delete(id);
    }

    /**
     * @param {string} id
     * @param {string} requestId
     */
    async publishDraft(id, requestId) {
        const draft = this.draftMap.get(id);
        if (!draft) return null;
        this.draftMap.delete(id);
        return this.enqueue({ requestId, partition: draft.partition, operations: draft.operations });
    }

    /**
     * @param {import('./Store.js').BlobReference} reference
     * @param {ArrayBuffer} bytes
     * @param {boolean} pendingUpload
     * @param {number} now
     */
    async keepBlob(reference, bytes, pendingUpload, now) {
        const digest = reference['@blob'];
        const existing = this.blobs.get(digest);
        this.blobs.set(digest, {
            digest, length: reference.length, contentType: reference.contentType,
            pendingUpload: pendingUpload || (existing?.pendingUpload ?? false),
            seq: existing?.pendingUpload ? existing.seq : ++this.blobSeq, lastUsed: now,
        });
        if (!this.bytes.has(digest)) this.bytes.set(digest, bytes.slice(0));
    }

    /**
     * @param {string} digest
     * @param {number} now
     */
    async blobBytes(digest, now) {
        const record = this.blobs.get(digest);
        if (!record) return null;
        record.lastUsed = now;
        return this.bytes.get(digest)?.slice(0) ?? null;
    }

    /** @param {string} digest */
    async blobRecord(digest) {
        return copy(this.blobs.get(digest) ?? null);
    }

    /** @param {string} digest */
    async blobUploaded(digest) {
        const record = this.blobs.get(digest);
        if (record) record.pendingUpload = false;
    }

    /** @param {number} limit */
    async evictBlobs(limit) {
        const all = [...this.blobs.values()].sort((a, b) => a.lastUsed - b.lastUsed);
        let total = all.filter((b) => !b.pendingUpload).reduce((sum, b) => sum + b.length, 0);
        for (const blob of all) {
            if (total <= limit) break;
            if (blob.pendingUpload) continue;
            this.blobs.delete(blob.digest);
            this.bytes.delete(blob.digest);
            total -= blob.length;
        }
    }

    /**
     * @param {string} partition
     * @param {{collection: string, id: string} | null} key
     * @param {number} at
     */
    async setLocalExpiry(partition, key, at) {
        const entry = { partition, collection: key?.collection ?? '', id: key?.id ?? '', at };
        this.expiries.set(JSON.stringify([entry.partition, entry.collection, entry.id]), entry);
    }

    /** @param {number} now */
    async purgeLocalExpiries(now) {
        const changed = new Set();
        const closed = new Set();
        for (const [name, due] of [...this.expiries]) {
            if (due.at > now) continue;
            this.expiries.delete(name);
            if (due.collection === '') {
                this.objects.delete(due.partition);
                this.records.set(due.partition, { partition: due.partition, cursor: null, confirmedVersion: 0, open: false });
                closed.add(due.partition);
            } else {
                this.objects.get(due.partition)?.delete(`${due.collection}/${due.id}`);
            }
            changed.add(due.partition);
        }
        return { changed: [...changed], closed: [...closed] };
    }

    async nextLocalExpiry() {
        const all = [...this.expiries.values()];
        return all.length ? Math.min(...all.map((e) => e.at)) : null;
    }
}
