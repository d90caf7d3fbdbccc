import { SyncError } from './SyncError.js';

/**
 * Whether a code point is a control character (Unicode general category Cc).
 * @param {number} point
 */
function isControl(point) {
    return point < 0x20 || (point >= 0x7f && point <= 0x9f);
}

/**
 * Checks a partition string `key=value` (docs/PROTOCOL.md, "Partitions") and returns it;
 * `invalid_partition` otherwise.
 * @param {string} partition
 * @returns {string}
 */
export function checkPartition(partition) {
    if (typeof partition !== 'string') throw new SyncError('invalid_partition', 'a partition is a string key=value');
    const equals = partition.indexOf('=');
    if (equals < 0) throw new SyncError('invalid_partition', `a partition is key=value, got ${JSON.stringify(partition)}`);
    const key = partition.slice(0, equals);
    const value = [...partition.slice(equals + 1)];
    if (!/^[a-z][a-z0-9_-]{0,63}$/.test(key)) {
        throw new SyncError('invalid_partition', `a partition key matches [a-z][a-z0-9_-]{0,63}, got ${JSON.stringify(key)}`);
    }
    if (value.length < 1 || value.length > 256) throw new SyncError('invalid_partition', 'a partition value has 1 to 256 characters');
    if (value.some((c) => c === '=' || isControl(/** @type {number} */ (c.codePointAt(0))))) {
        throw new SyncError('invalid_partition', "a partition value holds no '=' and no control characters");
    }
    return partition;
}

/**
 * Checks an object's collection and id (docs/PROTOCOL.md, "Objects").
 * @param {string} collection
 * @param {string} id
 */
export function checkObjectKey(collection, id) {
    if (typeof collection !== 'string' || !/^[A-Za-z][A-Za-z0-9_]{0,63}$/.test(collection)) {
        throw new SyncError('invalid_collection', `a collection name matches [A-Za-z][A-Za-z0-9_]{0,63}, got ${JSON.stringify(collection)}`);
    }
    if (typeof id !== 'string') throw new SyncError('invalid_object_id', 'an object id is a string');
    const scalars = [...id];
    if (scalars.length < 1 || scalars.length > 256) throw new SyncError('invalid_object_id', 'an object id has 1 to 256 characters');
    if (scalars.some((c) => isControl(/** @type {number} */ (c.codePointAt(0))))) {
        throw new SyncError('invalid_object_id', 'an object id holds no control characters');
    }
}

/**
 * The one string naming an object in maps, `collection/id`: unambiguous, since a collection
 * name holds no `/` (the first `/` ends it).
 * @param {string} collection
 * @param {string} id
 */
export function objectKey(collection, id) {
    return `${collection}/${id}`;
}

/**
 * Orders object keys as the server does (UTF-8 bytes, i.e. code points).
 * @param {{collection: string, id: string}} a
 * @param {{collection: string, id: string}} b
 */
export function compareKeys(a, b) {
    return compareText(a.collection, b.collection) || compareText(a.id, b.id);
}

/**
 * Compares strings by code point (UTF-8 byte order), not by UTF-16 unit.
 * @param {string} a
 * @param {string} b
 */
export function compareText(a, b) {
    if (a === b) return 0;
    const x = [...a];
    const y = [...b];
    for (let i = 0; i < Math.min(x.length, y.length); i++) {
        const d = /** @type {number} */ (x[i].codePointAt(0)) - /** @type {number} */ (y[i].codePointAt(0));
        if (d !== 0) return d < 0 ? -1 : 1;
    }
    return x.length < y.length ? -1 : x.length > y.length ? 1 : 0;
}
