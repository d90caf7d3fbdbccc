import { computeView } from '../logic/View.js';
import { QueryResult } from '../logic/LiveQuery.js';

/** @typedef {import('../store/Store.js').Store} Store */
/** @typedef {import('../Clock.js').Clock} Clock */
/** @typedef {import('../logic/View.js').SyncObject} SyncObject */
/** @typedef {import('../logic/LiveQuery.js').QuerySpec} QuerySpec */

/**
 * What an observer of a partition gets after each change.
 * @typedef {{partition: string, objects: SyncObject[], upToDate: boolean, pendingWrites: number,
 *   progress: {received: number, total: number, fraction: number} | null}} PartitionSnapshot
 */

/**
 * What the observers need from their client.
 * @typedef {object} PartitionObserversHost
 * @property {Store} store
 * @property {Clock} clock
 * @property {(partition: string) => boolean} isUpToDate
 * @property {(partition: string) => {received: number, total: number} | undefined} progress
 * @property {(partitions: string[]) => void} tellTabs the other tabs: these partitions changed
 * @property {() => void} wake
 * @property {(what: string, error: unknown) => void} storeFailed
 */

/**
 * The partitions' views as the app sees them (the server's objects, the pending writes on top,
 * then the drafts; expired objects left out), and who observes them: each observer gets a new
 * snapshot after every change, and again when an object's `@expiresAt` passes.
 */
export class PartitionObservers {
    /** @param {PartitionObserversHost} host */
    constructor(host) {
        this.host = host;
        /** @type {Map<string, Set<(snapshot: PartitionSnapshot) => void>>} */
        this.observers = new Map();
        /** @type {Map<string, unknown>} */
        this.expiryTimers = new Map();
    }

    /** The partitions observed now. */
    get partitions() {
        return [...this.observers.keys()];
    }

    /**
     * @param {string} partition
     * @returns {Promise<PartitionSnapshot>}
     */
    async snapshot(partition) {
        const { server, pending, drafts } = await this.host.store.readPartition(partition);
        const now = this.host.clock.now();
        const { objects, nextExpiry } = computeView(partition, server, [...pending, ...drafts], now);
        this.#scheduleExpiry(partition, nextExpiry, now);
        const progress = this.host.progress(partition);
        return {
            partition, objects, upToDate: this.host.isUpToDate(partition), pendingWrites: pending.length,
            progress: progress ? { ...progress, fraction: progress.total > 0 ? Math.min(1, progress.received / progress.total) : 1 } : null,
        };
    }

    /**
     * Shows the partition again when its next object's `@expiresAt` passes.
     * @param {string} partition
     * @param {number | null} at
     * @param {number} now
     */
    #scheduleExpiry(partition, at, now) {
        const { clock } = this.host;
        const existing = this.expiryTimers.get(partition);
        if (existing !== undefined) clock.clearTimeout(existing);
        this.expiryTimers.delete(partition);
        if (at === null || !this.observers.get(partition)?.size) return;
        this.expiryTimers.set(partition, clock.setTimeout(() => {
            this.expiryTimers.delete(partition);
            this.changed([partition], false);
        }, at - now + 1));
    }

    /**
     * Calls `listener` with the partition's snapshot now, then after every change.
     * @param {string} partition
     * @param {(snapshot: PartitionSnapshot) => void} listener
     * @returns {() => void} stops
     */
    observe(partition, listener) {
        const set = this.observers.get(partition) ?? new Set();
        this.observers.set(partition, set);
        set.add(listener);
        void this.snapshot(partition).then((s) => set.has(listener) && listener(s), (e) => this.host.storeFailed('reading the view', e));
        return () => set.delete(listener);
    }

    /**
     * A live query: `listener` gets the result now, then only when it changes.
     * @param {string} partition
     * @param {QuerySpec} spec
     * @param {(result: SyncObject[]) => void} listener
     * @returns {() => void} stops
     */
    query(partition, spec, listener) {
        const result = new QueryResult(spec);
        return this.observe(partition, (snapshot) => {
            const changed = result.update(snapshot.objects);
            if (changed) listener(changed);
        });
    }

    /**
     * Re-reads the views of partitions for their observers (coalesced); tells the other tabs when `broadcast`.
     * @param {string[]} partitions
     * @param {boolean} broadcast
     */
    changed(partitions, broadcast) {
        const unique = [...new Set(partitions)];
        if (broadcast && unique.length) this.host.tellTabs(unique);
        for (const partition of unique) {
            const set = this.observers.get(partition);
            if (!set || set.size === 0) continue;
            void this.snapshot(partition).then((s) => {
                for (const listener of set) listener(s);
            }, (e) => this.host.storeFailed('reading the view', e));
        }
        this.host.wake();
    }

    /** Stops the expiry timers. */
    close() {
        for (const timer of this.expiryTimers.values()) this.host.clock.clearTimeout(timer);
    }
}
