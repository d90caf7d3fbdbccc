import { applyOperations, checkOperation } from '../protocol/OperationApplier.js';
import { checkPartition } from '../protocol/Partition.js';
import { SyncError } from '../protocol/SyncError.js';
import { replay } from '../logic/View.js';

/** @typedef {import('../store/Store.js').Store} Store */
/** @typedef {import('../protocol/OperationApplier.js').Operation} Operation */

/**
 * What local writes need from their client.
 * @typedef {object} LocalWritesHost
 * @property {Store} store
 * @property {number} [maximumUploadBytes] the server's message limit. Default 16 MiB
 * @property {(partitions: string[], broadcast: boolean) => void} changed the views of these partitions changed
 * @property {() => void} outboxChanged the session and the other tabs: the outbox changed
 */

/**
 * Optimistic writes: checked against the local copy, applied to the view at once and queued
 * in the store's outbox, from which the leading tab's session uploads them.
 */
export class LocalWrites {
    /** @param {LocalWritesHost} host */
    constructor(host) {
        this.host = host;
    }

    /**
     * Applies operations to the local copy at once, queues them and returns the upload's request
     * id. A write that fails against the copy of an open partition (an unknown object, a path
     * that does not fit) throws its {@link SyncError} and queues nothing.
     * @param {string} partition
     * @param {Operation[]} operations
     * @returns {Promise<string>}
     */
    async write(partition, operations) {
        checkPartition(partition);
        await this.check(partition, operations);
        const requestId = crypto.randomUUID();
        await this.host.store.enqueue({ requestId, partition, operations });
        this.outboxChanged([partition]);
        return requestId;
    }

    /**
     * The views of `partitions` changed with the outbox: their observers, the session and the
     * other tabs hear of it.
     * @param {string[]} partitions
     */
    outboxChanged(partitions) {
        this.host.changed(partitions, true);
        this.host.outboxChanged();
    }

    /**
     * Whether operations may be queued: well-formed, within the upload limit, and (in an open
     * partition) applicable to the local copy.
     * @param {string} partition
     * @param {Operation[]} operations
     */
    async check(partition, operations) {
        if (!Array.isArray(operations) || operations.length === 0) throw new SyncError('invalid_operation', 'a write has operations');
        operations.forEach(checkOperation);
        const size = new TextEncoder().encode(JSON.stringify({ type: 'upload', requestId: crypto.randomUUID(), partition, operations })).length;
        const limit = this.host.maximumUploadBytes ?? 16 << 20;
        if (size > limit) throw new SyncError('payload_too_large', `the upload would be ${size} bytes; the server takes at most ${limit}`);
        const { server, pending, record } = await this.host.store.readPartition(partition);
        if (!record?.open) return;
        const states = replay(partition, server, pending);
        applyOperations(partition, operations, (key) => states.get(key)?.state);
    }

    /** Writes not yet acknowledged, and attached blobs not yet uploaded. */
    async unacknowledged() {
        const { entries, blobs } = await this.host.store.queue();
        return entries.filter((e) => e.ackedVersion === null).length + blobs.length;
    }
}
