// CouchChat in the browser, on the PartitionSync JavaScript SDK: the user's room list
// (`user=<id>`, kept by the server), every profile (`profiles=all`), and each room's partition
// (`room=<id>`: the room and its chats), all live and offline-first. Writes show at once and
// are queued; the server refuses what the rules forbid, and the SDK puts things back.
import { byId, emails } from './dom.js';
import {
    PROFILES, roomPartition, userPartition, profileId, newRoom, newChat, inviteOperations, leaveOperations, profileOperations,
} from './CouchChatDocuments.js';
import { RoomView } from './RoomView.js';
import { ReadMarks, renderRoomList } from './RoomListView.js';

/** @typedef {import('./RoomView.js').RoomState} RoomState */
/** @typedef {import('/sdk/js/SyncClient.js').PartitionSnapshot} PartitionSnapshot */
/** @typedef {import('/sdk/js/SyncClient.js').ClientEvent} ClientEvent */

export class CouchChatApp {
    /** @param {import('/sdk/js/index.js').SyncClient} client */
    constructor(client) {
        this.client = client;
        /** @type {{id: string, email: string} | null} */
        this.me = null;
        /** @type {{id: string, title: string}[]} the server's room list */
        this.listed = [];
        /** @type {Map<string, RoomState & {opened: boolean, stop: () => void}>} rooms followed */
        this.rooms = new Map();
        /** @type {Map<string, any>} profiles by email */
        this.profiles = new Map();
        /** @type {string | null} */
        this.selected = null;
        /** @type {(() => void)[]} */
        this.stops = [];
        this.view = new RoomView(client, (email) => this.nameOf(email));
        /** @type {ReadMarks | null} */
        this.marks = null;
    }

    start() {
        this.client.on((event) => this.onEvent(event));
        this.showStatus(this.client.status);
        this.wire();
        if (this.client.userId) void this.enter(); else this.showSignIn();
    }

    // MARK: Signing in

    showSignIn() {
        this.leaveChat();
        byId('verify').hidden = true;
        byId('signin').hidden = false;
        byId('chat').hidden = true;
        for (const id of ['profile-button', 'signout']) byId(id).hidden = true;
        byId('me').textContent = '';
    }

    /** @param {'register' | 'login'} kind */
    async signIn(kind) {
        const email = String(byId('email').value).trim().toLowerCase();
        const password = String(byId('password').value);
        try {
            if (kind === 'register') await this.client.register(email, password);
            else await this.client.login(email, password);
            byId('password').value = '';
            await this.enter();
        } catch (error) {
            this.notify(error);
        }
    }

    async enter() {
        const userId = /** @type {string} */ (this.client.userId);
        this.me = { id: userId, email: String(this.client.credentials?.email ?? '').toLowerCase() };
        this.marks = new ReadMarks(userId);
        byId('signin').hidden = true;
        byId('chat').hidden = false;
        for (const id of ['profile-button', 'signout']) byId(id).hidden = false;
        byId('me').textContent = this.me.email;
        document.body.dataset.user = this.me.email;
        void this.checkVerified();
        await this.client.openPartition(userPartition(userId));
        await this.client.openPartition(PROFILES);
        this.stops.push(this.client.observe(userPartition(userId), (snapshot) => {
            const list = snapshot.objects.find((o) => o.collection === 'room_list' && o.id === userId);
            this.listed = /** @type {any} */ (list?.body.rooms ?? []);
            void this.followRooms();
        }));
        this.stops.push(this.client.observe(PROFILES, (snapshot) => {
            this.profiles = new Map(snapshot.objects.filter((o) => o.collection === 'profile').map((o) => [String(o.body.email).toLowerCase(), o.body]));
            if (!byId('profile').hidden && byId('profile').dataset.known !== 'true') this.fillProfile();
            this.renderAll();
        }));
    }

    /**
     * Asks the server whether the email is verified (when it verifies emails: docs/SECURITY.md,
     * "Identity") and shows the code form until it is. Offline, it asks again later.
     */
    async checkVerified() {
        try {
            byId('verify').hidden = await this.client.emailVerified();
        } catch {
            // Offline or signed out: the form stays as it was.
        }
    }

