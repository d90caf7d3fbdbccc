import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Outbox } from '../../src/logic/Outbox.js';
import { seededRandom, seed } from './seed.js';

/** @param {number} seq @param {number | null} [acked] */
const entry = (seq, acked = null) => ({ seq, requestId: `r${seq}`, partition: 'user=a', operations: [], ackedVersion: acked, attempt: 0 });

test('a new session sends the oldest unanswered write first and subscribes once it is answered', () => {
    const o = new Outbox();
    o.setQueue([entry(1), entry(2)], [], 0);
    const first = o.sessionStarted(0);
    assert.deepEqual(first.map((a) => a.type), ['upload']);
    assert.equal(o.holdFor, 'r1');
    const after = o.answered('r1', 'acknowledged', 1);
    assert.deepEqual(after.map((a) => a.type), ['subscribeAll', 'upload']);
    assert.equal(/** @type {any} */ (after[1]).entry.requestId, 'r2');
    o.setQueue([entry(1, 5), entry(2)], [], 1);
    assert.deepEqual(o.tick(2).map((a) => a.type), [], 'r2 is in flight');
});

test('blobs go before writes; an unanswered upload drops the connection; a transient error retries later', () => {
    const o = new Outbox({ uploadTimeout: 100, retryDelay: 50 });
    o.setQueue([entry(1)], ['sha256:x'], 0);
    const started = o.sessionStarted(0);
    assert.deepEqual(started, [{ type: 'uploadBlob', digest: 'sha256:x' }]);
    o.blobs = [];
    assert.deepEqual(o.blobDone('sha256:x', 'stored', 1).map((a) => a.type), ['upload']);
    assert.deepEqual(o.answered('r1', 'transient', 10).map((a) => a.type), ['subscribeAll']);
    assert.equal(o.nextDeadline(), 60);
    assert.deepEqual(o.tick(59), []);
    assert.deepEqual(o.tick(60).map((a) => a.type), ['upload']);
    assert.deepEqual(o.tick(160), [{ type: 'dropConnection', reason: 'an upload went unanswered' }]);
});

test(`randomized: one thing in flight, writes sent in order, each until answered (seed ${seed})`, () => {
    const random = seededRandom(seed);
    const o = new Outbox({ uploadTimeout: 1000, retryDelay: 10 });
    /** @type {ReturnType<typeof entry>[]} */
    let queue = [];
    let nextSeq = 1;
    let now = 0;
    /** @type {string[]} */
    const sentOrder = [];
    const answeredIds = new Set();
    /** @param {any[]} actions */
    const run = (actions) => {
        for (const a of actions) {
            if (a.type === 'upload') {
                assert.ok(!answeredIds.has(a.entry.requestId), `answered ${a.entry.requestId} is not sent again`);
                const oldest = queue.find((e) => e.ackedVersion === null);
                assert.equal(a.entry.requestId, oldest?.requestId, 'the oldest unanswered goes');
                sentOrder.push(a.entry.requestId);
            }
        }
    };
    for (let step = 0; step < 2000; step++) {
        now += Math.floor(random() * 20);
        const r = random();
        if (r < 0.3) {
            queue.push(entry(nextSeq++));
            run(o.setQueue(queue, [], now));
        } else if (r < 0.4) {
            run(o.sessionStarted(now));
        } else if (r < 0.45) {
            run(o.sessionEnded());
        } else if (r < 0.85 && o.inFlight?.kind === 'upload') {
            const id = o.inFlight.requestId;
            const outcome = random() < 0.7 ? 'acknowledged' : random() < 0.5 ? 'rejected' : 'transient';
            if (outcome !== 'transient') {
                answeredIds.add(id);
                queue = queue.filter((e) => e.requestId !== id);
                run(o.setQueue(queue, [], now));
            }
            run(o.answered(id, outcome, now));
        } else {
            run(o.tick(now));
        }
        assert.ok(o.inFlight === null || o.online, 'nothing in flight offline');
    }
    // Drain: online, answer everything.
    run(o.sessionStarted(now));
    while (o.inFlight) {
        const id = /** @type {any} */ (o.inFlight).requestId;
        answeredIds.add(id);
        queue = queue.filter((e) => e.requestId !== id);
        run(o.setQueue(queue, [], now));
        run(o.answered(id, 'acknowledged', now));
    }
    assert.equal(queue.length, 0, 'every write was answered');
});
