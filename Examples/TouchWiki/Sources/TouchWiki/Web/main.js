// TouchWiki's web app: one SyncClient for the page (its tabs share one connection), then the app.
import { SyncClient } from '/sdk/js/index.js';
import { TouchWikiApp } from './TouchWikiApp.js';

const client = await SyncClient.open({ serverURL: location.origin, storeName: 'touchwiki', maximumReconnectDelay: 5000 });
new TouchWikiApp(client).start();
document.body.dataset.ready = 'true';
void keepForOffline();

/**
 * Registers the service worker and caches every file of the app and the SDK this page loaded,
 * so a reload without the server still opens the app (its data is in IndexedDB already).
 */
async function keepForOffline() {
    if (!('serviceWorker' in navigator) || !('caches' in window)) return;
    try {
        await navigator.serviceWorker.register('/app/sw.js', { scope: '/app/' });
        await navigator.serviceWorker.ready;
        const loaded = performance.getEntriesByType('resource').map((entry) => new URL(entry.name))
            .filter((url) => url.origin === location.origin && (url.pathname.startsWith('/app/') || url.pathname.startsWith('/sdk/js/')))
            .map((url) => url.pathname);
        const cache = await caches.open('touchwiki-app');
        await cache.addAll([...new Set(['/app/', ...loaded])]);
        document.body.dataset.offline = 'ready';
    } catch {
        // Offline (the page came from the cache) or no service workers here: nothing to refresh.
    }
}
