// TouchWiki's documents, exactly as the Swift model (Sources/TouchWiki/Model.swift) and the
// terminal client (Sources/TouchWikiClient) write them: the same collections, partitions,
// fields and ids. The server checks every write (TouchWikiValidator); these only build them.
// `created_at` and `updated_at` are the server's: no write here carries them (a put keeps the
// fields it does not carry).
import { isPageName } from './Markdown.js';

/** @typedef {import('/sdk/js/protocol/OperationApplier.js').Operation} Operation */
/** @typedef {import('/sdk/js/protocol/json.js').JSONObject} JSONObject */

/** @param {string} userId `user=<userId>`: the user's list of wikis, kept by the server */
export const userPartition = (userId) => `user=${userId}`;

/** @param {string} wikiId `wiki=<wikiId>`: a wiki and its pages */
export const wikiPartition = (wikiId) => `wiki=${wikiId}`;

/**
 * A page's id: its wiki's id, a colon, its name (so a `[[link]]` names its page without a query).
 * @param {string} wikiId
 * @param {string} name
 */
export const pageId = (wikiId, name) => `${wikiId}:${name}`;

/**
 * The name of the page `id` of wiki `wikiId`, or `null` when the id is not one of its pages'.
 * @param {string} wikiId
 * @param {string} id
 */
export function pageName(wikiId, id) {
    return id.startsWith(`${wikiId}:`) ? id.slice(wikiId.length + 1) : null;
}

/** The longest wiki title, in characters (TouchWikiValidator.maximumTitleLength). */
export const MAXIMUM_TITLE_LENGTH = 200;

/**
 * Whether `text` names a user as TouchWiki does: an email address, lowercased.
 * @param {string} text
 */
export function isUserName(text) {
    const parts = text.split('@');
    return text.length <= 254 && text === text.toLowerCase() && parts.length === 2 && parts[0].length > 0 && parts[1].length > 0;
}

/**
 * A new wiki owned by `owner`: its id is a lowercase UUID, also its partition's value.
 * @param {string} title
 * @param {string} owner
 * @returns {{id: string, operations: Operation[]}}
 */
export function newWiki(title, owner) {
    const id = crypto.randomUUID().toLowerCase();
    return { id, operations: [{ op: 'put', collection: 'wiki', id, body: { type: 'wiki', title, owner_id: owner } }] };
}

/**
 * The page `name` of wiki `wikiId` with this text (a new page, or the new text of one).
 * @param {string} wikiId
 * @param {string} name
 * @param {string} markdown
 * @returns {Operation[]}
 */
export function pageOperations(wikiId, name, markdown) {
    if (!isPageName(name)) throw new RangeError(`not a page name: ${JSON.stringify(name)}`);
    return [{ op: 'put', collection: 'page', id: pageId(wikiId, name), body: { type: 'page', wiki_id: wikiId, markdown } }];
}

/**
 * Adds (or with `adding` false, removes) a member, as `touchwiki add-member` does: a put of
 * the members only. Only the owner may (the server refuses anyone else).
 * @param {any} wiki the wiki's body
 * @param {string} wikiId
 * @param {string} email
 * @param {boolean} adding
 * @returns {Operation[]}
 */
export function memberOperations(wiki, wikiId, email, adding) {
    const name = email.trim().toLowerCase();
    const members = /** @type {string[]} */ (Array.isArray(wiki?.members) ? wiki.members : []).filter((m) => m !== name);
    if (adding) members.push(name);
    return [{ op: 'put', collection: 'wiki', id: wikiId, body: { members } }];
}

/**
 * A new page's text: its name as a heading.
 * @param {string} name
 */
export const newPageText = (name) => `# ${name}\n`;
