import { isEquivalent } from '../protocol/json.js';
import { compareText } from '../protocol/Partition.js';

/** @typedef {import('./View.js').SyncObject} SyncObject */

/**
 * A query over a partition's objects: one collection (or all), a filter, an order.
 * @typedef {{collection?: string, where?: (object: SyncObject) => boolean,
 *   sortBy?: (a: SyncObject, b: SyncObject) => number}} QuerySpec
 */

/**
 * Follows a query's result over successive views of a partition: `update` returns the new
 * result when it differs from the last one, `undefined` when it is the same, so a change
 * elsewhere in the partition (or one that leaves the result as it was) emits nothing.
 * Ties of the order go by object id, so the order is stable.
 */
export class QueryResult {
    /** @param {QuerySpec} spec */
    constructor(spec) {
        this.spec = spec;
        /** @type {SyncObject[] | undefined} */
        this.last = undefined;
    }

    /** @param {readonly SyncObject[]} objects */
    evaluate(objects) {
        const { collection, where, sortBy } = this.spec;
        const result = objects.filter((o) => (collection === undefined || o.collection === collection) && (!where || where(o)));
        return result.sort((a, b) => (sortBy ? sortBy(a, b) : 0) || compareText(a.collection, b.collection) || compareText(a.id, b.id));
    }

    /**
     * @param {readonly SyncObject[]} objects the partition's view now
     * @returns {SyncObject[] | undefined} the result when it changed (always the first time)
     */
    update(objects) {
        const result = this.evaluate(objects);
        // Versions are left out of the comparison: an ack that gives a write its version changes
        // nothing the app shows.
        const shape = (/** @type {SyncObject[]} */ list) => list.map((o) => [o.collection, o.id, o.body]);
        if (this.last !== undefined && isEquivalent(shape(this.last), shape(result))) return undefined;
        this.last = result;
        return result;
    }
}
