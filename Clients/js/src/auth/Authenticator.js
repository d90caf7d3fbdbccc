import { SyncError } from '../protocol/SyncError.js';

/** @typedef {import('../store/Store.js').Store} Store */
/** @typedef {import('../tabs/Tabs.js').Tabs} Tabs */
/** @typedef {import('../Clock.js').Clock} Clock */
/** @typedef {import('../net/HttpApi.js').HttpApi} HttpApi */
/** @typedef {import('../events/ClientEvents.js').ClientEvent} ClientEvent */

/**
 * The signed-in user's tokens, as kept in the store.
 * @typedef {{userId: string, email?: string, accessToken: string, refreshToken: string, expiresAt: number}} Credentials
 */

/**
 * What the authenticator needs from its client.
 * @typedef {object} AuthenticatorHost
 * @property {Store} store
 * @property {Clock} clock
 * @property {HttpApi} http
 * @property {Tabs} tabs
 * @property {number} [tokenRefreshMargin] ms before the access token expires that it is refreshed. Default 60000
 * @property {(event: ClientEvent) => void} emit
 * @property {(event: {type: 'signedIn'} | {type: 'signedOut'}) => void} tellSession the leading tab's session, if this tab leads
 */

/**
 * Signing in and out, email verification, and access tokens kept fresh: the credentials live
 * in the store, so every tab of the store shares them.
 */
export class Authenticator {
    /** @param {AuthenticatorHost} host */
    constructor(host) {
        this.host = host;
        /** @type {Credentials | null} */
        this.credentials = null;
    }

    /** Reads the credentials from the store (at the start, and when another tab signed in). */
    async load() {
        this.credentials = (await this.host.store.getMeta('credentials')) ?? null;
    }

    /** Another tab signed out. */
    forget() {
        this.credentials = null;
    }

    /**
     * @param {'register' | 'login'} kind
     * @param {string} email
     * @param {string} password
     * @returns {Promise<string>} the user id
     */
    async signIn(kind, email, password) {
        const tokens = await this.host.http.signIn(kind, email, password);
        await this.#remember(tokens, email);
        this.host.tabs.broadcast({ type: 'signedIn' });
        this.host.tellSession({ type: 'signedIn' });
        return tokens.userId;
    }

    /**
     * @param {import('../net/HttpApi.js').Tokens} tokens
     * @param {string} [email]
     */
    async #remember(tokens, email) {
        this.credentials = {
            userId: tokens.userId, email: email ?? this.credentials?.email, accessToken: tokens.accessToken,
            refreshToken: tokens.refreshToken, expiresAt: this.host.clock.now() + tokens.expiresIn * 1000,
        };
        await this.host.store.setMeta({ credentials: this.credentials });
    }

    /**
     * Whether the account's email is verified: until it is, no rule or invitation that names
     * the email reaches this user (docs/SECURITY.md, "Identity").
     * @returns {Promise<boolean>}
     */
    async emailVerified() {
        return (await this.host.http.account(await this.signedInToken())).emailVerified === true;
    }

    /**
     * Mails a new verification code, replacing the last; `false` when the email is verified.
     * @returns {Promise<boolean>}
     */
    async sendVerificationCode() {
        return this.host.http.sendVerificationCode(await this.signedInToken());
    }

    /**
     * Verifies the account's email with the code mailed to it (`K7QM-4XPA`, any case).
     * @param {string} code
     */
    async verifyEmail(code) {
        await this.host.http.verifyEmail(await this.signedInToken(), code);
    }

    /** An access token, or the error that there is none now. */
    async signedInToken() {
        const token = await this.freshToken(false, null);
        if (!('token' in token)) throw new SyncError('signedOut' in token ? 'unauthenticated' : 'unavailable', 'not signed in now');
        return token.token;
    }

    /** Signs out: revokes the login on the server and forgets the credentials (the data stays). */
    async logout() {
        const refresh = this.credentials?.refreshToken;
        if (refresh) await this.host.http.logout(refresh).catch(() => undefined);
        this.credentials = null;
        await this.host.store.setMeta({ credentials: undefined });
        this.host.tabs.broadcast({ type: 'signedOut' });
        this.host.tellSession({ type: 'signedOut' });
    }

    /**
     * An access token valid for a while yet, refreshed when needed. One tab refreshes at a
     * time (a Web Lock), reading the stored tokens inside the lock: a tab that waited finds the
     * token another refreshed. A refresh that fails on the network keeps the credentials (the
     * server's refresh grace answers the same refresh token again); only the server's
     * `unauthenticated` signs the user out.
     * @param {boolean} refresh refresh even a token that looks valid (the server closed with 4001)
     * @param {string | null} usedToken the token the server refused
     * @returns {Promise<{token: string, expiresAt: number} | {signedOut: true} | {unavailable: true}>}
     */
    freshToken(refresh, usedToken) {
        const { store, clock, tabs } = this.host;
        return tabs.exclusive('auth', async () => {
            const credentials = (await store.getMeta('credentials').catch(() => null)) ?? this.credentials;
            if (!credentials) return { signedOut: /** @type {const} */ (true) };
            this.credentials = credentials;
            const margin = this.host.tokenRefreshMargin ?? 60_000;
            const valid = credentials.expiresAt - clock.now() > margin;
            if (valid && (!refresh || credentials.accessToken !== usedToken)) {
                return { token: credentials.accessToken, expiresAt: credentials.expiresAt };
            }
            try {
                const tokens = await this.host.http.refresh(credentials.refreshToken);
                await this.#remember(tokens);
                const fresh = /** @type {Credentials} */ (this.credentials);
                return { token: fresh.accessToken, expiresAt: fresh.expiresAt };
            } catch (error) {
                if (error instanceof SyncError && error.code === 'unauthenticated') {
                    this.credentials = null;
                    await store.setMeta({ credentials: undefined }).catch(() => undefined);
                    this.host.emit({ type: 'signedOut' });
                    tabs.broadcast({ type: 'event', event: { type: 'signedOut' } });
                    return { signedOut: /** @type {const} */ (true) };
                }
                return { unavailable: /** @type {const} */ (true) };
            }
        });
    }
}
