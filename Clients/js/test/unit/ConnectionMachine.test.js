import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConnectionMachine } from '../../src/logic/ConnectionMachine.js';
import { reconnectDelay } from '../../src/logic/Backoff.js';

const types = (/** @type {any[]} */ actions) => actions.map((a) => a.type);

test('backoff doubles from the base up to the cap, jittered within [0.5, 1)', () => {
    const delays = { base: 250, maximum: 30_000 };
    assert.equal(reconnectDelay(1, delays, () => 0), 125);
    assert.equal(reconnectDelay(3, delays, () => 0), 500);
    assert.equal(reconnectDelay(40, delays, () => 0.999999), 30_000);
    for (let n = 1; n < 20; n++) assert.ok(reconnectDelay(n, delays, () => 0.5) <= 30_000);
});

test('connects: token, socket, auth as the first message, ready; then pings and replaces a silent connection', () => {
    const m = new ConnectionMachine({ pingInterval: 1000, pongTimeout: 500 }, () => 0);
    assert.deepEqual(types(m.start(0)), ['status', 'fetchToken']);
    const open = m.tokenReady(0, 'tok', 1_000_000);
    assert.deepEqual(open, [{ type: 'openSocket', generation: 1 }]);
    assert.deepEqual(m.socketOpened(1, 1), [{ type: 'send', message: { type: 'auth', token: 'tok' } }]);
    assert.deepEqual(types(m.messageReceived(2, 1, { type: 'ready', userId: 'u' })), ['status', 'sessionStarted']);
    assert.equal(m.status, 'online');
    assert.equal(m.nextDeadline(), 1002);
    assert.deepEqual(m.tick(1002), [{ type: 'send', message: { type: 'ping', nonce: 1 } }]);
    assert.deepEqual(m.messageReceived(1100, 1, { type: 'pong', nonce: 1 }), []);
    m.tick(2002); // second ping
    const dropped = m.tick(2502); // no answer for the pong timeout
    assert.deepEqual(types(dropped), ['closeSocket', 'sessionEnded', 'status']);
    assert.equal(m.phase, 'waiting');
    assert.deepEqual(m.socketClosed(2503, 1, 1006), [], 'events of the old socket are ignored');
});

test('failures back off exponentially; a session that reached ready starts over from the base delay', () => {
    const m = new ConnectionMachine({ reconnectDelay: 100, maximumReconnectDelay: 1000 }, () => 0.999);
    m.start(0);
    m.tokenReady(0, 't', 1e12);
    m.socketClosed(10, 1, 1006);
    assert.equal(m.retryAt, 10 + 100);
    assert.deepEqual(types(m.tick(110)), ['status', 'fetchToken']);
    m.tokenReady(110, 't', 1e12);
    m.socketClosed(120, 2, 1006);
    assert.equal(m.retryAt, 120 + 200);
    m.tick(320);
    m.tokenReady(320, 't', 1e12);
    m.socketOpened(321, 3);
    m.messageReceived(322, 3, { type: 'ready', userId: 'u' });
    m.socketClosed(400, 3, 1001);
    assert.equal(m.retryAt, 400 + 100);
});

test('4001 refreshes the token before the next attempt; the token is refreshed on an open session and sent with auth', () => {
    const m = new ConnectionMachine({ tokenRefreshMargin: 60_000, pingInterval: 1e9 }, () => 0);
    m.start(0);
    m.tokenReady(0, 't1', 100_000);
    m.socketOpened(1, 1);
    m.messageReceived(2, 1, { type: 'ready', userId: 'u' });
    assert.equal(m.nextDeadline(), 40_000);
    assert.deepEqual(m.tick(40_000), [{ type: 'fetchToken', refresh: true }]);
    assert.deepEqual(m.tokenReady(40_001, 't2', 200_000), [{ type: 'send', message: { type: 'auth', token: 't2' } }]);
    assert.equal(m.phase, 'online');
    m.socketClosed(50_000, 1, 4001);
    const again = m.tick(/** @type {number} */ (m.retryAt));
    assert.deepEqual(again.at(-1), { type: 'fetchToken', refresh: true });
});

test('without credentials it waits for a sign-in; a failed refresh on an open session is tried again later', () => {
    const m = new ConnectionMachine({ tokenRefreshMargin: 10, reconnectDelay: 100, pingInterval: 1e9 }, () => 0);
    m.start(0);
    assert.deepEqual(m.tokenMissing(0, true), [{ type: 'status', status: 'offline' }]);
    assert.equal(m.phase, 'signedOut');
    assert.deepEqual(types(m.signedIn(5)), ['status', 'fetchToken']);
    m.tokenReady(5, 't', 1000);
    m.socketOpened(6, 1);
    m.messageReceived(7, 1, { type: 'ready', userId: 'u' });
    assert.deepEqual(m.tick(990), [{ type: 'fetchToken', refresh: true }]);
    assert.deepEqual(m.tokenMissing(991, false), []);
    assert.deepEqual(m.tick(992), [], 'not at once');
    assert.deepEqual(m.tick(991 + 800), [{ type: 'fetchToken', refresh: true }]);
});
