import { test } from 'node:test';
import assert from 'node:assert/strict';
import { applyOperations } from '../../src/protocol/OperationApplier.js';
import { Path } from '../../src/protocol/Path.js';
import { checkPartition } from '../../src/protocol/Partition.js';

const P = 'user=ann';

/** @param {Record<string, any>} states @param {any[]} ops */
function apply(states, ops) {
    return applyOperations(P, ops, (key) => states[key]);
}

test('put creates with _id and partition, and merges top-level fields into a live object', () => {
    let out = apply({}, [{ op: 'put', collection: 'Note', id: 'n1', body: { text: 'a', stars: 1 } }]);
    assert.deepEqual(out.get('Note/n1'), { text: 'a', stars: 1, _id: 'n1', partition: P });
    out = apply({ 'Note/n1': { _id: 'n1', partition: P, text: 'a', stars: 1 } }, [{ op: 'put', collection: 'Note', id: 'n1', body: { text: 'b' } }]);
    assert.deepEqual(out.get('Note/n1'), { _id: 'n1', partition: P, text: 'b', stars: 1 });
});

test('set creates missing fields; increment adds; arrayAppend and arrayRemove by value and by fields', () => {
    const s = { 'U/u': { _id: 'u', partition: P, list: [{ id: 'c1', n: 1 }, { id: 'c2', n: 2 }] } };
    const out = apply(s, [
        { op: 'set', collection: 'U', id: 'u', path: 'prefs.name', value: 'Ann' },
        { op: 'increment', collection: 'U', id: 'u', path: 'list[id=c2].n', by: 5 },
        { op: 'increment', collection: 'U', id: 'u', path: 'count', by: 1 },
        { op: 'arrayAppend', collection: 'U', id: 'u', path: 'tags', value: 'x' },
        { op: 'arrayAppend', collection: 'U', id: 'u', path: 'tags', value: 'y' },
        { op: 'arrayRemove', collection: 'U', id: 'u', path: 'tags', match: 'x' },
        { op: 'arrayRemove', collection: 'U', id: 'u', path: 'list', match: { id: 'c1' } },
    ]);
    assert.deepEqual(out.get('U/u'), { _id: 'u', partition: P, list: [{ id: 'c2', n: 7 }], prefs: { name: 'Ann' }, count: 1, tags: ['y'] });
    assert.equal(s['U/u'].list.length, 2, 'the input is not changed');
});

test('errors carry the server codes', () => {
    const s = { 'U/u': { _id: 'u', partition: P, text: 'hi', list: [] } };
    const code = (/** @type {any[]} */ ops, /** @type {any} */ states = s) => {
        try { apply(states, ops); } catch (e) { return /** @type {any} */ (e).code; }
        return 'none';
    };
    assert.equal(code([{ op: 'set', collection: 'U', id: 'x', path: 'a', value: 1 }]), 'not_found');
    assert.equal(code([{ op: 'set', collection: 'U', id: 'u', path: 'text.a', value: 1 }]), 'type_mismatch');
    assert.equal(code([{ op: 'increment', collection: 'U', id: 'u', path: 'text', by: 1 }]), 'type_mismatch');
    assert.equal(code([{ op: 'set', collection: 'U', id: 'u', path: 'list[0].a', value: 1 }]), 'path_not_found');
    assert.equal(code([{ op: 'set', collection: 'U', id: 'u', path: '_id', value: 'z' }]), 'immutable_field');
    assert.equal(code([{ op: 'put', collection: 'U', id: 'u', body: { partition: 'user=bob' } }]), 'partition_mismatch');
    assert.equal(code([{ op: 'put', collection: 'U', id: 'u', body: { _id: 'v' } }]), 'invalid_operation');
    assert.equal(code([{ op: 'set', collection: 'U', id: 'u', path: 'a..b', value: 1 }]), 'invalid_path');
    assert.equal(code([{ op: 'put', collection: '9U', id: 'u', body: {} }]), 'invalid_collection');
    assert.equal(code([{ op: 'unset', collection: 'U', id: 'u', path: 'nothing.here' }]), 'none');
});

test('a deleted object drops later edits; put brings it back; delete then edits in one upload', () => {
    assert.equal(apply({ 'U/u': null }, [{ op: 'set', collection: 'U', id: 'u', path: 'a', value: 1 }]).size, 0);
    const out = apply({ 'U/u': { _id: 'u', partition: P } }, [
        { op: 'delete', collection: 'U', id: 'u' },
        { op: 'put', collection: 'U', id: 'u', body: { a: 1 } },
    ]);
    assert.equal(out.get('U/u'), null);
    assert.equal(apply({}, [{ op: 'delete', collection: 'U', id: 'u' }]).size, 0, 'deleting nothing changes nothing');
});

test('paths parse and print, and builders keep ids as values', () => {
    assert.equal(Path.parse('conversations[id=c-42].unreadCount').toString(), 'conversations[id=c-42].unreadCount');
    assert.equal(Path.field('conversations').where('id', 'c.1').field('n').toString(), 'conversations[id=c.1].n');
    assert.throws(() => Path.field('a').where('id', 'x]y'), { code: 'invalid_path' });
    assert.throws(() => Path.parse('a[01]'), { code: 'invalid_path' });
    assert.throws(() => Path.parse('[0]'), { code: 'invalid_path' });
});

test('partitions are checked as the server does', () => {
    assert.equal(checkPartition('conversation=c-42'), 'conversation=c-42');
    for (const bad of ['nokey', 'A=b', 'a=', 'a=b=c', 'a=\u0001']) assert.throws(() => checkPartition(bad), { code: 'invalid_partition' });
});
