import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SyncClient } from '../../src/SyncClient.js';
import { MemoryStore } from '../../src/store/MemoryStore.js';
import { ManualClock } from '../../src/Clock.js';
import { FakeServer } from './FakeServer.js';

const P = 'user=u1';
const WAIT = 5000;

/** A fetch that answers sign-in, refresh and blob uploads. @param {FakeServer} server */
function fakeFetch(server) {
    /** @type {typeof fetch} */
    const f = async (input, init) => {
        const url = String(input);
        if (url.includes('/v1/auth/')) {
            return new Response(JSON.stringify({ userId: 'u1', accessToken: 'a', refreshToken: 'r', expiresIn: 900 }), { status: 200 });
        }
        if (url.includes('/v1/blobs/') && init?.method === 'PUT') {
            server.blobs.add(url.split('/v1/blobs/')[1]);
            return new Response('{}', { status: 201 });
        }
        if (url.includes('/v1/blobs/')) {
            assert.ok(url.includes(`?partition=${encodeURIComponent(P)}`), 'a blob is read through a partition');
            return new Response(server.blobBodies.get(url.split('/v1/blobs/')[1].split('?')[0]) ?? 'not the bytes', { status: 200 });
        }
        return new Response('{}', { status: 404 });
    };
    return f;
}

/** @param {FakeServer} server @param {MemoryStore} [store] */
async function makeClient(server, store = new MemoryStore()) {
    const clock = new ManualClock(Date.parse('2026-11-25T12:00:00Z'));
    const client = await SyncClient.open({
        serverURL: 'http://127.0.0.1:1', store, clock, random: () => 0.5,
        webSocket: (url) => server.socket(url), fetch: fakeFetch(server),
    });
    if (!client.userId) await client.login('ann@example.com', 'correct horse');
    return { client, clock, store };
}

/** @param {SyncClient} client */
const counter = async (client) => (await client.objects(P)).find((o) => o.id === 'c')?.body.n;

test('an offline write shows at once and is applied exactly once when the server comes back', async () => {
    const server = new FakeServer();
    server.online = false;
    const { client, clock } = await makeClient(server);
    const room = await client.openPartition(P);
    await room.write([{ op: 'put', collection: 'Counter', id: 'c', body: { n: 0 } }]);
    await room.write([{ op: 'increment', collection: 'Counter', id: 'c', path: 'n', by: 1 }]);
    assert.equal(await counter(client), 1);
    server.online = true;
    clock.advance(60_000);
    assert.ok(await client.waitUntil(async () => (await client.unacknowledgedWrites()) === 0 && client.isUpToDate(P), WAIT));
    assert.equal(server.partition(P).objects.get('Counter/c').body.n, 1);
    assert.ok([...server.applied.values()].every((n) => n === 1));
    assert.equal(await counter(client), 1);
    client.close();
});

test('an upload whose ack was lost is sent again, applied once, and never shown twice', async () => {
    const server = new FakeServer();
    const { client, clock } = await makeClient(server);
    const room = await client.openPartition(P);
    await room.write([{ op: 'put', collection: 'Counter', id: 'c', body: { n: 0 } }]);
    assert.ok(await client.waitUntil(async () => (await client.unacknowledgedWrites()) === 0, WAIT));
    server.dropAckOnce = true;
    await room.write([{ op: 'increment', collection: 'Counter', id: 'c', path: 'n', by: 1 }]);
    assert.ok(await client.waitUntil(() => client.status === 'offline', WAIT));
    /** @type {number[]} */
    const seen = [];
    room.subscribe((s) => seen.push(s.objects.find((o) => o.id === 'c')?.body.n));
    clock.advance(60_000);
    assert.ok(await client.waitUntil(async () => (await client.unacknowledgedWrites()) === 0 && client.isUpToDate(P), WAIT));
    assert.equal(server.partition(P).objects.get('Counter/c').body.n, 1);
    assert.ok(seen.every((n) => n === 1), `never shown twice: ${seen}`);
    client.close();
});

test('a refused write is rolled back to the server state and reported with its code', async () => {
    const server = new FakeServer();
    const { client } = await makeClient(server);
    /** @type {any[]} */
    const events = [];
    client.on((e) => events.push(e));
    const room = await client.openPartition(P);
    await room.write([{ op: 'put', collection: 'Note', id: 'n', body: { text: 'kept' } }]);
    assert.ok(await client.waitUntil(async () => (await client.unacknowledgedWrites()) === 0, WAIT));
    server.refuse = () => ({ code: 'validation_failed' });
    const id = await room.write([{ op: 'set', collection: 'Note', id: 'n', path: 'text', value: 'refused' }]);
    assert.equal((await room.object('Note', 'n'))?.body.text, 'refused');
    assert.ok(await client.waitUntil(() => events.some((e) => e.type === 'rejected' && e.requestId === id && e.code === 'validation_failed'), WAIT));
    assert.equal((await room.object('Note', 'n'))?.body.text, 'kept');
    client.close();
});

