/**
 * An error with a stable wire code (docs/PROTOCOL.md, "Error codes"), as the server sends
 * them, or as the SDK raises them for a write it refuses locally. Match on `code`, never on
 * the message.
 */
export class SyncError extends Error {
    /**
     * @param {string} code a wire code such as `not_found`, `validation_failed`
     * @param {string} message
     * @param {unknown} [details] the server's `details`, when it sent some (`blob_missing`: `{digests}`)
     */
    constructor(code, message, details) {
        super(message);
        this.name = 'SyncError';
        /** @type {string} */
        this.code = code;
        /** @type {unknown} */
        this.details = details;
    }

    /**
     * The error of an HTTP answer `{"error":{"code","message"}}`, or `unavailable` for anything else.
     * @param {unknown} json
     * @param {number} status
     * @returns {SyncError}
     */
    static fromBody(json, status) {
        const error = json && typeof json === 'object' ? /** @type {any} */ (json).error : undefined;
        if (error && typeof error.code === 'string') {
            return new SyncError(error.code, typeof error.message === 'string' ? error.message : '', error.details);
        }
        return new SyncError('unavailable', `the server answered ${status}`);
    }
}

/** Codes of an `error` answering an upload that say nothing was refused: send it again later. */
export const TRANSIENT_CODES = new Set(['unavailable', 'internal']);
