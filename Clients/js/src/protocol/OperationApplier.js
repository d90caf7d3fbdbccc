import { SyncError } from './SyncError.js';
import { Path } from './Path.js';
import { checkObjectKey, objectKey } from './Partition.js';
import { isObject, isEquivalent, containsFields, copy, kindOf } from './json.js';

/** @typedef {import('./json.js').JSONValue} JSONValue */
/** @typedef {import('./json.js').JSONObject} JSONObject */

/**
 * An operation of the contract (docs/PROTOCOL.md, "Operations"), as it goes on the wire.
 * @typedef {{op: 'put', collection: string, id: string, body: JSONObject}
 *   | {op: 'set', collection: string, id: string, path: string, value: JSONValue}
 *   | {op: 'unset', collection: string, id: string, path: string}
 *   | {op: 'increment', collection: string, id: string, path: string, by: number}
 *   | {op: 'arrayAppend', collection: string, id: string, path: string, value: JSONValue}
 *   | {op: 'arrayRemove', collection: string, id: string, path: string, match: JSONValue}
 *   | {op: 'delete', collection: string, id: string}} Operation
 */

/**
 * What is stored under an object key: a body (live), `null` (deleted: a tombstone) or
 * `undefined` (absent: never stored).
 * @typedef {JSONObject | null | undefined} DocumentState
 */

/** The largest operation list of one upload (the server's limit). */
export const MAX_OPERATIONS = 1000;

/**
 * Checks an operation's shape (what the server would refuse as unreadable) and returns it.
 * @param {any} operation
 * @returns {Operation}
 */
export function checkOperation(operation) {
    if (!isObject(operation)) throw new SyncError('invalid_operation', 'an operation is an object');
    const { op, collection, id } = /** @type {any} */ (operation);
    checkObjectKey(/** @type {string} */ (collection), /** @type {string} */ (id));
    switch (op) {
        case 'put':
            if (!isObject(operation.body)) throw new SyncError('invalid_operation', "a put's body is an object");
            break;
        case 'delete':
            break;
        case 'set': case 'arrayAppend':
            Path.parse(operation.path);
            if (!('value' in operation)) throw new SyncError('invalid_operation', `${op} has a value`);
            break;
        case 'unset':
            Path.parse(operation.path);
            break;
        case 'increment':
            Path.parse(operation.path);
            if (typeof operation.by !== 'number' || !Number.isFinite(operation.by)) throw new SyncError('invalid_operation', "'by' is a number");
            break;
        case 'arrayRemove':
            Path.parse(operation.path);
            if (!('match' in operation)) throw new SyncError('invalid_operation', 'arrayRemove has a match');
            break;
        default:
            throw new SyncError('invalid_operation', `unknown op ${JSON.stringify(op)}`);
    }
    return /** @type {Operation} */ (operation);
}

/**
 * Applies operations of one partition to the states of the objects they touch, with the
 * server's rules (the same result the server computes: the SDK shows optimistic writes with it).
 * Pure: `current` is not changed.
 *
 * @param {string} partition
 * @param {readonly Operation[]} operations
 * @param {(key: string) => DocumentState} current the stored state of a key (`collection/id`)
 * @returns {Map<string, DocumentState>} the new state of every key whose state changed
 */
export function applyOperations(partition, operations, current) {
    if (operations.length > MAX_OPERATIONS) throw new SyncError('too_many_operations', `an upload has at most ${MAX_OPERATIONS} operations`);
    /** @type {Map<string, DocumentState>} */
    const working = new Map();
    const deletedHere = new Set();
    for (const operation of operations) {
        checkOperation(operation);
        const key = objectKey(operation.collection, operation.id);
        if (deletedHere.has(key)) continue;
        const state = working.has(key) ? working.get(key) : current(key);
        const next = applyOne(partition, operation, state);
        if (next === DROPPED) continue;
        working.set(key, next);
        if (operation.op === 'delete') deletedHere.add(key);
    }
    /** @type {Map<string, DocumentState>} */
    const changes = new Map();
    for (const [key, after] of working) {
        const before = current(key);
        if (after === null && before === undefined) continue;
        if (isEquivalentState(before, after)) continue;
        changes.set(key, after);
    }
    return changes;
}

/**
 * @param {DocumentState} a
 * @param {DocumentState} b
 */
function isEquivalentState(a, b) {
    if (a === undefined || b === undefined || a === null || b === null) return a === b;
    return isEquivalent(a, b);
}

const DROPPED = Symbol('dropped');

/**
 * @param {string} partition
 * @param {Operation} operation
 * @param {DocumentState} state
 * @returns {DocumentState | typeof DROPPED}
 */
