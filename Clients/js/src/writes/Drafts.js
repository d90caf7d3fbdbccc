import { checkPartition } from '../protocol/Partition.js';
import { SyncError } from '../protocol/SyncError.js';

/** @typedef {import('../store/Store.js').Store} Store */
/** @typedef {import('../store/Store.js').Draft} Draft */
/** @typedef {import('../Clock.js').Clock} Clock */
/** @typedef {import('../protocol/OperationApplier.js').Operation} Operation */
/** @typedef {import('./LocalWrites.js').LocalWrites} LocalWrites */

/**
 * What drafts need from their client.
 * @typedef {object} DraftsHost
 * @property {Store} store
 * @property {Clock} clock
 * @property {LocalWrites} writes
 * @property {(partitions: string[], broadcast: boolean) => void} changed the views of these partitions changed
 */

/**
 * Drafts: writes shown in this browser's view and kept in its store, never uploaded until
 * published, then queued as one ordinary write.
 */
export class Drafts {
    /** @param {DraftsHost} host */
    constructor(host) {
        this.host = host;
    }

    /**
     * Saves operations as a draft under `id`, replacing the draft with that id.
     * @param {string} partition @param {Operation[]} operations @param {string} [id]
     * @returns {Promise<Draft>}
     */
    async save(partition, operations, id) {
        checkPartition(partition);
        await this.host.writes.check(partition, operations);
        const draft = await this.host.store.saveDraft({ id: id ?? crypto.randomUUID(), partition, operations, savedAt: this.host.clock.now() });
        this.host.changed([partition], true);
        return draft;
    }

    /** @param {string} [partition] */
    list(partition) {
        return this.host.store.drafts(partition);
    }

    /**
     * Queues a draft as one ordinary write; returns its request id.
     * @param {string} id
     */
    async publish(id) {
        const draft = (await this.host.store.drafts()).find((d) => d.id === id);
        if (!draft) throw new SyncError('not_found', `no draft ${id}`);
        await this.host.writes.check(draft.partition, draft.operations);
        const entry = await this.host.store.publishDraft(id, crypto.randomUUID());
        if (!entry) throw new SyncError('not_found', `no draft ${id}`);
        this.host.writes.outboxChanged([draft.partition]);
        return entry.requestId;
    }

    /** @param {string} id */
    async discard(id) {
        const draft = (await this.host.store.drafts()).find((d) => d.id === id);
        if (!draft) return;
        await this.host.store.removeDraft(id);
        this.host.changed([draft.partition], true);
    }
}
