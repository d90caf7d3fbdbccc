import { SyncError } from '../protocol/SyncError.js';

/**
 * Tokens as the server answers them.
 * @typedef {{userId: string, accessToken: string, refreshToken: string, expiresIn: number}} Tokens
 */

/**
 * The server's HTTP endpoints the SDK uses: sign-in, token refresh, blobs. `fetch` is injected
 * (tests); a network failure is `unavailable`, a server error its own code.
 */
export class HttpApi {
    /**
     * @param {string} serverURL e.g. `http://127.0.0.1:8080` (or the page's origin)
     * @param {typeof fetch} [fetchFunction]
     */
    constructor(serverURL, fetchFunction) {
        this.base = serverURL.replace(/\/+$/, '');
        this.fetch = fetchFunction ?? ((input, init) => globalThis.fetch(input, init));
    }

    /** The WebSocket URL of `/v1/sync`. */
    get webSocketURL() {
        return this.base.replace(/^http/, 'ws') + '/v1/sync';
    }

    /**
     * @param {string} path
     * @param {RequestInit} init
     * @returns {Promise<Response>}
     */
    async #request(path, init) {
        try {
            return await this.fetch(this.base + path, init);
        } catch (error) {
            throw new SyncError('unavailable', `the server could not be reached: ${error instanceof Error ? error.message : String(error)}`);
        }
    }

    /**
     * @param {string} path
     * @param {object} body
     * @param {string} [token] a bearer credential
     * @returns {Promise<{status: number, json: any}>}
     */
    async #post(path, body, token) {
        /** @type {Record<string, string>} */
        const headers = { 'Content-Type': 'application/json' };
        if (token) headers.Authorization = `Bearer ${token}`;
        const response = await this.#request(path, { method: 'POST', headers, body: JSON.stringify(body) });
        const text = await response.text().catch(() => '');
        let json = null;
        try { json = text ? JSON.parse(text) : null; } catch { json = null; }
        return { status: response.status, json };
    }

    /**
     * @param {'register' | 'login'} kind
     * @param {string} email
     * @param {string} password
     * @returns {Promise<Tokens>}
     */
    async signIn(kind, email, password) {
        const { status, json } = await this.#post(`/v1/auth/${kind}`, { email, password });
        if (status < 200 || status >= 300) throw SyncError.fromBody(json, status);
        return json;
    }

    /**
     * Exchanges a refresh token for new tokens. `unauthenticated` (401) means the login is
     * over (revoked, or the token replayed after its grace): sign in again. Anything else
     * (`unavailable`) may be tried again with the same refresh token: within the server's
     * refresh grace, a token whose answer was lost still answers.
     * @param {string} refreshToken
     * @returns {Promise<Tokens>}
     */
    async refresh(refreshToken) {
        const { status, json } = await this.#post('/v1/auth/refresh', { refreshToken });
        if (status === 401) throw new SyncError('unauthenticated', 'the refresh token was refused');
        if (status < 200 || status >= 300) throw SyncError.fromBody(json, status);
        return json;
    }

    /**
     * The signed-in account (docs/SECURITY.md, "Identity").
     * @param {string} token
     * @returns {Promise<{userId: string, email?: string, emailVerified: boolean}>}
     */
    async account(token) {
        const response = await this.#request('/v1/auth/me', { headers: { Authorization: `Bearer ${token}` } });
        const json = await response.json().catch(() => null);
        if (!response.ok) throw SyncError.fromBody(json, response.status);
        return json;
    }

    /**
     * Mails a new verification code to the account's email; `false` when it is verified already.
     * @param {string} token
     * @returns {Promise<boolean>}
     */
    async sendVerificationCode(token) {
        const { status, json } = await this.#post('/v1/auth/email/code', {}, token);
        if (status < 200 || status >= 300) throw SyncError.fromBody(json, status);
        return json?.sent === true;
    }

    /**
     * Verifies the account's email with the code mailed to it; `invalid_code` when it is not
     * the live one.
     * @param {string} token
     * @param {string} code
     */
    async verifyEmail(token, code) {
        const { status, json } = await this.#post('/v1/auth/email/verify', { code }, token);
        if (status < 200 || status >= 300) throw SyncError.fromBody(json, status);
    }

    /** @param {string} refreshToken */
    async logout(refreshToken) {
        await this.#post('/v1/auth/logout', { refreshToken });
    }

    /**
     * Uploads a blob: `stored`, or refused for good (`payload_too_large`, `quota_exceeded`,
     * `digest_mismatch`); throws `unavailable` (and any other transient failure).
     * @param {string} token
     * @param {string} digest
     * @param {ArrayBuffer} bytes
     * @param {string} contentType
     * @returns {Promise<{outcome: 'stored'} | {outcome: 'refused', error: SyncError}>}
     */
    async putBlob(token, digest, bytes, contentType) {
        const response = await this.#request(`/v1/blobs/${digest}`, {
            method: 'PUT', headers: { Authorization: `Bearer ${token}`, 'Content-Type': contentType }, body: bytes,
        });
        if (response.status === 200 || response.status === 201) {
            await response.arrayBuffer().catch(() => undefined);
            return { outcome: 'stored' };
        }
        const json = await response.json().catch(() => null);
        const error = SyncError.fromBody(json, response.status);
        if (response.status === 400 || response.status === 413) return { outcome: 'refused', error };
        throw error;
    }

    /**
     * Downloads a blob through a partition whose objects reference it.
     * @param {string} token
     * @param {string} digest
     * @param {string} partition
     * @returns {Promise<ArrayBuffer>}
     */
    async getBlob(token, digest, partition) {
        const response = await this.#request(`/v1/blobs/${digest}?partition=${encodeURIComponent(partition)}`, {
            headers: { Authorization: `Bearer ${token}` },
        });
        if (response.status !== 200) throw SyncError.fromBody(await response.json().catch(() => null), response.status);
        return response.arrayBuffer();
    }
}
