import { SyncError } from './SyncError.js';
import { isObject } from './json.js';

/**
 * A reference from a body to a blob, as written into the body (docs/PROTOCOL.md, "Blobs").
 * @typedef {{'@blob': string, length: number, contentType: string}} BlobReference
 */

const DIGEST = /^sha256:[0-9a-f]{64}$/;

/** @param {unknown} digest */
export function isDigest(digest) {
    return typeof digest === 'string' && DIGEST.test(digest);
}

/**
 * Checks a reference object and returns it; `invalid_blob_reference` otherwise.
 * @param {unknown} value
 * @returns {BlobReference}
 */
export function checkBlobReference(value) {
    if (!isObject(value)) throw new SyncError('invalid_blob_reference', 'a blob reference is an object');
    const { '@blob': digest, length, contentType } = value;
    if (!isDigest(digest)) throw new SyncError('invalid_blob_reference', "a blob reference's '@blob' is sha256: and 64 lowercase hex digits");
    if (typeof length !== 'number' || !Number.isInteger(length) || length < 0) {
        throw new SyncError('invalid_blob_reference', "a blob reference has a non-negative integer 'length'");
    }
    const typeBytes = typeof contentType === 'string' ? new TextEncoder().encode(contentType).length : 0;
    if (typeBytes < 1 || typeBytes > 255) throw new SyncError('invalid_blob_reference', "a blob reference has a 'contentType' of 1 to 255 bytes");
    if (Object.keys(value).length !== 3) throw new SyncError('invalid_blob_reference', "a blob reference has only '@blob', 'length' and 'contentType'");
    return /** @type {BlobReference} */ (value);
}

/**
 * Every blob reference in a JSON value, in document order.
 * @param {unknown} value
 * @returns {BlobReference[]}
 */
export function blobReferences(value) {
    /** @type {BlobReference[]} */
    const found = [];
    /** @param {unknown} v */
    const visit = (v) => {
        if (Array.isArray(v)) v.forEach(visit);
        else if (isObject(v)) {
            if ('@blob' in v) found.push(checkBlobReference(v));
            else Object.values(v).forEach(visit);
        }
    };
    visit(value);
    return found;
}

/**
 * The digest of bytes, `sha256:<hex>`, with WebCrypto.
 * @param {ArrayBuffer | Uint8Array} bytes
 * @returns {Promise<string>}
 */
export async function digestOf(bytes) {
    const hash = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
    let hex = '';
    for (const byte of hash) hex += byte.toString(16).padStart(2, '0');
    return `sha256:${hex}`;
}