test('blob_missing: the client uploads the bytes it holds and sends the write again under a new request id', async () => {
    const server = new FakeServer();
    const { client } = await makeClient(server);
    const room = await client.openPartition(P);
    const reference = await client.attach(new TextEncoder().encode('a photo'), 'image/jpeg');
    assert.ok(await client.waitUntil(async () => (await client.unacknowledgedWrites()) === 0, WAIT));
    assert.ok(server.blobs.has(reference['@blob']));
    server.blobs.clear();
    // The server forgot who holds it: the first upload citing it is refused.
    server.refuse = (upload) => (server.blobs.has(reference['@blob']) ? null : { code: 'blob_missing', details: { digests: [reference['@blob']] } });
    await room.write([{ op: 'put', collection: 'Note', id: 'p', body: { photo: reference } }]);
    assert.ok(await client.waitUntil(async () => (await client.unacknowledgedWrites()) === 0, WAIT));
    assert.ok(server.blobs.has(reference['@blob']), 'uploaded again');
    assert.deepEqual(server.partition(P).objects.get('Note/p').body.photo, reference);
    client.close();
});

test('a wiped store says so, starts over from the server and keeps the unanswered writes', async () => {
    const server = new FakeServer();
    const { client, store, clock } = await makeClient(server);
    /** @type {any[]} */
    const events = [];
    client.on((e) => events.push(e));
    const room = await client.openPartition(P);
    await room.write([{ op: 'put', collection: 'Note', id: 'a', body: { text: 'on the server' } }]);
    assert.ok(await client.waitUntil(async () => (await client.unacknowledgedWrites()) === 0, WAIT));
    server.online = false;
    server.dropAll();
    assert.ok(await client.waitUntil(() => client.status === 'offline', WAIT));
    await room.write([{ op: 'put', collection: 'Note', id: 'b', body: { text: 'queued' } }]);
    store.wipe();
    assert.ok(await client.waitUntil(() => events.some((e) => e.type === 'storeReset'), WAIT));
    server.online = true;
    clock.advance(60_000);
    assert.ok(await client.waitUntil(async () => (await room.objects()).length === 2 && (await client.unacknowledgedWrites()) === 0, WAIT));
    assert.equal(server.partition(P).objects.get('Note/b').body.text, 'queued');
    client.close();
});

test('a live query emits when its result changes, not on every change', async () => {
    const server = new FakeServer();
    const { client } = await makeClient(server);
    const room = await client.openPartition(P);
    /** @type {string[][]} */
    const results = [];
    room.query({ collection: 'M', where: (o) => String(o.body.text).includes('#q') }, (r) => results.push(r.map((o) => o.id)));
    assert.ok(await client.waitUntil(() => results.length === 1, WAIT));
    await room.write([{ op: 'put', collection: 'M', id: 'a', body: { text: 'plain' } }]);
    await room.write([{ op: 'put', collection: 'M', id: 'b', body: { text: '#q yes' } }]);
    assert.ok(await client.waitUntil(() => results.length >= 2, WAIT));
    assert.ok(await client.waitUntil(async () => (await client.unacknowledgedWrites()) === 0 && client.isUpToDate(P), WAIT));
    assert.deepEqual(results, [[], ['b']]);
    client.close();
});

test('a downloaded blob is checked against its digest, then cached', async () => {
    const server = new FakeServer();
    const { client } = await makeClient(server);
    const bytes = new TextEncoder().encode('the real bytes');
    const digest = await (await import('../../src/protocol/BlobReference.js')).digestOf(bytes);
    const reference = { '@blob': digest, length: bytes.length, contentType: 'text/plain' };
    await assert.rejects(client.blob(reference, P), { code: 'digest_mismatch' });
    server.blobBodies.set(digest, bytes);
    const blob = await client.blob(reference, P);
    assert.equal(await blob.text(), 'the real bytes');
    server.blobBodies.clear();
    assert.equal(await (await client.blob(reference, P)).text(), 'the real bytes', 'from the cache');
    client.close();
});

