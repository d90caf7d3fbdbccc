// TouchWiki in the browser, on the PartitionSync JavaScript SDK: the user's wiki list
// (`user=<id>`, kept by the server) and each wiki's partition (`wiki=<id>`: the wiki and its
// pages), live and offline-first. Pages are Markdown, drawn by Markdown.js as elements (never
// as HTML); an edit is a draft of the SDK, kept in this browser until it is published. Where
// the page is comes from the URL's hash (`#/w/<wiki>/p/<page>[/edit]`), so a reload stays there.
import { byId, el } from './dom.js';
import { renderMarkdown, isPageName } from './Markdown.js';
import {
    userPartition, wikiPartition, pageId, pageName, newWiki, pageOperations, memberOperations, newPageText, isUserName,
} from './TouchWikiDocuments.js';

/** @typedef {import('/sdk/js/SyncClient.js').PartitionSnapshot} PartitionSnapshot */
/** @typedef {import('/sdk/js/SyncClient.js').ClientEvent} ClientEvent */

/**
 * A wiki followed: the server's list entry (or the one made here), its document and pages as
 * this browser shows them, the pages with a draft here and with writes not yet answered.
 * @typedef {{id: string, title: string, wiki: any | null, pages: Map<string, any>, drafts: Set<string>,
 *   pending: Set<string>, opened: boolean, stop: () => void}} WikiState
 */

/** @typedef {{wikiId: string | null, page: string | null, editing: boolean}} Route */

/** The page a wiki opens on. */
export const HOME = 'Home';

/**
 * The route in a location hash: `#/w/<wikiId>`, `#/w/<wikiId>/p/<page>`, `…/edit`.
 * @param {string} hash
 * @returns {Route}
 */
