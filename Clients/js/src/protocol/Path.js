import { SyncError } from './SyncError.js';

/** @typedef {{field: string} | {index: number} | {match: {field: string, value: string}}} PathComponent */

const MAX_BYTES = 1024;
const MAX_COMPONENTS = 64;

/**
 * A path into an object body (docs/PROTOCOL.md, "Paths"): `a.b`, `list[3]`,
 * `conversations[id=c-42].unreadCount`. Build one from components (`Path.field('x').where('id', v)`)
 * so an id is a value, never path syntax.
 */
export class Path {
    /** @param {PathComponent[]} components */
    constructor(components) {
        if (components.length === 0 || !('field' in components[0])) throw new SyncError('invalid_path', 'a path starts with a field name');
        if (components.length > MAX_COMPONENTS) throw new SyncError('invalid_path', `a path has at most ${MAX_COMPONENTS} components`);
        for (const component of components) {
            if ('field' in component && (component.field === '' || /[.[\]]/.test(component.field))) {
                throw new SyncError('invalid_path', `a field name is not empty and holds no '.', '[' or ']': ${JSON.stringify(component.field)}`);
            }
            if ('index' in component && !(Number.isInteger(component.index) && component.index >= 0 && component.index <= 999999999)) {
                throw new SyncError('invalid_path', 'an index is a non-negative integer');
            }
            if ('match' in component) {
                const { field, value } = component.match;
                if (field === '' || value === '' || /[=[\]]/.test(field) || value.includes(']')) {
                    throw new SyncError('invalid_path', 'a selector is [field=value], with no ] in the value and no [, ] or = in the field');
                }
            }
        }
        /** @type {readonly PathComponent[]} */
        this.components = Object.freeze([...components]);
        const text = this.toString();
        if (new TextEncoder().encode(text).length > MAX_BYTES) throw new SyncError('invalid_path', `a path has at most ${MAX_BYTES} bytes`);
    }

    /** @param {string} name */
    static field(name) {
        return new Path([{ field: name }]);
    }

    /** @param {string} name */
    field(name) {
        return new Path([...this.components, { field: name }]);
    }

    /** @param {number} position */
    index(position) {
        return new Path([...this.components, { index: position }]);
    }

    /**
     * The first array element that is an object whose `field` is the string `value`.
     * @param {string} field
     * @param {string} value
     */
    where(field, value) {
        return new Path([...this.components, { match: { field, value } }]);
    }

    /** The top-level field the path changes. */
    get topLevelField() {
        return /** @type {{field: string}} */ (this.components[0]).field;
    }

    toString() {
        let text = '';
        for (const c of this.components) {
            if ('field' in c) text += text === '' ? c.field : '.' + c.field;
            else if ('index' in c) text += `[${c.index}]`;
            else text += `[${c.match.field}=${c.match.value}]`;
        }
        return text;
    }

    /**
     * Parses the path syntax; `invalid_path` with the offset of the problem.
     * @param {string} text
     * @returns {Path}
     */
    static parse(text) {
        if (typeof text !== 'string' || text === '') throw new SyncError('invalid_path', 'a path is a non-empty string');
        /** @type {PathComponent[]} */
        const components = [];
        let i = 0;
        /** @param {string} reason */
        const fail = (reason) => new SyncError('invalid_path', `${reason} at offset ${i} of path ${JSON.stringify(text)}`);
        const readName = () => {
            const start = i;
            while (i < text.length && text[i] !== '.' && text[i] !== '[' && text[i] !== ']') i++;
            return i > start ? text.slice(start, i) : null;
        };
        const first = readName();
        if (first === null) throw fail('expected a field name');
        components.push({ field: first });
        while (i < text.length) {
            if (text[i] === '.') {
                i++;
                const name = readName();
                if (name === null) throw fail('expected a field name');
                components.push({ field: name });
            } else if (text[i] === '[') {
                i++;
                const start = i;
                while (i < text.length && text[i] !== ']') i++;
                if (i >= text.length) throw fail("missing ']'");
                const selector = text.slice(start, i);
                i++;
                const equals = selector.indexOf('=');
                if (equals >= 0) {
                    const field = selector.slice(0, equals);
                    const value = selector.slice(equals + 1);
                    if (field === '' || value === '' || field.includes('[')) throw fail('a selector is [field=value]');
                    components.push({ match: { field, value } });
                } else {
                    if (!/^(0|[1-9][0-9]{0,8})$/.test(selector)) throw fail('an index is a non-negative integer without leading zeros');
                    components.push({ index: Number(selector) });
                }
            } else {
                throw fail("expected '.' or '['");
            }
        }
        if (new TextEncoder().encode(text).length > MAX_BYTES) throw new SyncError('invalid_path', `a path has at most ${MAX_BYTES} bytes`);
        if (components.length > MAX_COMPONENTS) throw new SyncError('invalid_path', `a path has at most ${MAX_COMPONENTS} components`);
        const path = Object.create(Path.prototype);
        path.components = Object.freeze(components);
        return path;
    }
}