test('email verification: the account, a new code and a code entered go to their endpoints with the bearer token', async () => {
    const server = new FakeServer();
    /** @type {{path: string, method: string, auth: string | null, body: any}[]} */
    const seen = [];
    let verified = false;
    /** @type {typeof fetch} */
    const fetchFunction = async (input, init) => {
        const url = new URL(String(input));
        const headers = new Headers(init?.headers);
        seen.push({ path: url.pathname, method: init?.method ?? 'GET', auth: headers.get('Authorization'), body: init?.body ? JSON.parse(String(init.body)) : null });
        if (url.pathname === '/v1/auth/me') return new Response(JSON.stringify({ userId: 'u1', email: 'ann@example.com', emailVerified: verified }), { status: 200 });
        if (url.pathname === '/v1/auth/email/code') return new Response(JSON.stringify({ sent: !verified, emailVerified: verified }), { status: verified ? 200 : 202 });
        if (url.pathname === '/v1/auth/email/verify') {
            const body = JSON.parse(String(init?.body));
            if (body.code !== 'K7QM-4XPA') {
                return new Response(JSON.stringify({ error: { code: 'invalid_code', message: 'that is not the code', details: { attemptsLeft: 4 } } }), { status: 400 });
            }
            verified = true;
            return new Response(JSON.stringify({ userId: 'u1', email: 'ann@example.com', emailVerified: true }), { status: 200 });
        }
        return new Response(JSON.stringify({ userId: 'u1', accessToken: 'a', refreshToken: 'r', expiresIn: 900 }), { status: 200 });
    };
    const clock = new ManualClock(Date.parse('2026-11-25T12:00:00Z'));
    const client = await SyncClient.open({
        serverURL: 'http://127.0.0.1:1', store: new MemoryStore(), clock, random: () => 0.5,
        webSocket: (url) => server.socket(url), fetch: fetchFunction,
    });
    await client.register('ann@example.com', 'correct horse');
    assert.equal(await client.emailVerified(), false);
    assert.equal(await client.sendVerificationCode(), true);
    await assert.rejects(client.verifyEmail('AAAA-AAAA'), (/** @type {any} */ error) => error.code === 'invalid_code');
    await client.verifyEmail('K7QM-4XPA');
    assert.equal(await client.emailVerified(), true);
    assert.equal(await client.sendVerificationCode(), false);
    const calls = seen.filter((call) => call.path !== '/v1/auth/register');
    assert.deepEqual(calls.map((call) => `${call.method} ${call.path}`), [
        'GET /v1/auth/me', 'POST /v1/auth/email/code', 'POST /v1/auth/email/verify', 'POST /v1/auth/email/verify', 'GET /v1/auth/me', 'POST /v1/auth/email/code',
    ]);
    assert.ok(calls.every((call) => call.auth === 'Bearer a'));
    assert.deepEqual(calls[3].body, { code: 'K7QM-4XPA' });
    await client.close?.();
});

test('a reset replaces the local copy with the server state and keeps the pending writes, each applied once', async () => {
    const server = new FakeServer();
    const { client, clock } = await makeClient(server);
    const room = await client.openPartition(P);
    await room.write([{ op: 'put', collection: 'Counter', id: 'c', body: { n: 0 } }, { op: 'put', collection: 'Note', id: 'gone', body: { t: 'x' } }]);
    assert.ok(await client.waitUntil(async () => (await client.unacknowledgedWrites()) === 0 && client.isUpToDate(P), WAIT));
    // Offline, a write waits; meanwhile the server's history is replaced (a restored database):
    // the note is no longer there and the counter stands at 10.
    server.online = false;
    server.dropAll(1006);
    assert.ok(await client.waitUntil(() => client.status === 'offline', WAIT));
    await room.write([{ op: 'increment', collection: 'Counter', id: 'c', path: 'n', by: 1 }]);
    const p = server.partition(P);
    p.version += 1;
    p.objects.set('Counter/c', { collection: 'Counter', id: 'c', version: p.version, deleted: false, body: { _id: 'c', partition: P, n: 10 } });
    p.objects.delete('Note/gone');
    server.resetNext = true;
    server.online = true;
    clock.advance(60_000);
    assert.ok(await client.waitUntil(async () => (await client.unacknowledgedWrites()) === 0 && client.isUpToDate(P), WAIT));
    assert.equal(server.partition(P).objects.get('Counter/c').body.n, 11);
    assert.ok([...server.applied.values()].every((n) => n === 1));
    const objects = await client.objects(P);
    assert.equal(objects.find((o) => o.id === 'c')?.body.n, 11);
    assert.equal(objects.find((o) => o.id === 'gone'), undefined, 'the reset dropped what the server no longer has');
    client.close();
});

test('a catch-up in several pages reports its progress, then is up to date', async () => {
    const server = new FakeServer();
    const p = server.partition(P);
    for (let i = 0; i < 5; i += 1) {
        p.version += 1;
        p.objects.set(`Note/n${i}`, { collection: 'Note', id: `n${i}`, version: p.version, deleted: false, body: { _id: `n${i}`, partition: P, i } });
    }
    server.pageSize = 2;
    const { client } = await makeClient(server);
    /** @type {string[]} */
    const seen = [];
    client.observe(P, (snapshot) => { if (snapshot.progress) seen.push(`${snapshot.progress.received}/${snapshot.progress.total}`); });
    await client.openPartition(P);
    assert.ok(await client.waitUntil(() => client.isUpToDate(P), WAIT));
    assert.equal((await client.objects(P)).length, 5);
    assert.ok(seen.includes('2/5') && seen.includes('4/5'), `progress seen: ${seen}`);
    assert.equal((await client.snapshot(P)).progress, null, 'no progress once up to date');
    client.close();
});

