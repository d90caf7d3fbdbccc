/**
 * Where the SDK takes the time from: injected, so tests run without the wall clock.
 * @typedef {{now(): number, setTimeout(callback: () => void, ms: number): unknown, clearTimeout(handle: unknown): void}} Clock
 */

/**
 * The real clock.
 * @type {Clock}
 */
export const systemClock = {
    now: () => Date.now(),
    setTimeout: (callback, ms) => globalThis.setTimeout(callback, ms),
    clearTimeout: (handle) => globalThis.clearTimeout(/** @type {any} */ (handle)),
};

/**
 * A clock that moves only when told (tests): `advance(ms)` runs the timers that come due, in order.
 * @implements {Clock}
 */
export class ManualClock {
    /** @param {number} [start] */
    constructor(start = 1_000_000) {
        this.time = start;
        /** @type {{at: number, id: number, callback: () => void}[]} */
        this.timers = [];
        this.nextId = 1;
    }

    now() { return this.time; }

    /**
     * @param {() => void} callback
     * @param {number} ms
     */
    setTimeout(callback, ms) {
        const id = this.nextId++;
        this.timers.push({ at: this.time + Math.max(0, ms), id, callback });
        return id;
    }

    /** @param {unknown} handle */
    clearTimeout(handle) {
        this.timers = this.timers.filter((t) => t.id !== handle);
    }

    /** @param {number} ms */
    advance(ms) {
        const end = this.time + ms;
        for (;;) {
            const due = this.timers.filter((t) => t.at <= end).sort((a, b) => a.at - b.at || a.id - b.id)[0];
            if (!due) break;
            this.timers = this.timers.filter((t) => t !== due);
            this.time = Math.max(this.time, due.at);
            due.callback();
        }
        this.time = end;
    }
}
