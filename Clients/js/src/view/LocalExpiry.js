/** @typedef {import('../store/Store.js').Store} Store */
/** @typedef {import('../Clock.js').Clock} Clock */

/**
 * What local expiry needs from its client.
 * @typedef {object} LocalExpiryHost
 * @property {Store} store
 * @property {Clock} clock
 * @property {() => boolean} closed
 * @property {(partitions: string[]) => void} changed the views of these partitions changed (other tabs told)
 * @property {() => void} partitionsChanged partitions were closed
 * @property {(what: string, error: unknown) => void} storeFailed
 */

/**
 * This browser's copies dropped at a time of the app's choosing (the server's stay): one
 * timer, for the next expiry the store knows.
 */
export class LocalExpiry {
    /** @param {LocalExpiryHost} host */
    constructor(host) {
        this.host = host;
        /** @type {unknown} */
        this.timer = null;
    }

    /**
     * Drops this browser's copy of an object (or, with `key` null, of the whole partition,
     * which is closed) at `at` (ms since 1970).
     * @param {string} partition @param {{collection: string, id: string} | null} key @param {number} at
     */
    async expire(partition, key, at) {
        await this.host.store.setLocalExpiry(partition, key, at);
        await this.schedule();
    }

    /** Sets the timer for the next expiry in the store, if any. */
    async schedule() {
        const { store, clock } = this.host;
        if (this.timer !== null) clock.clearTimeout(this.timer);
        this.timer = null;
        const next = await store.nextLocalExpiry().catch(() => null);
        if (next === null || this.host.closed()) return;
        this.timer = clock.setTimeout(async () => {
            this.timer = null;
            try {
                const { changed, closed } = await store.purgeLocalExpiries(clock.now());
                if (closed.length) this.host.partitionsChanged();
                this.host.changed(changed);
            } catch (error) {
                this.host.storeFailed('purging local expiries', error);
            }
            await this.schedule();
        }, Math.max(0, next - clock.now()));
    }

    /** Stops the timer. */
    close() {
        if (this.timer !== null) this.host.clock.clearTimeout(this.timer);
    }
}