export function parseRoute(hash) {
    const parts = hash.replace(/^#\/?/, '').split('/');
    const decode = (/** @type {string} */ part) => { try { return decodeURIComponent(part); } catch { return null; } };
    const wikiId = parts[0] === 'w' && parts[1] ? decode(parts[1]) : null;
    if (!wikiId) return { wikiId: null, page: null, editing: false };
    const page = parts[2] === 'p' && parts[3] ? decode(parts[3]) : null;
    return { wikiId, page: page && isPageName(page) ? page : null, editing: page !== null && parts[4] === 'edit' };
}

/** @param {string} wikiId @param {string} [page] @param {boolean} [editing] */
export function routeHash(wikiId, page, editing = false) {
    if (!page) return `#/w/${encodeURIComponent(wikiId)}`;
    return `#/w/${encodeURIComponent(wikiId)}/p/${encodeURIComponent(page)}${editing ? '/edit' : ''}`;
}

export class TouchWikiApp {
    /** @param {import('/sdk/js/index.js').SyncClient} client */
    constructor(client) {
        this.client = client;
        /** @type {{id: string, email: string} | null} */
        this.me = null;
        /** @type {{id: string, title: string}[]} the server's wiki list */
        this.listed = [];
        /** @type {Map<string, WikiState>} */
        this.wikis = new Map();
        /** @type {(() => void)[]} */
        this.stops = [];
        /** @type {string | null} the page whose text the editor holds (`<wikiId>:<name>`) */
        this.editorFor = null;
    }

    start() {
        this.client.on((event) => this.onEvent(event));
        this.showStatus(this.client.status);
        this.wire();
        if (this.client.userId) void this.enter(); else this.showSignIn();
    }

    get route() {
        return parseRoute(location.hash);
    }

    /** @param {string} hash */
    go(hash) {
        if (location.hash !== hash) location.hash = hash; else this.render();
    }

    // MARK: Signing in

    showSignIn() {
        this.leaveWikis();
        byId('verify').hidden = true;
        byId('signin').hidden = false;
        byId('home').hidden = true;
        byId('signout').hidden = true;
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
        byId('signin').hidden = true;
        byId('home').hidden = false;
        byId('signout').hidden = false;
        byId('me').textContent = this.me.email;
        document.body.dataset.user = this.me.email;
        void this.checkVerified();
        await this.client.openPartition(userPartition(userId));
        this.stops.push(this.client.observe(userPartition(userId), (snapshot) => {
            const list = snapshot.objects.find((o) => o.collection === 'wiki_list' && o.id === userId);
            this.listed = /** @type {any} */ (list?.body.wikis ?? []);
            void this.followWikis();
        }));
        this.render();
    }

    /** Shows the code form while the server says the email is not verified (offline: as it was). */
    async checkVerified() {
        try {
            byId('verify').hidden = await this.client.emailVerified();
        } catch {
            // Offline or signed out: asked again when the connection is back.
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

    leaveWikis() {
        for (const stop of this.stops.splice(0)) stop();
        for (const wiki of this.wikis.values()) wiki.stop();
        this.wikis.clear();
        this.me = null;
        this.editorFor = null;
    }

    // MARK: Wikis

    /** Wikis made here that the server's list does not name yet (offline, or the trigger still at work). */
    get madeHere() {
        try { return /** @type {{id: string, title: string}[]} */ (JSON.parse(localStorage.getItem(`touchwiki:made:${this.me?.id}`) ?? '[]')); } catch { return []; }
    }

    /** @param {{id: string, title: string}[]} wikis */
    set madeHere(wikis) {
        localStorage.setItem(`touchwiki:made:${this.me?.id}`, JSON.stringify(wikis));
    }

    /**
     * Follows the wikis of the list (and those made here), stops following the others. A wiki
     * made here is shown from the local copy (its pending writes) and opened (subscribed) only
     * once the server lists it: until its document is written, nobody may read it.
     */
    async followWikis() {
        const listedIds = new Set(this.listed.map((w) => w.id));
        this.madeHere = this.madeHere.filter((w) => !listedIds.has(w.id));
        const wanted = new Map([...this.madeHere, ...this.listed].map((w) => [w.id, w]));
        for (const [id, state] of this.wikis) {
            if (wanted.has(id)) continue;
            state.stop();
            this.wikis.delete(id);
            await this.client.closePartition(wikiPartition(id));
        }
        for (const [id, entry] of wanted) {
            let state = this.wikis.get(id);
            if (!state) {
                /** @type {WikiState} */
                const made = { id, title: entry.title, wiki: null, pages: new Map(), drafts: new Set(), pending: new Set(), opened: false, stop: () => undefined };
                made.stop = this.client.observe(wikiPartition(id), (snapshot) => void this.wikiChanged(made, snapshot));
                this.wikis.set(id, made);
                state = made;
            }
            state.title = entry.title;
            if (listedIds.has(id) && !state.opened) {
                state.opened = true;
                await this.client.openPartition(wikiPartition(id));
            }
        }
        this.render();
    }

    /** @param {WikiState} state @param {PartitionSnapshot} snapshot */
    async wikiChanged(state, snapshot) {
        const partition = wikiPartition(state.id);
        const wiki = snapshot.objects.find((o) => o.collection === 'wiki' && o.id === state.id)?.body ?? null;
        // A wiki made here: once the server acknowledges its writes, the SDK forgets them (the
        // partition was not open yet), and its copy comes with the first page after it is
        // opened. Until the partition is up to date, what was shown stays.
        if (!wiki && state.wiki && !snapshot.upToDate) return;
        state.wiki = wiki;
        /** @type {Map<string, any>} */
        const pages = new Map();
        for (const object of snapshot.objects) {
            const name = object.collection === 'page' ? pageName(state.id, object.id) : null;
            if (name !== null) pages.set(name, object.body);
        }
        state.pages = pages;
        const drafts = await this.client.drafts(partition);
        state.drafts = new Set();
        for (const draft of drafts) {
            const name = pageName(state.id, draft.id);
            if (name !== null) state.drafts.add(name);
        }
        state.pending = await this.pendingPages(partition, state.id);
        if (this.wikis.get(state.id) === state) this.render();
    }

    /**
     * Names of the pages with writes the server has not answered yet.
     * @param {string} partition @param {string} wikiId
     */
    async pendingPages(partition, wikiId) {
        const { entries } = await this.client.store.queue();
        /** @type {Set<string>} */
        const names = new Set();
        for (const entry of entries) {
            if (entry.partition !== partition || entry.ackedVersion !== null) continue;
            for (const operation of entry.operations) {
                const name = operation.collection === 'page' ? pageName(wikiId, operation.id) : null;
                if (name !== null) names.add(name);
            }
        }
        return names;
    }

    // MARK: Drawing

    render() {
        void this.showOutbox();
        if (!this.me) return;
        const route = this.route;
        const state = route.wikiId ? this.wikis.get(route.wikiId) : undefined;
        document.body.classList.toggle('in-wiki', state !== undefined);
        byId('back').hidden = state === undefined;
        this.renderWikiList(state?.id ?? null);
        byId('wiki').hidden = !state;
        if (!state) return;
        this.renderWiki(state);
        this.renderPage(state, route.page ?? HOME, route.editing);
    }

    /** @param {string | null} selected */
    renderWikiList(selected) {
        const wikis = [...this.wikis.values()].sort((a, b) => title(a).localeCompare(title(b)) || a.id.localeCompare(b.id));
        byId('no-wikis').hidden = wikis.length > 0;
        byId('wikis').replaceChildren(...wikis.map((wiki) => el('li', {
            className: wiki.id === selected ? 'selected' : '', dataset: { wikiId: wiki.id },
        }, [el('a', { href: routeHash(wiki.id), text: title(wiki) })])));
    }

    /** @param {WikiState} state */
    renderWiki(state) {
        const me = /** @type {{id: string, email: string}} */ (this.me);
        const wiki = state.wiki;
        const owner = typeof wiki?.owner_id === 'string' ? wiki.owner_id : null;
        const members = /** @type {string[]} */ (Array.isArray(wiki?.members) ? wiki.members : []);
        const mine = owner === me.email;
        byId('wiki').dataset.wikiId = state.id;
        byId('wiki-title').textContent = title(state);
        byId('wiki-owner').textContent = owner ? `owned by ${owner}` : '';
        byId('member-count').textContent = String(members.length + (owner ? 1 : 0));
        byId('members').replaceChildren(
            ...(owner ? [el('li', { className: 'owner', text: `${owner} (owner)`, dataset: { email: owner } })] : []),
            ...members.map((email) => el('li', { className: 'member', dataset: { email } }, [
                el('span', { text: email }),
                mine ? this.button('Remove', `remove ${email}`, () => this.setMember(email, false)) : null,
            ])),
        );
        byId('add-member').hidden = !mine;
        const names = [...new Set([...state.pages.keys(), ...state.drafts])].sort((a, b) => a.localeCompare(b));
        const current = this.route.page ?? HOME;
        byId('pages').replaceChildren(...names.map((name) => el('li', {
            className: [name === current ? 'selected' : '', state.drafts.has(name) ? 'draft' : '', state.pending.has(name) ? 'pending' : ''].join(' ').trim(),
            dataset: { page: name },
        }, [el('a', { href: routeHash(state.id, name), text: name })])));
    }

    /** @param {WikiState} state @param {string} name @param {boolean} editing */
    renderPage(state, name, editing) {
        const page = state.pages.get(name);
        const markdown = typeof page?.markdown === 'string' ? page.markdown : '';
        const draft = state.drafts.has(name);
        const pending = state.pending.has(name);
        const node = byId('page');
        Object.assign(node.dataset, { page: name, exists: String(page !== undefined), draft: String(draft), pending: String(pending) });
        byId('page-name').textContent = name;
        byId('page-draft').hidden = !draft;
        byId('page-pending').hidden = !pending;
        byId('publish').hidden = !draft || editing;
        byId('discard').hidden = !draft || editing;
        byId('edit').hidden = editing;
        byId('page-missing').hidden = page !== undefined || editing;
        byId('page-content').hidden = editing;
        byId('page-content').replaceChildren(page ? renderMarkdown(markdown, {
            pageHref: (target) => routeHash(state.id, target, !state.pages.has(target)),
            pageExists: (target) => state.pages.has(target),
        }) : '');
        const updated = typeof page?.updated_at === 'string' ? new Date(page.updated_at) : null;
        byId('page-meta').textContent = updated && !isNaN(updated.getTime()) && !editing ? `updated ${updated.toLocaleString()}` : '';
        const editor = byId('editor');
        const key = pageId(state.id, name);
        if (editing && this.editorFor !== key) {
            // Opened now: the text as shown (the draft, or the shared page), or a new page's heading.
            byId('editor-text').value = page ? markdown : newPageText(name);
            this.editorFor = key;
        }
        if (!editing) this.editorFor = null;
        editor.hidden = !editing;
    }

    /**
     * A button that runs `action`.
     * @param {string} text @param {string} label @param {() => unknown} action
     */
    button(text, label, action) {
        const button = el('button', { type: 'button', text, 'aria-label': label });
        button.addEventListener('click', () => void action());
        return button;
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

    async createWiki() {
        const me = /** @type {{id: string, email: string}} */ (this.me);
        const text = String(byId('new-wiki-title').value).trim();
        if (!text) return;
        const { id, operations } = newWiki(text, me.email);
        this.madeHere = [...this.madeHere, { id, title: text }];
        if (await this.attempt(() => this.client.write(wikiPartition(id), operations))) {
            byId('new-wiki').reset();
            await this.followWikis();
            this.go(routeHash(id));
        } else {
            this.madeHere = this.madeHere.filter((w) => w.id !== id);
        }
    }

    /** @param {string} email @param {boolean} adding */
    async setMember(email, adding) {
        const state = this.currentWiki();
        const name = email.trim().toLowerCase();
        if (!state?.wiki) return;
        if (!isUserName(name)) {
            this.notify({ code: 'invalid_email', message: `${email} is not an email address` });
            return;
        }
        if (await this.attempt(() => this.client.write(wikiPartition(state.id), memberOperations(state.wiki, state.id, name, adding)))) {
            if (adding) byId('add-member').reset();
        }
    }

    currentWiki() {
        const id = this.route.wikiId;
        return id ? this.wikis.get(id) : undefined;
    }

    /** The open page's wiki and name. */
    currentPage() {
        const state = this.currentWiki();
        return state ? { state, name: this.route.page ?? HOME } : null;
    }

    /** Saves the editor's text as this browser's draft of the page (nobody else sees it). */
    async saveDraft() {
        const open = this.currentPage();
        if (!open) return false;
        const { state, name } = open;
        const text = String(byId('editor-text').value);
        return this.attempt(() => this.client.saveDraft(wikiPartition(state.id), pageOperations(state.id, name, text), pageId(state.id, name)));
    }

    /** Publishes the open page's draft: one ordinary write, queued (and shown pending) until the server answers. */
    async publish() {
        const open = this.currentPage();
        if (!open) return false;
        return this.attempt(() => this.client.publishDraft(pageId(open.state.id, open.name)));
    }

    async discard() {
        const open = this.currentPage();
        if (open) await this.attempt(() => this.client.discardDraft(pageId(open.state.id, open.name)));
    }

    /** Leaves the editor for the page (the draft or the page shown). */
    closeEditor() {
        const open = this.currentPage();
        if (open) this.go(routeHash(open.state.id, open.name));
    }

    openPageNamed() {
        const state = this.currentWiki();
        const name = String(byId('new-page-name').value).trim();
        if (!state) return;
        if (!isPageName(name)) {
            this.notify({ code: 'invalid_name', message: 'a page name has 1 to 200 characters, without brackets' });
            return;
        }
        byId('new-page').reset();
        this.go(routeHash(state.id, name, !state.pages.has(name)));
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
                void this.forgetRefusedWiki(event.partition);
                break;
            case 'unsubscribed': {
                const id = event.partition.startsWith('wiki=') ? event.partition.slice('wiki='.length) : null;
                if (id && this.wikis.has(id)) {
                    this.notify({ code: event.code, message: `you are no longer a member of ${title(/** @type {WikiState} */ (this.wikis.get(id)))}` });
                    this.listed = this.listed.filter((w) => w.id !== id);
                    this.madeHere = this.madeHere.filter((w) => w.id !== id);
                    void this.followWikis();
                }
                break;
            }
            case 'signedOut': this.showSignIn(); break;
            case 'error': this.notify(event); break;
            case 'storeFailed': this.notify({ code: 'store_failed', message: `${event.what}: ${event.message}` }); break;
            default: break;
        }
    }

    /**
     * A wiki made here whose creation the server refused is gone: stop showing it.
     * @param {string} partition
     */
    async forgetRefusedWiki(partition) {
        const id = partition.startsWith('wiki=') ? partition.slice('wiki='.length) : null;
        if (!id || !this.madeHere.some((w) => w.id === id)) return;
        const objects = await this.client.objects(partition);
        if (objects.some((o) => o.collection === 'wiki' && o.id === id)) return;
        this.madeHere = this.madeHere.filter((w) => w.id !== id);
        await this.followWikis();
    }

    /** How many writes wait for the server. */
    async showOutbox() {
        const count = await this.client.unacknowledgedWrites().catch(() => 0);
        const node = byId('outbox');
        node.dataset.count = String(count);
        node.textContent = count ? `${count} unsent` : '';
        node.hidden = count === 0;
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
        on('new-wiki', 'submit', () => this.createWiki());
        on('add-member', 'submit', () => this.setMember(String(byId('member-email').value), true));
        on('new-page', 'submit', () => this.openPageNamed());
        on('edit', 'click', () => {
            const open = this.currentPage();
            if (open) this.go(routeHash(open.state.id, open.name, true));
        });
        on('save-draft', 'click', async () => { if (await this.saveDraft()) this.closeEditor(); });
        on('editor', 'submit', async () => { if ((await this.saveDraft()) && (await this.publish())) this.closeEditor(); });
        on('editor-cancel', 'click', () => this.closeEditor());
        on('publish', 'click', () => this.publish());
        on('discard', 'click', () => this.discard());
        on('back', 'click', () => this.go('#/'));
        on('notice-close', 'click', () => { byId('notice').hidden = true; delete byId('notice').dataset.code; });
        addEventListener('hashchange', () => this.render());
    }
}

/**
 * A wiki's title: its document's, else its list entry's.
 * @param {WikiState} state
 */
function title(state) {
    return typeof state.wiki?.title === 'string' ? state.wiki.title : state.title;
}
