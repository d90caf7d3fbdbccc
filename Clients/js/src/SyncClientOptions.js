/** @typedef {import('./store/Store.js').Store} Store */
/** @typedef {import('./tabs/Tabs.js').Tabs} Tabs */
/** @typedef {import('./Clock.js').Clock} Clock */
/** @typedef {import('./Session.js').SocketLike} SocketLike */

/**
 * Options of {@link import('./SyncClient.js').SyncClient.open}. Every one but `serverURL` has a default.
 * @typedef {object} SyncClientOptions
 * @property {string} serverURL the server's base URL (`http://127.0.0.1:8080`; the page's origin when it serves the app)
 * @property {string} [storeName] the IndexedDB database, and the name tabs share a connection under. Default `psync`
 * @property {Store} [store] default an `IndexedDBStore` named `storeName`
 * @property {Tabs} [tabs] default `BrowserTabs` where Web Locks exist, else `SoloTabs`
 * @property {Clock} [clock] default the system clock
 * @property {() => number} [random] in [0, 1), for the reconnection jitter. Default `Math.random`
 * @property {(url: string) => SocketLike} [webSocket] default `new WebSocket(url)`
 * @property {typeof fetch} [fetch] default the global `fetch`
 * @property {number} [reconnectDelay] ms, first wait before reconnecting, doubled per failure with jitter. Default 250
 * @property {number} [maximumReconnectDelay] ms. Default 30000
 * @property {number} [pingInterval] ms. Default 20000 (the server closes sessions silent for 60 s)
 * @property {number} [pongTimeout] ms of silence after a ping that count as a dead connection. Default 10000
 * @property {number} [uploadTimeout] ms an upload may go unanswered before the connection is replaced. Default 30000
 * @property {number} [retryDelay] ms before an upload answered `unavailable` goes again. Default 1000
 * @property {number} [tokenRefreshMargin] ms before the access token expires that it is refreshed. Default 60000
 * @property {number} [maximumUploadBytes] the server's message limit. Default 16 MiB
 * @property {number} [maximumBlobBytes] the server's blob limit. Default 32 MiB
 * @property {number} [blobCacheBytes] downloaded blobs kept, least recently used out first. Default 100 MiB
 * @property {boolean} [autoStart] start connecting (or waiting to lead) at once. Default true
 */

export {};
