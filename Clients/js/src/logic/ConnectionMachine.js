import { reconnectDelay } from './Backoff.js';

/** @typedef {'offline' | 'connecting' | 'online'} ConnectionStatus */

/**
 * What the driver does for the connection machine.
 * @typedef {{type: 'fetchToken', refresh: boolean}
 *   | {type: 'openSocket', generation: number}
 *   | {type: 'closeSocket', generation: number, reason: string}
 *   | {type: 'send', message: object}
 *   | {type: 'status', status: ConnectionStatus}
 *   | {type: 'sessionStarted', userId: string}
 *   | {type: 'sessionEnded'}
 *   | {type: 'deliver', message: any}} ConnectionAction
 */

/**
 * Settings of the connection, in milliseconds.
 * @typedef {{reconnectDelay: number, maximumReconnectDelay: number, pingInterval: number,
 *   pongTimeout: number, tokenRefreshMargin: number}} ConnectionTimings
 */

/** @type {ConnectionTimings} */
export const DEFAULT_TIMINGS = {
    reconnectDelay: 250,
    maximumReconnectDelay: 30_000,
    pingInterval: 20_000,
    pongTimeout: 10_000,
    tokenRefreshMargin: 60_000,
};

/**
 * The WebSocket session as a state machine without I/O: each event (with the time now) returns
 * the actions the driver carries out. One socket at a time, named by a generation number so
 * events of a socket already given up are ignored.
 *
 * - `stopped` → `start` → `fetchingToken` → token → `connecting` → open (sends `auth`) →
 *   `authenticating` → `ready` → `online`.
 * - Any failure → `waiting` until the backoff (exponential, jittered) ends, then again.
 * - No credentials → `signedOut` until `signedIn`.
 * - While online: a ping every `pingInterval`; a connection silent for `pongTimeout` after a
 *   ping is closed; the access token is refreshed `tokenRefreshMargin` before it expires and
 *   sent with `auth` on the open session (the session goes on).
 */
export class ConnectionMachine {
    /**
     * @param {Partial<ConnectionTimings>} [timings]
     * @param {() => number} [random] in [0, 1), for the jitter
     */
    constructor(timings = {}, random = Math.random) {
        this.timings = { ...DEFAULT_TIMINGS, ...timings };
        this.random = random;
        /** @type {'stopped' | 'signedOut' | 'fetchingToken' | 'connecting' | 'authenticating' | 'online' | 'waiting'} */
        this.phase = 'stopped';
        this.failures = 0;
        this.generation = 0;
        /** @type {number | null} */ this.retryAt = null;
        /** @type {string | null} */ this.token = null;
        /** @type {number | null} */ this.tokenExpiresAt = null;
        this.refreshing = false;
        /** A refresh that failed (the network) is tried again no sooner than this. */
        this.refreshNotBefore = 0;
        this.lastHeard = 0;
        /** @type {number | null} */ this.pingSentAt = null;
        /** @type {number | null} */ this.nextPingAt = null;
        this.nonce = 0;
        /** @type {ConnectionStatus} */ this.status = 'offline';
    }

