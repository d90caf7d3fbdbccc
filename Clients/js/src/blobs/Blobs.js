import { SyncError } from '../protocol/SyncError.js';
import { checkBlobReference, digestOf } from '../protocol/BlobReference.js';

/** @typedef {import('../store/Store.js').Store} Store */
/** @typedef {import('../Clock.js').Clock} Clock */
/** @typedef {import('../net/HttpApi.js').HttpApi} HttpApi */
/** @typedef {import('../protocol/BlobReference.js').BlobReference} BlobReference */

/**
 * What blobs need from their client.
 * @typedef {object} BlobsHost
 * @property {Store} store
 * @property {Clock} clock
 * @property {HttpApi} http
 * @property {number} [maximumBlobBytes] the server's blob limit. Default 32 MiB
 * @property {number} [blobCacheBytes] downloaded blobs kept, least recently used out first. Default 100 MiB
 * @property {() => Promise<{token: string, expiresAt: number} | {signedOut: true} | {unavailable: true}>} freshToken
 * @property {() => void} outboxChanged a blob waits for upload
 */

/**
 * Blobs: bytes attached (kept in the store and uploaded before the writes queued after them),
 * and bytes read through a partition (from the bounded cache, or downloaded with their digest
 * checked).
 */
export class Blobs {
    /** @param {BlobsHost} host */
    constructor(host) {
        this.host = host;
    }

    get #cacheBytes() {
        return this.host.blobCacheBytes ?? 100 << 20;
    }

    /**
     * Keeps bytes as a blob and returns the reference to put into a body. They are stored at
     * once and uploaded before any write queued after this call (after a reload too).
     * @param {ArrayBuffer | Uint8Array | Blob} data
     * @param {string} contentType
     * @returns {Promise<BlobReference>}
     */
    async attach(data, contentType) {
        const bytes = data instanceof Blob ? await data.arrayBuffer()
            : data instanceof Uint8Array ? data.slice().buffer : data.slice(0);
        const limit = this.host.maximumBlobBytes ?? 32 << 20;
        if (bytes.byteLength > limit) throw new SyncError('payload_too_large', `the blob is ${bytes.byteLength} bytes; the server takes at most ${limit}`);
        const reference = checkBlobReference({ '@blob': await digestOf(bytes), length: bytes.byteLength, contentType });
        await this.host.store.keepBlob(reference, bytes, true, this.host.clock.now());
        this.host.outboxChanged();
        return reference;
    }

    /**
     * A blob's bytes, read through a partition whose objects reference it: from the local
     * cache, or downloaded, checked against the digest and cached. `not_found` when the server
     * has no blob this user may read there; `unavailable` offline when not cached;
     * `digest_mismatch` when the bytes are not the blob's.
     * @param {BlobReference} reference
     * @param {string} partition
     * @returns {Promise<Blob>}
     */
    async blob(reference, partition) {
        const { store, clock } = this.host;
        checkBlobReference(reference);
        const digest = reference['@blob'];
        const cached = await store.blobBytes(digest, clock.now());
        if (cached) return new Blob([cached], { type: reference.contentType });
        const token = await this.host.freshToken();
        if (!('token' in token)) throw new SyncError('signedOut' in token ? 'unauthenticated' : 'unavailable', 'cannot download the blob now');
        const bytes = await this.host.http.getBlob(token.token, digest, partition);
        if ((await digestOf(bytes)) !== digest) throw new SyncError('digest_mismatch', `the downloaded bytes are not ${digest}`);
        await store.keepBlob(reference, bytes, false, clock.now());
        await store.evictBlobs(this.#cacheBytes);
        return new Blob([bytes], { type: reference.contentType });
    }

    /**
     * Uploads an attached blob (for the session, before the write that references it).
     * @param {string} digest
     * @returns {Promise<{outcome: 'stored' | 'refused' | 'failed', error?: SyncError}>}
     */
    async upload(digest) {
        const { store, clock } = this.host;
        const record = await store.blobRecord(digest);
        const bytes = await store.blobBytes(digest, clock.now());
        if (!record || !bytes) return { outcome: 'refused', error: new SyncError('not_found', `the bytes of ${digest} are gone from the local store`) };
        const token = await this.host.freshToken();
        if (!('token' in token)) return { outcome: 'failed' };
        try {
            const result = await this.host.http.putBlob(token.token, digest, bytes, record.contentType);
            if (result.outcome === 'stored') await store.evictBlobs(this.#cacheBytes);
            return result;
        } catch {
            return { outcome: 'failed' };
        }
    }

    /**
     * Pins blobs again for upload (the server answered `blob_missing`); `false` when the
     * bytes of one are not kept here.
     * @param {string[]} digests
     */
    async repin(digests) {
        const { store, clock } = this.host;
        for (const digest of digests) {
            const record = await store.blobRecord(digest);
            if (!record) return false;
        }
        for (const digest of digests) {
            const record = /** @type {import('../store/Store.js').BlobRecord} */ (await store.blobRecord(digest));
            await store.keepBlob({ '@blob': digest, length: record.length, contentType: record.contentType }, new ArrayBuffer(0), true, clock.now());
        }
        return true;
    }
}
