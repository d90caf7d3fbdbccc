import { applyOperations } from '../protocol/OperationApplier.js';
import { compareKeys, objectKey } from '../protocol/Partition.js';

/** @typedef {import('../protocol/json.js').JSONObject} JSONObject */
/** @typedef {import('../protocol/OperationApplier.js').Operation} Operation */
/** @typedef {import('../protocol/OperationApplier.js').DocumentState} DocumentState */

/**
 * An object as the app sees it.
 * @typedef {{collection: string, id: string, version: number, body: JSONObject}} SyncObject
 */

/**
 * A stored object (`body` null: a tombstone).
 * @typedef {{collection: string, id: string, version: number, body: JSONObject | null}} StoredObject
 */

/** The top-level field with an object's expiry time (docs/PROTOCOL.md, "Expiry"). */
export const EXPIRES_AT = '@expiresAt';

/**
 * The expiry time of a body in milliseconds since 1970, `null` without one (or one that is
 * not a date-time: the server refuses those).
 * @param {JSONObject} body
 */
export function expiryOf(body) {
    const value = body[EXPIRES_AT];
    if (typeof value !== 'string' || value.length < 20 || value[10] !== 'T') return null;
    const time = Date.parse(value);
    return Number.isNaN(time) ? null : time;
}

/**
 * The server's objects with writes replayed on top, in order, with the server's rules (a
 * write that no longer applies is left out: the server will refuse it and say so).
 * @param {string} partition
 * @param {Iterable<StoredObject>} server
 * @param {readonly {operations: Operation[]}[]} writes pending writes, then drafts
 * @returns {Map<string, {collection: string, id: string, version: number, state: DocumentState}>}
 */
export function replay(partition, server, writes) {
    /** @type {Map<string, {collection: string, id: string, version: number, state: DocumentState}>} */
    const states = new Map();
    for (const o of server) states.set(objectKey(o.collection, o.id), { collection: o.collection, id: o.id, version: o.version, state: o.body });
    for (const write of writes) {
        let changes;
        try {
            changes = applyOperations(partition, write.operations, (key) => states.get(key)?.state);
        } catch {
            continue;
        }
        for (const [key, after] of changes) {
            const slash = key.indexOf('/');
            const existing = states.get(key);
            states.set(key, { collection: key.slice(0, slash), id: key.slice(slash + 1), version: existing?.version ?? 0, state: after });
        }
    }
    return states;
}

/**
 * What the app sees of a partition at `now`: live objects, sorted by key, without those whose
 * `@expiresAt` has passed (the server deletes them within about a second; the app stops
 * showing them on time), and when the next shown object expires.
 * @param {string} partition
 * @param {Iterable<StoredObject>} server
 * @param {readonly {operations: Operation[]}[]} writes
 * @param {number} now
 * @returns {{objects: SyncObject[], nextExpiry: number | null}}
 */
export function computeView(partition, server, writes, now) {
    /** @type {SyncObject[]} */
    const objects = [];
    /** @type {number | null} */
    let nextExpiry = null;
    for (const entry of replay(partition, server, writes).values()) {
        if (!entry.state) continue;
        const expiry = expiryOf(entry.state);
        if (expiry !== null) {
            if (expiry <= now) continue;
            nextExpiry = nextExpiry === null ? expiry : Math.min(nextExpiry, expiry);
        }
        objects.push({ collection: entry.collection, id: entry.id, version: entry.version, body: entry.state });
    }
    objects.sort(compareKeys);
    return { objects, nextExpiry };
}