    async verify() {
        try {
            await this.client.verifyEmail(String(byId('verify-code').value));
            byId('verify-code').value = '';
            byId('verify').hidden = true;
        } catch (error) {
            this.notify(error);
        }
    }

    async resendCode() {
        try {
            if (!(await this.client.sendVerificationCode())) byId('verify').hidden = true;
        } catch (error) {
            this.notify(error);
        }
    }

    leaveChat() {
        for (const stop of this.stops.splice(0)) stop();
        for (const room of this.rooms.values()) room.stop();
        this.rooms.clear();
        this.selected = null;
        this.me = null;
    }

    // MARK: Rooms

    /** Rooms made here that the server's list does not name yet (offline, or the trigger still at work). */
    get madeHere() {
        try { return /** @type {{id: string, title: string}[]} */ (JSON.parse(localStorage.getItem(`couchchat:made:${this.me?.id}`) ?? '[]')); } catch { return []; }
    }

    /** @param {{id: string, title: string}[]} rooms */
    set madeHere(rooms) {
        localStorage.setItem(`couchchat:made:${this.me?.id}`, JSON.stringify(rooms));
    }

    /**
     * Follows the rooms of the list (and those made here), stops following the others. A room
     * made here is shown from the local copy (its pending writes) and opened (subscribed) only
     * once the server lists it: until its document is written, nobody may read it.
     */
    async followRooms() {
        const listedIds = new Set(this.listed.map((r) => r.id));
        this.madeHere = this.madeHere.filter((r) => !listedIds.has(r.id));
        const wanted = new Map([...this.madeHere, ...this.listed].map((r) => [r.id, r]));
        for (const [id, room] of this.rooms) {
            if (wanted.has(id)) continue;
            room.stop();
            this.rooms.delete(id);
            await this.client.closePartition(roomPartition(id));
            if (this.selected === id) this.select(null);
        }
        for (const [id, entry] of wanted) {
            let state = this.rooms.get(id);
            if (!state) {
                /** @type {RoomState & {opened: boolean, stop: () => void}} */
                const made = { id, title: entry.title, room: null, chats: [], pending: new Set(), opened: false, stop: () => undefined };
                made.stop = this.client.observe(roomPartition(id), (snapshot) => void this.roomChanged(made, snapshot));
                this.rooms.set(id, made);
                state = made;
            }
            state.title = entry.title;
            if (listedIds.has(id) && !state.opened) {
                state.opened = true;
                await this.client.openPartition(roomPartition(id));
            }
        }
        this.renderAll();
    }

    /** @param {RoomState} state @param {PartitionSnapshot} snapshot */
    async roomChanged(state, snapshot) {
        state.room = snapshot.objects.find((o) => o.collection === 'room' && o.id === state.id)?.body ?? null;
        state.chats = snapshot.objects.filter((o) => o.collection === 'chat')
            .map((o) => ({ id: o.id, body: o.body }))
            .sort((a, b) => String(a.body.created_at).localeCompare(String(b.body.created_at)) || a.id.localeCompare(b.id));
        state.pending = await this.pendingChats(roomPartition(state.id));
        if (this.rooms.get(state.id) === state) this.renderAll();
    }

    /**
     * Ids of the chats whose writes the server has not answered yet.
     * @param {string} partition
     */
    async pendingChats(partition) {
        const { entries } = await this.client.store.queue();
        const ids = new Set();
        for (const entry of entries) {
            if (entry.partition !== partition || entry.ackedVersion !== null) continue;
            for (const operation of entry.operations) if (operation.collection === 'chat') ids.add(operation.id);
        }
        return ids;
    }

    /** @param {string | null} roomId */
    select(roomId) {
        this.selected = roomId;
        byId('profile').hidden = true;
        document.body.classList.toggle('in-room', roomId !== null);
        byId('back').hidden = roomId === null;
        this.renderAll();
    }

