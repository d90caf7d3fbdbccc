// The open room: its people, its messages (pending ones marked), pictures as object URLs.
import { el, byId } from './dom.js';
import { people } from './CouchChatDocuments.js';

/**
 * @typedef {{id: string, title: string, room: any | null, chats: {id: string, body: any}[], pending: Set<string>}} RoomState
 */

export class RoomView {
    /**
     * @param {import('/sdk/js/index.js').SyncClient} client
     * @param {(email: string) => string} nameOf the nickname of a user, or their email
     */
    constructor(client, nameOf) {
        this.client = client;
        this.nameOf = nameOf;
        /** @type {Map<string, Promise<string>>} object URLs of downloaded pictures, by digest */
        this.pictures = new Map();
    }

    /** @param {RoomState} state @param {string} me */
    render(state, me) {
        byId('room-title').textContent = state.room?.title ?? state.title;
        byId('room').dataset.roomId = state.id;
        const who = people(state.room);
        byId('people').replaceChildren(
            ...who.owners.map((e) => el('li', { className: 'owner', text: `${this.nameOf(e)} (owner)`, dataset: { email: e } })),
            ...who.members.map((e) => el('li', { className: 'member', text: this.nameOf(e), dataset: { email: e } })),
            ...who.invited.map((e) => el('li', { className: 'invited', text: `${e} (invited)`, dataset: { email: e } })),
            ...who.declined.map((d) => el('li', { className: 'declined', text: `${d.email}: ${d.reason}`, dataset: { email: d.email } })),
        );
        const list = byId('messages');
        const atBottom = list.scrollHeight - list.scrollTop - list.clientHeight < 40;
        list.replaceChildren(...state.chats.map((chat) => this.message(state.id, chat, state.pending.has(chat.id), me)));
        if (atBottom) list.scrollTop = list.scrollHeight;
    }

    /** @param {string} roomId @param {{id: string, body: any}} chat @param {boolean} pending @param {string} me */
    message(roomId, chat, pending, me) {
        const body = chat.body;
        const time = new Date(body.created_at);
        const item = el('li', {
            className: [body.author === me ? 'mine' : '', pending ? 'pending' : ''].join(' ').trim(),
            dataset: { chatId: chat.id, pending: String(pending), author: String(body.author) },
        }, [
            el('div', { className: 'meta' }, [
                el('span', { className: 'author', text: this.nameOf(String(body.author)) }),
                el('time', { datetime: String(body.created_at), text: isNaN(time.getTime()) ? '' : time.toLocaleTimeString() }),
                pending ? el('span', { className: 'state', text: 'pending' }) : null,
            ]),
            body.markdown ? el('p', { className: 'text', text: String(body.markdown) }) : null,
        ]);
        if (body.photo && typeof body.photo === 'object') item.append(this.picture(roomId, body.photo));
        return item;
    }

    /**
     * An image filled in once the picture is downloaded (or read from the cache).
     * @param {string} roomId
     * @param {any} photo
     */
    picture(roomId, photo) {
        const image = /** @type {HTMLImageElement} */ (el('img', { className: 'photo', alt: `picture, ${photo.length} bytes`, dataset: { digest: String(photo['@blob']) } }));
        const digest = String(photo['@blob']);
        let url = this.pictures.get(digest);
        if (!url) {
            url = this.client.blob(photo, `room=${roomId}`).then((blob) => URL.createObjectURL(blob));
            this.pictures.set(digest, url);
            // Not downloadable now (offline): try again at the next render.
            url.catch(() => this.pictures.delete(digest));
        }
        url.then((src) => { image.src = src; image.dataset.loaded = 'true'; }, () => { image.alt = `picture, ${photo.length} bytes (not downloaded yet)`; });
        return image;
    }
}
