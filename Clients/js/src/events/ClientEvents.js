/** @typedef {import('../logic/ConnectionMachine.js').ConnectionStatus} ConnectionStatus */

/**
 * Something the app should know about.
 * @typedef {{type: 'status', status: ConnectionStatus}
 *   | {type: 'rejected', requestId: string, partition: string, code: string, message: string}
 *   | {type: 'unsubscribed', partition: string, code: string}
 *   | {type: 'error', code: string, message: string, partition: string | null}
 *   | {type: 'signedOut'}
 *   | {type: 'blobRefused', digest: string, code: string, message: string}
 *   | {type: 'storeFailed', what: string, message: string}
 *   | {type: 'storeReset', reason: 'wiped'}
 *   | {type: 'leader', leader: boolean}} ClientEvent
 */

/**
 * The client's listeners and waiters: events go to every listener (those before the first
 * listener are kept for it, up to 100), and every change of the client wakes the waiters of
 * {@link ClientEvents.waitUntil} to check their condition again.
 */
export class ClientEvents {
    constructor() {
        /** @type {Set<(event: ClientEvent) => void>} */
        this.listeners = new Set();
        /** @type {ClientEvent[]} events before the first listener, kept for it */
        this.backlog = [];
        /** @type {Set<() => void>} */
        this.waiters = new Set();
    }

    /**
     * @param {(event: ClientEvent) => void} listener
     * @returns {() => void} stops
     */
    on(listener) {
        this.listeners.add(listener);
        const backlog = this.backlog;
        this.backlog = [];
        for (const event of backlog) listener(event);
        return () => this.listeners.delete(listener);
    }

    /** @param {ClientEvent} event */
    emit(event) {
        if (this.listeners.size === 0) {
            if (this.backlog.length < 100) this.backlog.push(event);
        } else {
            for (const listener of this.listeners) listener(event);
        }
        this.wake();
    }

    /** Something changed: every waiter checks its condition again. */
    wake() {
        for (const waiter of [...this.waiters]) waiter();
    }

    /**
     * Resolves `true` once `condition` holds, checking it again whenever the client's state
     * changes (no polling); `false` after `timeout` ms.
     * @param {() => boolean | Promise<boolean>} condition
     * @param {number} timeout
     * @returns {Promise<boolean>}
     */
    waitUntil(condition, timeout) {
        return new Promise((resolve) => {
            let settled = false;
            let checking = false;
            let again = false;
            const finish = (/** @type {boolean} */ value) => {
                if (settled) return;
                settled = true;
                this.waiters.delete(check);
                globalThis.clearTimeout(timer);
                resolve(value);
            };
            const check = async () => {
                if (checking) { again = true; return; }
                checking = true;
                try {
                    do {
                        again = false;
                        if (await condition()) return finish(true);
                    } while (again && !settled);
                } finally {
                    checking = false;
                }
            };
            const timer = globalThis.setTimeout(() => finish(false), timeout);
            this.waiters.add(check);
            void check();
        });
    }
}