    renderAll() {
        void this.showOutbox();
        if (!this.me || !this.marks) return;
        const me = this.me.email;
        const marks = this.marks;
        const selected = this.selected ? this.rooms.get(this.selected) : undefined;
        if (selected && document.visibilityState === 'visible') marks.read(selected.id, selected.chats);
        const rooms = [...this.rooms.values()].sort((a, b) => (a.room?.title ?? a.title).localeCompare(b.room?.title ?? b.title));
        renderRoomList(rooms, this.selected, (room) => marks.unread(room.id, room.chats, me), (id) => this.select(id));
        byId('room').hidden = !selected || !byId('profile').hidden;
        if (selected) this.view.render(selected, me);
    }

    /** @param {string} email */
    nameOf(email) {
        const nick = this.profiles.get(email)?.nick;
        return typeof nick === 'string' && nick.length ? `${nick} <${email}>` : email;
    }

    // MARK: Writing

    /**
     * Runs a write, showing what the client refuses locally (the server's refusals come as events).
     * @param {() => Promise<unknown>} body
     */
    async attempt(body) {
        try {
            await body();
            return true;
        } catch (error) {
            this.notify(error);
            return false;
        }
    }

    async createRoom() {
        const me = /** @type {{id: string, email: string}} */ (this.me);
        const title = String(byId('new-room-title').value).trim();
        if (!title) return;
        const { id, operations } = newRoom(title, me.email, emails(String(byId('new-room-invitees').value)));
        this.madeHere = [...this.madeHere, { id, title }];
        if (await this.attempt(() => this.client.write(roomPartition(id), operations))) {
            byId('new-room').reset();
            await this.followRooms();
            this.select(id);
        }
    }

    async send() {
        const me = /** @type {{id: string, email: string}} */ (this.me);
        const roomId = this.selected;
        if (!roomId) return;
        const text = String(byId('message').value);
        const file = /** @type {File | undefined} */ (byId('photo').files?.[0]);
        if (!text.trim() && !file) return;
        const sent = await this.attempt(async () => {
            // The picture's bytes are kept and uploaded before the message that shows them.
            const photo = file ? await this.client.attach(file, file.type || 'application/octet-stream') : null;
            const { operations } = newChat(roomId, me.email, text, photo);
            await this.client.write(roomPartition(roomId), operations);
        });
        if (sent) byId('composer').reset();
    }

    async invite() {
        const state = this.selected ? this.rooms.get(this.selected) : undefined;
        const email = emails(String(byId('invite-email').value))[0];
        if (!state?.room || !email) return;
        if (await this.attempt(() => this.client.write(roomPartition(state.id), inviteOperations(state.room, state.id, email)))) {
            byId('invite').reset();
        }
    }

    async leave() {
        const me = /** @type {{id: string, email: string}} */ (this.me);
        const state = this.selected ? this.rooms.get(this.selected) : undefined;
        if (!state?.room) return;
        if (await this.attempt(() => this.client.write(roomPartition(state.id), leaveOperations(state.room, state.id, me.email)))) {
            this.madeHere = this.madeHere.filter((r) => r.id !== state.id);
            this.select(null);
        }
    }

    // MARK: The profile

    /** Fills the profile form from the user's profile (made by the server at registration: it may not be here yet). */
    fillProfile() {
        const me = /** @type {{id: string, email: string}} */ (this.me);
        const profile = this.profiles.get(me.email);
        byId('nick').value = profile?.nick ?? '';
        byId('accept-anyone').checked = profile?.acceptsAnyInvitation === true;
        byId('accept-from').value = (profile?.acceptsInvitationsFrom ?? []).join(', ');
        byId('profile').dataset.known = String(profile !== undefined);
    }

    showProfile() {
        this.fillProfile();
        byId('profile').hidden = false;
        byId('room').hidden = true;
        document.body.classList.add('in-room');
        byId('back').hidden = false;
    }

    async saveProfile() {
        const me = /** @type {{id: string, email: string}} */ (this.me);
        const fields = { nick: String(byId('nick').value).trim(), anyone: Boolean(byId('accept-anyone').checked), from: emails(String(byId('accept-from').value)) };
        const profile = (await this.client.objects(PROFILES)).find((o) => o.collection === 'profile' && o.id === profileId(me.email))?.body ?? null;
        if (await this.attempt(() => this.client.write(PROFILES, profileOperations(profile, me.email, fields)))) {
            byId('profile-save').dataset.saved = 'true';
            this.select(this.selected);
        }
    }

