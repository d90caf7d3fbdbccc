// TouchWiki's service worker: the app's files and the SDK's modules from the network while it
// answers (refreshing the cache), else from the cache, so the app opens offline and shows its
// stored wikis, drafts and queued edits. The page fills the cache with what it loaded (main.js).
/** @type {any} */
const worker = self;
const CACHE = 'touchwiki-app';

worker.addEventListener('install', () => worker.skipWaiting());
worker.addEventListener('activate', (/** @type {any} */ event) => event.waitUntil(worker.clients.claim()));
worker.addEventListener('fetch', (/** @type {any} */ event) => {
    /** @type {Request} */
    const request = event.request;
    const url = new URL(request.url);
    if (request.method !== 'GET' || url.origin !== worker.location.origin) return;
    if (!url.pathname.startsWith('/app/') && !url.pathname.startsWith('/sdk/js/')) return;
    event.respondWith(fetch(request).then(async (response) => {
        if (response.ok) await (await caches.open(CACHE)).put(request, response.clone());
        return response;
    }, async () => (await caches.match(request, { ignoreSearch: true })) ?? Response.error()));
});
