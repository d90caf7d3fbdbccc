/**
 * How the tabs of one store share one connection: one tab leads (it holds a Web Lock for as
 * long as it lives, owns the WebSocket and uploads the outbox); the others hear of its changes
 * and tell it of theirs over a BroadcastChannel. When the leader closes, its lock is released
 * and the next waiting tab takes over. In a context without Web Locks (Node, tests) the
 * client is alone: {@link SoloTabs}.
 *
 * @typedef {object} Tabs
 * @property {(onLeader: () => void) => void} campaign calls `onLeader` once this tab leads
 * @property {() => void} resign stops leading (or waiting to)
 * @property {(message: object) => void} broadcast to the other tabs (not this one)
 * @property {(listener: (message: any) => void) => void} onMessage
 * @property {<T>(name: string, body: () => Promise<T>) => Promise<T>} exclusive runs `body` while no other tab runs one under `name`
 * @property {() => void} close
 */

/** One tab alone: it leads at once; nothing to tell anyone. @implements {Tabs} */
export class SoloTabs {
    constructor() {
        /** @type {Map<string, Promise<unknown>>} */
        this.chains = new Map();
    }

    /** @param {() => void} onLeader */
    campaign(onLeader) {
        queueMicrotask(onLeader);
    }

    resign() {}

    /** @param {object} message */
    broadcast(message) { void message; }

    /** @param {(message: any) => void} listener */
    onMessage(listener) { void listener; }

    /**
     * @template T
     * @param {string} name
     * @param {() => Promise<T>} body
     * @returns {Promise<T>}
     */
    exclusive(name, body) {
        const previous = this.chains.get(name) ?? Promise.resolve();
        const next = previous.then(body, body);
        this.chains.set(name, next.catch(() => undefined));
        return next;
    }

    close() {}
}

/** The tabs of a browser: Web Locks and a BroadcastChannel, named after the store. @implements {Tabs} */
export class BrowserTabs {
    /** @param {string} name the store's name */
    constructor(name) {
        this.name = name;
        this.channel = new BroadcastChannel(`psync:${name}`);
        /** @type {((message: any) => void)[]} */
        this.listeners = [];
        this.channel.onmessage = (event) => {
            for (const listener of this.listeners) listener(event.data);
        };
        /** @type {(() => void) | null} */
        this.release = null;
        /** @type {AbortController | null} */
        this.waiting = null;
        this.closed = false;
    }

    /** Whether this browser has what it takes (Web Locks and BroadcastChannel). */
    static get available() {
        return typeof navigator !== 'undefined' && 'locks' in navigator && typeof BroadcastChannel !== 'undefined';
    }

    /** @param {() => void} onLeader */
    campaign(onLeader) {
        if (this.closed || this.waiting) return;
        const abort = new AbortController();
        this.waiting = abort;
        navigator.locks.request(`psync:${this.name}:leader`, { signal: abort.signal }, () => new Promise((resolve) => {
            this.waiting = null;
            this.release = () => resolve(undefined);
            onLeader();
        })).catch(() => { /* resigned while waiting */ });
    }

    resign() {
        this.waiting?.abort();
        this.waiting = null;
        this.release?.();
        this.release = null;
    }

    /** @param {object} message */
    broadcast(message) {
        if (!this.closed) this.channel.postMessage(message);
    }

    /** @param {(message: any) => void} listener */
    onMessage(listener) {
        this.listeners.push(listener);
    }

    /**
     * @template T
     * @param {string} name
     * @param {() => Promise<T>} body
     * @returns {Promise<T>}
     */
    exclusive(name, body) {
        return /** @type {Promise<T>} */ (navigator.locks.request(`psync:${this.name}:${name}`, body));
    }

    close() {
        this.resign();
        this.closed = true;
        this.channel.close();
    }
}
