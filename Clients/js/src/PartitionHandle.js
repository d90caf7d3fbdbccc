import { objectKey } from './protocol/Partition.js';

/** @typedef {import('./SyncClient.js').SyncClient} SyncClient */
/** @typedef {import('./view/PartitionObservers.js').PartitionSnapshot} PartitionSnapshot */
/** @typedef {import('./logic/View.js').SyncObject} SyncObject */
/** @typedef {import('./logic/LiveQuery.js').QuerySpec} QuerySpec */
/** @typedef {import('./protocol/OperationApplier.js').Operation} Operation */

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