/** Waits (bounded) until `condition` holds: for what the client does not announce (a request it made). @param {() => boolean} condition */
async function eventually(condition) {
    for (let waited = 0; waited < WAIT; waited += 10) {
        if (condition()) return true;
        await new Promise((resolve) => setTimeout(resolve, 10));
    }
    return condition();
}

test('a token refresh that fails on the network keeps the user signed in and is tried again with the same token; one the server refuses signs out', async () => {
    const server = new FakeServer();
    /** @type {string[]} refresh tokens presented */
    const presented = [];
    let refreshAnswer = 'network down';
    const base = fakeFetch(server);
    /** @type {typeof fetch} */
    const fetchFunction = async (input, init) => {
        if (String(input).includes('/v1/auth/refresh')) {
            presented.push(JSON.parse(String(init?.body)).refreshToken);
            if (refreshAnswer === 'network down') throw new TypeError('fetch failed');
            return new Response(JSON.stringify({ error: { code: 'unauthenticated', message: 'revoked' } }), { status: 401 });
        }
        return base(input, init);
    };
    const clock = new ManualClock(Date.parse('2026-11-25T12:00:00Z'));
    const client = await SyncClient.open({
        serverURL: 'http://127.0.0.1:1', store: new MemoryStore(), clock, random: () => 0.5,
        webSocket: (url) => server.socket(url), fetch: fetchFunction,
    });
    await client.login('ann@example.com', 'correct horse');
    /** @type {string[]} */
    const events = [];
    client.on((event) => events.push(event.type));
    await client.openPartition(P);
    assert.ok(await client.waitUntil(() => client.isUpToDate(P), WAIT));
    // The access token (900 s) comes within the refresh margin: the refresh fails on the network.
    clock.advance(850_000);
    assert.ok(await eventually(() => presented.length >= 1));
    // (the clock moves on in steps until the client tries again: its retry is scheduled once
    // the failure is handled, after the request was seen here)
    const later = () => { clock.advance(5_000); return false; };
    assert.ok(await eventually(() => presented.length >= 2 || later()), 'tried again');
    assert.equal(client.userId, 'u1', 'still signed in');
    assert.ok(!events.includes('signedOut'));
    assert.ok(presented.every((token) => token === 'r'), 'the same refresh token, which the server answers again within its grace');
    // The server refuses it (revoked): signed out, said once.
    refreshAnswer = 'unauthenticated';
    assert.ok(await eventually(() => client.userId === null || later()), `refreshes: ${presented.length}, user: ${client.userId}`);
    assert.ok(await eventually(() => events.includes('signedOut')));
    client.close();
});

test('downloaded blobs are kept within blobCacheBytes, the least recently used out first', async () => {
    const server = new FakeServer();
    const clock = new ManualClock(Date.parse('2026-11-25T12:00:00Z'));
    const client = await SyncClient.open({
        serverURL: 'http://127.0.0.1:1', store: new MemoryStore(), clock, random: () => 0.5, blobCacheBytes: 25,
        webSocket: (url) => server.socket(url), fetch: fakeFetch(server),
    });
    await client.login('ann@example.com', 'correct horse');
    const { digestOf } = await import('../../src/protocol/BlobReference.js');
    /** @param {string} text */
    const reference = async (text) => {
        const bytes = new TextEncoder().encode(text);
        const digest = await digestOf(bytes);
        server.blobBodies.set(digest, bytes);
        return { '@blob': digest, length: bytes.length, contentType: 'text/plain' };
    };
    const a = await reference('aaaaaaaaaa');
    const b = await reference('bbbbbbbbbb');
    const c = await reference('cccccccccc');
    await client.blob(a, P);
    clock.advance(1000);
    await client.blob(b, P);
    clock.advance(1000);
    await client.blob(a, P); // a is used again: b is now the least recently used
    clock.advance(1000);
    await client.blob(c, P); // 30 bytes > 25: one goes
    server.blobBodies.clear();
    assert.equal(await (await client.blob(a, P)).text(), 'aaaaaaaaaa', 'a is still cached');
    assert.equal(await (await client.blob(c, P)).text(), 'cccccccccc', 'c is still cached');
    await assert.rejects(client.blob(b, P), 'b was evicted and the server no longer has it');
    client.close();
});
