/** @typedef {import('../protocol/json.js').JSONObject} JSONObject */
/** @typedef {import('./Outbox.js').OutboxEntry} OutboxEntry */

/**
 * An object as the server sends it: a tombstone has `deleted: true` and no body.
 * @typedef {{collection: string, id: string, version: number, deleted: boolean, body?: JSONObject}} ServerObject
 */

/**
 * A `changes` message.
 * @typedef {{type: 'changes', partition: string, reset: boolean, upToDate: boolean, cursor: string,
 *   version?: number, total?: number, objects: ServerObject[]}} ChangeBatch
 */

/**
 * What the store keeps of a partition.
 * @typedef {{partition: string, cursor: string | null, confirmedVersion: number, open: boolean}} PartitionRecord
 */

/**
 * What applying one page changes, all in one store transaction: whether the partition's
 * objects are dropped first (a reset), the objects written (tombstones kept, with a `null`
 * body), the partition's new record (the cursor goes with the objects it covers), and the
 * acknowledged writes the page confirms (an up-to-date page whose `version` covers their ack).
 *
 * @param {ChangeBatch} batch
 * @param {PartitionRecord | undefined} record
 * @param {OutboxEntry[]} entries the queued writes of the batch's partition
 * @returns {{reset: boolean, objects: {collection: string, id: string, version: number, body: JSONObject | null}[],
 *   record: PartitionRecord, confirmed: number[]}}
 */
export function planPage(batch, record, entries) {
    const previous = record ?? { partition: batch.partition, cursor: null, confirmedVersion: 0, open: true };
    const confirmedVersion = batch.upToDate && typeof batch.version === 'number'
        ? Math.max(previous.confirmedVersion, batch.version)
        : batch.reset ? 0 : previous.confirmedVersion;
    const confirmed = batch.upToDate && typeof batch.version === 'number'
        ? entries.filter((e) => e.ackedVersion !== null && e.ackedVersion <= confirmedVersion).map((e) => e.seq)
        : [];
    return {
        reset: batch.reset,
        objects: batch.objects.map((o) => ({
            collection: o.collection, id: o.id, version: o.version, body: o.deleted ? null : (o.body ?? null),
        })),
        record: { ...previous, cursor: batch.cursor, confirmedVersion },
        confirmed,
    };
}

/**
 * What an ack changes: an open partition keeps the write (replayed) until its copy covers the
 * ack's version; otherwise the write is forgotten at once.
 * @param {PartitionRecord | undefined} record
 * @param {number | undefined} version
 * @returns {'keep' | 'forget'}
 */
export function planAck(record, version) {
    if (record && record.open && typeof version === 'number' && version > record.confirmedVersion) return 'keep';
    return 'forget';
}
