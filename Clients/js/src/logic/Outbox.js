/** @typedef {import('../protocol/OperationApplier.js').Operation} Operation */

/**
 * A queued write, as the store keeps it. `requestId` is fixed when it is queued (or when a
 * `blob_missing` answer made it be sent again under a new one), so sending it again after a
 * lost answer applies nothing twice. `ackedVersion` is set once acknowledged: the write stays
 * (replayed over the server's copy) until the copy is complete up to that version.
 * @typedef {{seq: number, requestId: string, partition: string, operations: Operation[],
 *   ackedVersion: number | null, attempt: number}} OutboxEntry
 */

/**
 * @typedef {{type: 'upload', entry: OutboxEntry}
 *   | {type: 'uploadBlob', digest: string}
 *   | {type: 'subscribeAll'}
 *   | {type: 'dropConnection', reason: string}} OutboxAction
 */

/**
 * The upload queue's decisions, without I/O: what to send next, one thing at a time and in
 * order (blobs attached before a write go before it; then the oldest unacknowledged write),
 * when to give up on an unanswered upload, when to try again after a transient failure, and
 * when the session may subscribe.
 *
 * Subscriptions of a new session wait for the answer to its first upload: that upload may have
 * been applied just before its ack was lost with the last connection, and then its effect
 * would arrive in the partition's changes while it is still replayed from the queue, shown
 * twice (an increment counted twice) until the ack.
 */
export class Outbox {
    /**
     * @param {{uploadTimeout?: number, retryDelay?: number}} [settings] milliseconds
     */
    constructor(settings = {}) {
        this.uploadTimeout = settings.uploadTimeout ?? 30_000;
        this.retryDelay = settings.retryDelay ?? 1_000;
        /** @type {OutboxEntry[]} */
        this.entries = [];
        /** @type {string[]} digests of attached blobs not yet uploaded, oldest first */
        this.blobs = [];
        this.online = false;
        /** @type {{kind: 'upload', requestId: string, deadline: number} | {kind: 'blob', digest: string} | null} */
        this.inFlight = null;
        /** @type {string | null} the request id whose answer the subscriptions wait for */
        this.holdFor = null;
        /** @type {number | null} */
        this.retryAt = null;
    }

    /** The oldest write not yet acknowledged. */
    get nextEntry() {
        return this.entries.find((entry) => entry.ackedVersion === null) ?? null;
    }

    /**
     * The queue as the store holds it now (after a write, an answer, another tab's write).
     * @param {OutboxEntry[]} entries
     * @param {string[]} blobs
     * @param {number} now
     * @returns {OutboxAction[]}
     */
    setQueue(entries, blobs, now) {
        this.entries = [...entries].sort((a, b) => a.seq - b.seq);
        this.blobs = [...blobs];
        return this.#next(now);
    }

    /**
     * The session is ready.
     * @param {number} now
     * @returns {OutboxAction[]}
     */
    sessionStarted(now) {
        this.online = true;
        this.inFlight = null;
        this.retryAt = null;
        const first = this.nextEntry;
        if (!first) return [{ type: 'subscribeAll' }, ...this.#next(now)];
        this.holdFor = first.requestId;
        return this.#next(now);
    }

    /** @returns {OutboxAction[]} */
    sessionEnded() {
        this.online = false;
        this.inFlight = null;
        this.holdFor = null;
        this.retryAt = null;
        return [];
    }

    /**
     * The server answered an upload (the store already recorded it):
     * `acknowledged`, `rejected` (final), `resend` (it goes again under a new request id,
     * after the blobs it lacked) or `transient` (`unavailable`/`internal`: again later).
     * @param {string} requestId
     * @param {'acknowledged' | 'rejected' | 'resend' | 'transient'} outcome
     * @param {number} now
     * @returns {OutboxAction[]}
     */
    answered(requestId, outcome, now) {
        /** @type {OutboxAction[]} */
        const actions = [];
        if (this.holdFor === requestId) {
            this.holdFor = null;
            actions.push({ type: 'subscribeAll' });
        }
        // Answered for good: not sent again, whether or not the queue was reloaded since.
        if (outcome === 'acknowledged' || outcome === 'rejected') this.entries = this.entries.filter((e) => e.requestId !== requestId);
        if (this.inFlight?.kind === 'upload' && this.inFlight.requestId === requestId) {
            this.inFlight = null;
            if (outcome === 'transient') this.retryAt = now + this.retryDelay;
        }
        return [...actions, ...this.#next(now)];
    }

    /**
     * A blob upload ended: `stored`, `refused` (for good: it is no longer pinned) or `failed`
     * (the server could not be reached: again later).
     * @param {string} digest
     * @param {'stored' | 'refused' | 'failed'} outcome
     * @param {number} now
     * @returns {OutboxAction[]}
     */
    blobDone(digest, outcome, now) {
        if (this.inFlight?.kind !== 'blob' || this.inFlight.digest !== digest) return [];
        this.inFlight = null;
        /** @type {OutboxAction[]} */
        const actions = [];
        if (outcome === 'failed') {
            this.retryAt = now + this.retryDelay;
            // The queue is stuck behind this blob for now: downloads wait no longer.
            if (this.holdFor !== null) {
                this.holdFor = null;
                actions.push({ type: 'subscribeAll' });
            }
        } else {
            this.blobs = this.blobs.filter((d) => d !== digest);
        }
        return [...actions, ...this.#next(now)];
    }

    /**
     * @param {number} now
     * @returns {OutboxAction[]}
     */
    tick(now) {
        if (this.inFlight?.kind === 'upload' && now >= this.inFlight.deadline) {
            this.inFlight = null;
            return [{ type: 'dropConnection', reason: 'an upload went unanswered' }];
        }
        return this.#next(now);
    }

    nextDeadline() {
        if (this.inFlight?.kind === 'upload') return this.inFlight.deadline;
        if (!this.inFlight && this.retryAt !== null && this.online) return this.retryAt;
        return null;
    }

    /**
     * @param {number} now
     * @returns {OutboxAction[]}
     */
    #next(now) {
        if (!this.online || this.inFlight) return [];
        if (this.retryAt !== null) {
            if (now < this.retryAt) return [];
            this.retryAt = null;
        }
        if (this.blobs.length > 0) {
            const digest = this.blobs[0];
            this.inFlight = { kind: 'blob', digest };
            return [{ type: 'uploadBlob', digest }];
        }
        const entry = this.nextEntry;
        if (!entry) return [];
        this.inFlight = { kind: 'upload', requestId: entry.requestId, deadline: now + this.uploadTimeout };
        return [{ type: 'upload', entry }];
    }
}
