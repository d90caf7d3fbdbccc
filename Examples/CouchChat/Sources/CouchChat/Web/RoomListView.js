// The room list, each room with its count of messages from others since the user last read it.
import { el, byId } from './dom.js';

/** Where the user last read each room: the newest `created_at` seen, in this browser. */
export class ReadMarks {
    /** @param {string} userId */
    constructor(userId) {
        this.key = `couchchat:read:${userId}`;
        /** @type {Record<string, string>} */
        this.marks = {};
        try { this.marks = JSON.parse(localStorage.getItem(this.key) ?? '{}'); } catch { this.marks = {}; }
    }

    /**
     * Messages of others newer than the mark.
     * @param {string} roomId
     * @param {{body: any}[]} chats
     * @param {string} me
     */
    unread(roomId, chats, me) {
        const mark = this.marks[roomId] ?? '';
        return chats.filter((c) => c.body.author !== me && String(c.body.created_at) > mark).length;
    }

    /** @param {string} roomId @param {{body: any}[]} chats */
    read(roomId, chats) {
        const newest = chats.reduce((max, c) => (String(c.body.created_at) > max ? String(c.body.created_at) : max), this.marks[roomId] ?? '');
        if (newest === (this.marks[roomId] ?? '')) return;
        this.marks[roomId] = newest;
        localStorage.setItem(this.key, JSON.stringify(this.marks));
    }
}

/**
 * @param {import('./RoomView.js').RoomState[]} rooms
 * @param {string | null} selected
 * @param {(room: import('./RoomView.js').RoomState) => number} unread
 * @param {(roomId: string) => void} open
 */
export function renderRoomList(rooms, selected, unread, open) {
    byId('no-rooms').hidden = rooms.length > 0;
    byId('rooms').replaceChildren(...rooms.map((room) => {
        const count = unread(room);
        const item = el('li', {
            className: [room.id === selected ? 'selected' : '', count > 0 ? 'unread' : ''].join(' ').trim(),
            dataset: { roomId: room.id, unread: String(count) }, tabindex: '0', role: 'button',
        }, [
            el('span', { className: 'title', text: room.room?.title ?? room.title }),
            count > 0 ? el('span', { className: 'badge', text: String(count), 'aria-label': `${count} unread` }) : null,
        ]);
        item.addEventListener('click', () => open(room.id));
        item.addEventListener('keydown', (event) => { if (event.key === 'Enter') open(room.id); });
        return item;
    }));
}