    // MARK: Events

    /** @param {ClientEvent} event */
    onEvent(event) {
        switch (event.type) {
            case 'status':
                this.showStatus(event.status);
                if (event.status === 'online' && this.me && !byId('verify').hidden) void this.checkVerified();
                break;
            case 'rejected':
                // The SDK already put the touched objects back as the server has them.
                this.notify({ code: event.code, message: `not saved: ${event.message}` });
                byId('notice').dataset.requestId = event.requestId;
                void this.forgetRefusedRoom(event.partition);
                break;
            case 'unsubscribed': {
                const id = event.partition.startsWith('room=') ? event.partition.slice('room='.length) : null;
                if (id && this.rooms.has(id)) {
                    this.notify({ code: event.code, message: `you are no longer in ${this.rooms.get(id)?.room?.title ?? id}` });
                    this.listed = this.listed.filter((r) => r.id !== id);
                    this.madeHere = this.madeHere.filter((r) => r.id !== id);
                    void this.followRooms();
                }
                break;
            }
            case 'signedOut': this.showSignIn(); break;
            case 'error': case 'blobRefused': this.notify(event); break;
            case 'storeFailed': this.notify({ code: 'store_failed', message: `${event.what}: ${event.message}` }); break;
            default: break;
        }
    }

    /** How many writes (and pictures) wait for the server. */
    async showOutbox() {
        const count = await this.client.unacknowledgedWrites().catch(() => 0);
        const node = byId('outbox');
        node.dataset.count = String(count);
        node.textContent = count ? `${count} unsent` : '';
        node.hidden = count === 0;
    }

    /**
     * A room made here whose creation the server refused is gone: stop showing it.
     * @param {string} partition
     */
    async forgetRefusedRoom(partition) {
        const id = partition.startsWith('room=') ? partition.slice('room='.length) : null;
        if (!id || !this.madeHere.some((r) => r.id === id)) return;
        const objects = await this.client.objects(partition);
        if (objects.some((o) => o.collection === 'room' && o.id === id)) return;
        this.madeHere = this.madeHere.filter((r) => r.id !== id);
        await this.followRooms();
    }

    /** @param {string} status */
    showStatus(status) {
        void this.showOutbox();
        const node = byId('status');
        node.dataset.status = status;
        node.textContent = status;
    }

    /**
     * Shows an error or refusal with its code.
     * @param {any} error
     */
    notify(error) {
        const code = typeof error?.code === 'string' ? error.code : 'error';
        const message = typeof error?.message === 'string' ? error.message : String(error);
        byId('notice-text').textContent = `${code}: ${message}`;
        byId('notice').dataset.code = code;
        byId('notice').hidden = false;
    }

    // MARK: Controls

    wire() {
        /** @param {string} id @param {string} type @param {(event: Event) => unknown} handler */
        const on = (id, type, handler) => byId(id).addEventListener(type, (/** @type {Event} */ event) => {
            if (type === 'submit') event.preventDefault();
            void handler(event);
        });
        on('signin-form', 'submit', () => this.signIn('login'));
        on('register', 'click', () => {
            if (byId('signin-form').reportValidity()) void this.signIn('register');
        });
        on('signout', 'click', async () => { await this.client.logout(); this.showSignIn(); });
        on('verify', 'submit', () => this.verify());
        on('verify-resend', 'click', () => this.resendCode());
        on('new-room', 'submit', () => this.createRoom());
        on('composer', 'submit', () => this.send());
        on('invite', 'submit', () => this.invite());
        on('leave', 'click', () => this.leave());
        on('profile-button', 'click', () => this.showProfile());
        on('profile-form', 'submit', () => this.saveProfile());
        on('profile-close', 'click', () => this.select(this.selected));
        on('back', 'click', () => this.select(null));
        on('notice-close', 'click', () => { byId('notice').hidden = true; delete byId('notice').dataset.code; });
        document.addEventListener('visibilitychange', () => this.renderAll());
    }
}
