import { test } from 'node:test';
import assert from 'node:assert/strict';
import { computeView } from '../../src/logic/View.js';
import { planPage, planAck } from '../../src/logic/PagePlan.js';
import { QueryResult } from '../../src/logic/LiveQuery.js';

const P = 'conversation=c1';

test('the view is the server state with pending writes replayed; a write that no longer applies is left out; expired objects hide', () => {
    const server = [
        { collection: 'M', id: 'a', version: 3, body: { _id: 'a', partition: P, n: 1 } },
        { collection: 'M', id: 'gone', version: 4, body: null },
        { collection: 'M', id: 'old', version: 2, body: { _id: 'old', partition: P, '@expiresAt': '2020-01-01T00:00:00Z' } },
        { collection: 'M', id: 'later', version: 2, body: { _id: 'later', partition: P, '@expiresAt': '2030-01-01T00:00:00.000Z' } },
    ];
    const writes = [
        { operations: [{ op: 'increment', collection: 'M', id: 'a', path: 'n', by: 2 }] },
        { operations: [{ op: 'set', collection: 'M', id: 'missing', path: 'x', value: 1 }] },
        { operations: [{ op: 'put', collection: 'M', id: 'b', body: { n: 9 } }] },
    ];
    const now = Date.parse('2026-11-25T12:00:00Z');
    const view = computeView(P, server, /** @type {any} */ (writes), now);
    assert.deepEqual(view.objects.map((o) => [o.id, o.body.n]), [['a', 3], ['b', 9], ['later', undefined]]);
    assert.equal(view.nextExpiry, Date.parse('2030-01-01T00:00:00Z'));
});

test('a page plan: reset drops first, the cursor goes with the objects, an up-to-date version confirms acked writes', () => {
    const entries = [
        { seq: 1, requestId: 'r1', partition: P, operations: [], ackedVersion: 5, attempt: 0 },
        { seq: 2, requestId: 'r2', partition: P, operations: [], ackedVersion: 9, attempt: 0 },
        { seq: 3, requestId: 'r3', partition: P, operations: [], ackedVersion: null, attempt: 0 },
    ];
    const plan = planPage({
        type: 'changes', partition: P, reset: false, upToDate: true, cursor: 'c7', version: 7,
        objects: [{ collection: 'M', id: 'a', version: 7, deleted: true }],
    }, { partition: P, cursor: 'c6', confirmedVersion: 6, open: true }, entries);
    assert.deepEqual(plan.confirmed, [1]);
    assert.deepEqual(plan.record, { partition: P, cursor: 'c7', confirmedVersion: 7, open: true });
    assert.deepEqual(plan.objects, [{ collection: 'M', id: 'a', version: 7, body: null }]);
    const partial = planPage({ type: 'changes', partition: P, reset: true, upToDate: false, cursor: 'c1', objects: [] }, undefined, entries);
    assert.equal(partial.reset, true);
    assert.deepEqual(partial.confirmed, []);
    assert.equal(planAck({ partition: P, cursor: null, confirmedVersion: 7, open: true }, 9), 'keep');
    assert.equal(planAck({ partition: P, cursor: null, confirmedVersion: 9, open: true }, 9), 'forget');
    assert.equal(planAck({ partition: P, cursor: null, confirmedVersion: 0, open: false }, 9), 'forget');
});

test('a live query emits its first result, then only when the result changes', () => {
    const q = new QueryResult({ collection: 'M', where: (o) => String(o.body.text).includes('#q'), sortBy: (a, b) => a.body.t - b.body.t });
    const o = (/** @type {string} */ id, /** @type {string} */ text, /** @type {number} */ t, version = 1) => ({ collection: 'M', id, version, body: { text, t } });
    assert.deepEqual(q.update([]), []);
    assert.equal(q.update([o('a', 'plain', 0)]), undefined);
    assert.deepEqual(q.update([o('a', 'plain', 0), o('c', '#q later', 20)])?.map((x) => x.id), ['c']);
    assert.deepEqual(q.update([o('a', 'plain', 0), o('c', '#q later', 20), o('b', '#q first', 10)])?.map((x) => x.id), ['b', 'c']);
    assert.equal(q.update([o('a', 'plain edited', 0), o('c', '#q later', 20, 5), o('b', '#q first', 10)]), undefined, 'a version change alone emits nothing');
});