    /**
     * @param {ConnectionStatus} status
     * @returns {ConnectionAction[]}
     */
    #status(status) {
        if (status === this.status) return [];
        this.status = status;
        return [{ type: 'status', status }];
    }

    /**
     * @param {number} now
     * @returns {ConnectionAction[]}
     */
    start(now) {
        if (this.phase !== 'stopped' && this.phase !== 'signedOut') return [];
        this.phase = 'fetchingToken';
        void now;
        return [...this.#status('connecting'), { type: 'fetchToken', refresh: false }];
    }

    /** @returns {ConnectionAction[]} */
    stop() {
        const actions = this.#dropSocket('stopped');
        this.phase = 'stopped';
        this.retryAt = null;
        return [...actions, ...this.#status('offline')];
    }

    /**
     * Credentials arrived (a sign-in): connect at once.
     * @param {number} now
     */
    signedIn(now) {
        if (this.phase === 'signedOut') {
            this.failures = 0;
            return this.start(now);
        }
        if (this.phase === 'waiting') return this.retryNow(now);
        return [];
    }

    /**
     * The network came back (the browser's `online` event): no need to wait out the backoff.
     * @param {number} now
     */
    retryNow(now) {
        if (this.phase !== 'waiting') return [];
        this.retryAt = now;
        return this.tick(now);
    }

    /**
     * @param {number} now
     * @param {string} token
     * @param {number} expiresAt
     * @returns {ConnectionAction[]}
     */
    tokenReady(now, token, expiresAt) {
        this.token = token;
        this.tokenExpiresAt = expiresAt;
        if (this.refreshing) {
            this.refreshing = false;
            if (this.phase === 'online' || this.phase === 'authenticating') return [{ type: 'send', message: { type: 'auth', token } }];
            return [];
        }
        if (this.phase !== 'fetchingToken') return [];
        this.phase = 'connecting';
        this.generation += 1;
        void now;
        return [{ type: 'openSocket', generation: this.generation }];
    }

    /**
     * No token: `signedOut` when there are no credentials (or the server refused the refresh
     * token), else a failure to reach the server (backoff).
     * @param {number} now
     * @param {boolean} signedOut
     * @returns {ConnectionAction[]}
     */
    tokenMissing(now, signedOut) {
        if (this.refreshing) {
            this.refreshing = false;
            // The old token is still good for a while: try again a little later.
            if (!signedOut) {
                this.refreshNotBefore = now + this.timings.reconnectDelay * 8;
                return [];
            }
            return [...this.#dropSocket('signed out'), ...this.#signedOut()];
        }
        if (this.phase !== 'fetchingToken') return [];
        if (signedOut) return this.#signedOut();
        return this.#fail(now);
    }

    #signedOut() {
        this.phase = 'signedOut';
        this.token = null;
        this.tokenExpiresAt = null;
        return this.#status('offline');
    }

    /**
     * @param {number} now
     * @param {number} generation
     * @returns {ConnectionAction[]}
     */
    socketOpened(now, generation) {
        if (generation !== this.generation || this.phase !== 'connecting') return [];
        this.phase = 'authenticating';
        this.lastHeard = now;
        return [{ type: 'send', message: { type: 'auth', token: this.token } }];
    }

    /**
     * @param {number} now
     * @param {number} generation
     * @param {any} message a parsed server message
     * @returns {ConnectionAction[]}
     */
    messageReceived(now, generation, message) {
        if (generation !== this.generation || (this.phase !== 'authenticating' && this.phase !== 'online')) return [];
        this.lastHeard = now;
        if (message && message.type === 'ready') {
            if (this.phase === 'online') return [];
            this.phase = 'online';
            this.failures = 0;
            this.pingSentAt = null;
            this.nextPingAt = now + this.timings.pingInterval;
            return [...this.#status('online'), { type: 'sessionStarted', userId: String(message.userId) }];
        }
        if (message && message.type === 'pong') return [];
        return [{ type: 'deliver', message }];
    }

    /**
     * The socket closed (or failed to open).
     * @param {number} now
     * @param {number} generation
     * @param {number} code the close code (1006 when it never opened)
     * @returns {ConnectionAction[]}
     */
    socketClosed(now, generation, code) {
        if (generation !== this.generation) return [];
        if (this.phase !== 'connecting' && this.phase !== 'authenticating' && this.phase !== 'online') return [];
        const wasOnline = this.phase === 'online';
        /** @type {ConnectionAction[]} */
        const actions = wasOnline ? [{ type: 'sessionEnded' }] : [];
        // 4001: the token expired or was refused; the next attempt refreshes it first.
        if (code === 4001) this.tokenExpiresAt = 0;
        if (wasOnline) this.failures = 0;
        return [...actions, ...this.#fail(now)];
    }

    /**
     * Drops the current connection (a silent server, an upload unanswered for too long) and tries again.
     * @param {number} now
     * @param {string} reason
     * @returns {ConnectionAction[]}
     */
    drop(now, reason) {
        if (this.phase !== 'connecting' && this.phase !== 'authenticating' && this.phase !== 'online') return [];
        const actions = this.#dropSocket(reason);
        return [...actions, ...this.#fail(now)];
    }

    /**
     * @param {string} reason
     * @returns {ConnectionAction[]}
     */
    #dropSocket(reason) {
        if (this.phase !== 'connecting' && this.phase !== 'authenticating' && this.phase !== 'online') return [];
        const wasOnline = this.phase === 'online';
        const generation = this.generation;
        this.generation += 1; // the socket's later events are stale
        /** @type {ConnectionAction[]} */
        const actions = [{ type: 'closeSocket', generation, reason }];
        if (wasOnline) actions.push({ type: 'sessionEnded' });
        this.phase = 'waiting';
        return actions;
    }

    /**
     * @param {number} now
     * @returns {ConnectionAction[]}
     */
    #fail(now) {
        this.failures += 1;
        this.phase = 'waiting';
        this.pingSentAt = null;
        this.nextPingAt = null;
        this.retryAt = now + reconnectDelay(this.failures, { base: this.timings.reconnectDelay, maximum: this.timings.maximumReconnectDelay }, this.random);
        return this.#status('offline');
    }

    /**
     * Time passed: retries, pings, the liveness check, the token refresh.
     * @param {number} now
     * @returns {ConnectionAction[]}
     */
    tick(now) {
        if (this.phase === 'waiting' && this.retryAt !== null && now >= this.retryAt) {
            this.retryAt = null;
            this.phase = 'fetchingToken';
            const refresh = this.tokenExpiresAt !== null && now >= this.tokenExpiresAt - this.timings.tokenRefreshMargin;
            return [...this.#status('connecting'), { type: 'fetchToken', refresh }];
        }
        if (this.phase !== 'online') return [];
        /** @type {ConnectionAction[]} */
        const actions = [];
        if (this.pingSentAt !== null && this.lastHeard < this.pingSentAt && now >= this.pingSentAt + this.timings.pongTimeout) {
            return this.drop(now, 'no answer to a ping');
        }
        if (this.pingSentAt !== null && this.lastHeard >= this.pingSentAt) this.pingSentAt = null;
        if (this.nextPingAt !== null && now >= this.nextPingAt) {
            this.nonce += 1;
            actions.push({ type: 'send', message: { type: 'ping', nonce: this.nonce } });
            if (this.pingSentAt === null) this.pingSentAt = now;
            this.nextPingAt = now + this.timings.pingInterval;
        }
        if (!this.refreshing && this.tokenExpiresAt !== null && now >= this.#refreshAt()) {
            this.refreshing = true;
            actions.push({ type: 'fetchToken', refresh: true });
        }
        return actions;
    }

    #refreshAt() {
        return Math.max(/** @type {number} */ (this.tokenExpiresAt) - this.timings.tokenRefreshMargin, this.refreshNotBefore);
    }

    /** When `tick` next has something to do; `null` for never. */
    nextDeadline() {
        /** @type {number[]} */
        const times = [];
        if (this.phase === 'waiting' && this.retryAt !== null) times.push(this.retryAt);
        if (this.phase === 'online') {
            if (this.nextPingAt !== null) times.push(this.nextPingAt);
            if (this.pingSentAt !== null) times.push(this.pingSentAt + this.timings.pongTimeout);
            if (!this.refreshing && this.tokenExpiresAt !== null) times.push(this.#refreshAt());
        }
        return times.length ? Math.min(...times) : null;
    }
}
