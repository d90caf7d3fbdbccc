// CouchChat's documents, exactly as the Swift model (Sources/CouchChat/Model.swift) and the
// terminal client (Sources/CouchChatClient) write them: the same collections, partitions,
// fields and ids. The server checks every write (CouchChatValidator); these only build them.

/** @typedef {import('/sdk/js/protocol/OperationApplier.js').Operation} Operation */
/** @typedef {import('/sdk/js/protocol/json.js').JSONObject} JSONObject */

export const PROFILES = 'profiles=all';

/** @param {string} id */
export const roomPartition = (id) => `room=${id}`;

/** @param {string} userId */
export const userPartition = (userId) => `user=${userId}`;

/**
 * A profile's id: `profile:<email, lowercased>`.
 * @param {string} email
 */
export const profileId = (email) => `profile:${email.toLowerCase()}`;

/**
 * A new room owned by `owner`, inviting `invitees` (the friend bot lets in those whose profile
 * accepts the owner). Its id is a lowercase UUID, also its `channel_id` and partition's value.
 * @param {string} title
 * @param {string} owner
 * @param {string[]} invitees
 * @returns {{id: string, operations: Operation[]}}
 */
export function newRoom(title, owner, invitees) {
    const id = crypto.randomUUID().toLowerCase();
    /** @type {JSONObject} */
    const body = { type: 'room', channel_id: id, title, owners: [owner] };
    if (invitees.length) body.pendingMembers = invitees;
    return { id, operations: [{ op: 'put', collection: 'room', id, body }] };
}

/**
 * A chat message by `author` in room `roomId`, with a picture when `photo` (a blob reference) is given.
 * @param {string} roomId
 * @param {string} author
 * @param {string} markdown
 * @param {import('/sdk/js/protocol/BlobReference.js').BlobReference | null} photo
 * @returns {{id: string, operations: Operation[]}}
 */
export function newChat(roomId, author, markdown, photo) {
    const id = crypto.randomUUID().toUpperCase();
    /** @type {JSONObject} */
    const body = { type: 'chat', channel_id: roomId, author, created_at: new Date().toISOString(), markdown };
    if (photo) body.photo = photo;
    return { id, operations: [{ op: 'put', collection: 'chat', id, body }] };
}

/**
 * Lists `email` in the room's `pendingMembers`.
 * @param {any} room a room body
 * @param {string} roomId
 * @param {string} email
 * @returns {Operation[]}
 */
export function inviteOperations(room, roomId, email) {
    return Array.isArray(room.pendingMembers)
        ? [{ op: 'arrayAppend', collection: 'room', id: roomId, path: 'pendingMembers', value: email }]
        : [{ op: 'set', collection: 'room', id: roomId, path: 'pendingMembers', value: [email] }];
}

/**
 * Leaving a room, as `couchchat leave` does: a member removes themselves from the members
 * (the one change a member may make); an owner from the owners and members, the room passing
 * to another owner or its first member, and going when nobody is left.
 * @param {any} room a room body
 * @param {string} roomId
 * @param {string} me
 * @returns {Operation[]}
 */
export function leaveOperations(room, roomId, me) {
    const owners = /** @type {string[]} */ (room.owners ?? []);
    const members = /** @type {string[]} */ (room.members ?? []);
    if (!owners.includes(me)) return [{ op: 'arrayRemove', collection: 'room', id: roomId, path: 'members', match: me }];
    const otherOwners = owners.filter((o) => o !== me);
    const otherMembers = members.filter((m) => m !== me);
    const heir = otherOwners[0] ?? otherMembers[0];
    if (!heir) return [{ op: 'delete', collection: 'room', id: roomId }];
    return [
        { op: 'set', collection: 'room', id: roomId, path: 'owners', value: otherOwners.length ? otherOwners : [heir] },
        { op: 'set', collection: 'room', id: roomId, path: 'members', value: otherMembers.length ? otherMembers : null },
    ];
}

/**
 * Writes the user's profile fields; a profile not in the local copy yet is put whole.
 * @param {any | null} profile the profile body, if known
 * @param {string} email
 * @param {{nick: string, anyone: boolean, from: string[]}} fields
 * @returns {Operation[]}
 */
export function profileOperations(profile, email, fields) {
    const id = profileId(email);
    const values = {
        nick: fields.nick || null,
        acceptsAnyInvitation: fields.anyone ? true : null,
        acceptsInvitationsFrom: fields.from.length ? fields.from : null,
    };
    if (!profile) return [{ op: 'put', collection: 'profile', id, body: { type: 'profile', email, ...values } }];
    return Object.entries(values).map(([path, value]) => ({ op: 'set', collection: 'profile', id, path, value }));
}

/**
 * Who is in a room, and how.
 * @param {any} room
 */
export function people(room) {
    const owners = /** @type {string[]} */ (room?.owners ?? []);
    const members = /** @type {string[]} */ (room?.members ?? []).filter((m) => !owners.includes(m));
    return {
        owners, members,
        invited: /** @type {string[]} */ (room?.pendingMembers ?? []),
        declined: /** @type {{email: string, reason: string}[]} */ (room?.declinedInvitations ?? []),
    };
}
