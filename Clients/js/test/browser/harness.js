// What the browser tests call in the page (through WebDriver): one SyncClient per page, made
// with `harness.open(storeName)`, and helpers that wait for conditions with a bound.
import { SyncClient } from '../../src/index.js';

/** @type {SyncClient | null} */
let client = null;
/** @type {any[]} */
const events = [];

export const harness = {
    events,
    get client() { return /** @type {SyncClient} */ (client); },

    /** @param {string} storeName @param {object} [options] */
    async open(storeName, options = {}) {
        client = await SyncClient.open({ serverURL: location.origin, storeName, reconnectDelay: 100, maximumReconnectDelay: 1000, ...options });
        client.on((event) => events.push(event));
        return { userId: client.userId, leader: client.leader };
    },

    /** Waits until `predicate(client)` holds, re-checked on every change of the client. @param {string} source @param {number} [timeout] */
    async until(source, timeout = 20000) {
        const predicate = new Function('client', 'events', `return (async () => (${source}))();`);
        const ok = await this.client.waitUntil(() => predicate(client, events), timeout);
        if (!ok) throw new Error(`timed out waiting for: ${source}`);
        return true;
    },

    /** @param {string} partition */
    async objects(partition) {
        return this.client.objects(partition);
    },

    /** The server's copy of a partition, over HTTP (not through the client's store). @param {string} partition */
    async serverObjects(partition) {
        const credentials = await this.client.store.getMeta('credentials');
        /** @type {any[]} */
        let objects = [];
        let cursor = '';
        for (;;) {
            const response = await fetch(`/v1/partitions/${encodeURIComponent(partition)}/changes${cursor ? `?cursor=${encodeURIComponent(cursor)}` : ''}`, {
                headers: { Authorization: `Bearer ${credentials.accessToken}` },
            });
            const page = await response.json();
            objects = objects.concat(page.objects.filter((/** @type {any} */ o) => !o.deleted));
            cursor = page.cursor;
            if (page.upToDate) return objects;
        }
    },
};