function applyOne(partition, operation, state) {
    const name = `${operation.collection}/${operation.id}`;
    if (operation.op === 'put') {
        const body = operation.body;
        if ('_id' in body && body._id !== operation.id) {
            throw new SyncError('invalid_operation', `${name}: the body's _id ${JSON.stringify(body._id)} differs from the object id`);
        }
        if ('partition' in body && body.partition !== partition) {
            throw new SyncError('partition_mismatch', `${name}: the body names partition ${JSON.stringify(body.partition)}, the upload is for ${partition}`);
        }
        /** @type {JSONObject} */
        const merged = state ? copy(state) : {};
        for (const [field, value] of Object.entries(body)) merged[field] = copy(value);
        merged._id = operation.id;
        merged.partition = partition;
        return merged;
    }
    if (operation.op === 'delete') return state ? null : DROPPED;
    if (state === undefined) throw new SyncError('not_found', `${name} does not exist; create it with 'put' first`);
    if (state === null) return DROPPED;
    const path = Path.parse(operation.path);
    const top = path.topLevelField;
    if (top === '_id' || top === 'partition') {
        throw new SyncError('immutable_field', `${name}: '${top}' is set by the server and cannot be changed`);
    }
    /** @type {{root: JSONValue}} */
    const holder = { root: copy(state) };
    editPath(name, path, holder, 'root', 0, operation);
    return /** @type {JSONObject} */ (holder.root);
}

/**
 * Edits the slot `container[slot]` following `path.components[position…]`.
 * @param {string} name
 * @param {Path} path
 * @param {any} container
 * @param {string | number} slot
 * @param {number} position
 * @param {Operation} operation
 */
function editPath(name, path, container, slot, position, operation) {
    const creates = operation.op === 'set' || operation.op === 'increment' || operation.op === 'arrayAppend';
    const component = path.components[position];
    const value = container[slot];
    const last = position === path.components.length - 1;
    const prefix = () => new Path(path.components.slice(0, position)).toString();
    /**
     * @param {string} code
     * @param {string} message
     */
    const fail = (code, message) => new SyncError(code, `${name}: ${message}`);
    if ('field' in component) {
        if (!isObject(value)) throw fail('type_mismatch', `'${prefix()}' is not an object`);
        const has = Object.prototype.hasOwnProperty.call(value, component.field);
        if (last) {
            const result = editValue(name, path, operation, has ? value[component.field] : undefined);
            if (result === undefined) delete value[component.field];
            else value[component.field] = result;
            return;
        }
        if (!has) {
            if (!creates) return;
            const next = path.components[position + 1];
            if (!('field' in next)) throw fail('path_not_found', `there is no array at '${new Path(path.components.slice(0, position + 1))}'`);
            value[component.field] = {};
        }
        editPath(name, path, value, component.field, position + 1, operation);
        return;
    }
    if (!Array.isArray(value)) throw fail('type_mismatch', `'${prefix()}' is not an array`);
    let index;
    if ('index' in component) {
        index = component.index;
        if (index >= value.length) {
            if (creates) throw fail('path_not_found', `index ${index} is beyond the ${value.length} elements of '${prefix()}'`);
            return;
        }
    } else {
        const { field, value: wanted } = component.match;
        index = value.findIndex((element) => isObject(element) && element[field] === wanted);
        if (index < 0) {
            if (creates) throw fail('path_not_found', `no element of '${prefix()}' has ${field} = ${JSON.stringify(wanted)}`);
            return;
        }
    }
    if (last) {
        const result = editValue(name, path, operation, value[index]);
        if (result === undefined) value.splice(index, 1);
        else value[index] = result;
        return;
    }
    editPath(name, path, value, index, position + 1, operation);
}

/**
 * The new value of the addressed slot, `undefined` to remove it.
 * @param {string} name
 * @param {Path} path
 * @param {Operation} operation
 * @param {JSONValue | undefined} current
 * @returns {JSONValue | undefined}
 */
function editValue(name, path, operation, current) {
    switch (operation.op) {
        case 'set': return copy(operation.value);
        case 'unset': return undefined;
        case 'increment': {
            const base = current === undefined ? 0 : current;
            if (typeof base !== 'number') throw new SyncError('type_mismatch', `${name}: '${path}' is ${kindOf(base)}, not a number`);
            const sum = base + operation.by;
            if (!Number.isFinite(sum)) throw new SyncError('invalid_operation', `${name}: incrementing '${path}' leaves the range of numbers`);
            return sum;
        }
        case 'arrayAppend':
            if (current === undefined) return [copy(operation.value)];
            if (!Array.isArray(current)) throw new SyncError('type_mismatch', `${name}: '${path}' is ${kindOf(current)}, not an array`);
            return [...current, copy(operation.value)];
        case 'arrayRemove': {
            if (current === undefined) return undefined;
            if (!Array.isArray(current)) throw new SyncError('type_mismatch', `${name}: '${path}' is ${kindOf(current)}, not an array`);
            const match = operation.match;
            return current.filter((element) => (isObject(match) ? !containsFields(element, match) : !isEquivalent(element, match)));
        }
        default:
            throw new SyncError('invalid_operation', 'put and delete have no path');
    }
}
