/** @typedef {{[field: string]: any}} JSONObject a JSON object (its values JSON values) */
/** @typedef {null | boolean | number | string | any[] | JSONObject} JSONValue */

/**
 * @param {unknown} value
 * @returns {value is JSONObject}
 */
export function isObject(value) {
    return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Equality of JSON values as the server's `arrayRemove` sees it (numbers by value, objects
 * by fields whatever their order).
 * @param {unknown} a
 * @param {unknown} b
 * @returns {boolean}
 */
export function isEquivalent(a, b) {
    if (a === b) return true;
    if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => isEquivalent(x, b[i]));
    if (isObject(a) && isObject(b)) {
        const keys = Object.keys(a);
        return keys.length === Object.keys(b).length && keys.every((k) => Object.prototype.hasOwnProperty.call(b, k) && isEquivalent(a[k], b[k]));
    }
    return false;
}

/**
 * Whether `value` is an object with every field of `pattern` (equivalent): `arrayRemove`'s
 * match rule when `match` is an object.
 * @param {unknown} value
 * @param {JSONObject} pattern
 */
export function containsFields(value, pattern) {
    if (!isObject(value)) return false;
    return Object.keys(pattern).every((k) => Object.prototype.hasOwnProperty.call(value, k) && isEquivalent(value[k], pattern[k]));
}

/**
 * A deep copy of a JSON value.
 * @template T
 * @param {T} value
 * @returns {T}
 */
export function copy(value) {
    return value === undefined ? value : JSON.parse(JSON.stringify(value));
}

/** @param {unknown} value */
export function kindOf(value) {
    if (value === null) return 'null';
    if (Array.isArray(value)) return 'an array';
    switch (typeof value) {
        case 'boolean': return 'a boolean';
        case 'number': return 'a number';
        case 'string': return 'a string';
        default: return 'an object';
    }
}
