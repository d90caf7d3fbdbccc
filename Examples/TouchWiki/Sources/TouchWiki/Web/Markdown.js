// TouchWiki's Markdown, rendered safely: the text is parsed into plain blocks and inlines
// (`parseMarkdown`, no DOM: unit-tested under node), then built into elements whose text goes
// through text nodes only (`renderMarkdown`). Nothing here parses HTML: `<script>` in a page is
// shown as the characters it is, and a link is a link only to http(s) or mailto.
// What it knows: ATX headings (#), paragraphs, **strong**, *emphasis*, `code`, fenced code
// blocks (```), > quotes, - and 1. lists, --- rules, [text](url), ![alt](url) (a link: no
// image is loaded from a page), <https://autolinks>, backslash escapes, and [[Page Name]].

/**
 * @typedef {{type: 'text', text: string}
 *   | {type: 'code', text: string}
 *   | {type: 'strong', children: Inline[]}
 *   | {type: 'em', children: Inline[]}
 *   | {type: 'link', href: string, children: Inline[]}
 *   | {type: 'page', name: string}} Inline
 * @typedef {{type: 'heading', level: number, inlines: Inline[]}
 *   | {type: 'paragraph', inlines: Inline[]}
 *   | {type: 'code', text: string}
 *   | {type: 'quote', blocks: Block[]}
 *   | {type: 'list', ordered: boolean, items: Inline[][]}
 *   | {type: 'rule'}} Block
 */

/** The longest page name, in characters (WikiPage.maximumNameLength). */
export const MAXIMUM_NAME_LENGTH = 200;

/**
 * Whether `name` can name a page (as WikiPage.isName): 1 to 200 characters, no surrounding
 * whitespace, no control characters and no brackets.
 * @param {string} name
 */
export function isPageName(name) {
    const characters = [...name];
    return characters.length > 0 && characters.length <= MAXIMUM_NAME_LENGTH && name.trim() === name
        // eslint-disable-next-line no-control-regex
        && !/[\u0000-\u001f\u007f-\u009f[\]]/.test(name);
}

/**
 * The `[[Page Name]]` links of a text, in order, each once (as WikiPage.links(in:)).
 * @param {string} markdown
 * @returns {string[]}
 */
export function pageLinks(markdown) {
    /** @type {string[]} */
    const names = [];
    let from = 0;
    for (;;) {
        const open = markdown.indexOf('[[', from);
        if (open < 0) break;
        const close = markdown.indexOf(']]', open + 2);
        if (close < 0) break;
        const name = markdown.slice(open + 2, close).replace(/^[ \t]+|[ \t]+$/g, '');
        if (isPageName(name) && !names.includes(name)) names.push(name);
        from = close + 2;
    }
    return names;
}

/**
 * The URL a link may lead to, or `null`: only absolute http, https and mailto URLs, without
 * whitespace or control characters (which browsers strip, turning `java\tscript:` into a
 * script).
 * @param {string} url
 * @returns {string | null}
 */
export function safeHref(url) {
    // eslint-disable-next-line no-control-regex
    if (/[\u0000-\u0020\u007f-\u009f]/.test(url)) return null;
    if (!/^(https?:\/\/|mailto:)/i.test(url)) return null;
    try {
        const parsed = new URL(url);
        return ['http:', 'https:', 'mailto:'].includes(parsed.protocol) ? parsed.href : null;
    } catch {
        return null;
    }
}

// MARK: Blocks

/**
 * @param {string} markdown
 * @returns {Block[]}
 */
export function parseMarkdown(markdown) {
    return parseBlocks(markdown.replace(/\r\n?/g, '\n').split('\n'));
}

/** @param {string[]} lines @returns {Block[]} */
function parseBlocks(lines) {
    /** @type {Block[]} */
    const blocks = [];
    let index = 0;
    /** @type {string[]} */
    let paragraph = [];
    const endParagraph = () => {
        if (paragraph.length) blocks.push({ type: 'paragraph', inlines: parseInlines(paragraph.join('\n')) });
        paragraph = [];
    };
    while (index < lines.length) {
        const line = lines[index];
        const fence = /^ {0,3}(```+|~~~+)/.exec(line);
        if (fence) {
            endParagraph();
            const marker = fence[1];
            const text = [];
            index += 1;
            while (index < lines.length && !lines[index].trimStart().startsWith(marker)) text.push(lines[index++]);
            index += 1;
            blocks.push({ type: 'code', text: text.join('\n') });
            continue;
        }
        const heading = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*#*[ \t]*$/.exec(line);
        if (heading && (heading[2] !== undefined || /^ {0,3}#{1,6}[ \t]*$/.test(line))) {
            endParagraph();
            blocks.push({ type: 'heading', level: heading[1].length, inlines: parseInlines(heading[2] ?? '') });
            index += 1;
            continue;
        }
        if (/^ {0,3}([-*_])([ \t]*\1){2,}[ \t]*$/.test(line)) {
            endParagraph();
            blocks.push({ type: 'rule' });
            index += 1;
            continue;
        }
        if (/^ {0,3}>/.test(line)) {
            endParagraph();
            const quoted = [];
            while (index < lines.length && /^ {0,3}>/.test(lines[index])) quoted.push(lines[index++].replace(/^ {0,3}> ?/, ''));
            blocks.push({ type: 'quote', blocks: parseBlocks(quoted) });
            continue;
        }
        const item = listItem(line);
        if (item) {
            endParagraph();
            const ordered = item.ordered;
            /** @type {Inline[][]} */
            const items = [];
            while (index < lines.length) {
                const next = listItem(lines[index]);
                if (next && next.ordered === ordered) {
                    const text = [next.text];
                    index += 1;
                    // Lines indented under the item continue it.
                    while (index < lines.length && /^[ \t]{2,}\S/.test(lines[index]) && !listItem(lines[index])) text.push(lines[index++].trim());
                    items.push(parseInlines(text.join('\n')));
                } else {
                    break;
                }
            }
            blocks.push({ type: 'list', ordered, items });
            continue;
        }
        if (line.trim() === '') {
            endParagraph();
        } else {
            paragraph.push(line);
        }
        index += 1;
    }
    endParagraph();
    return blocks;
}

/** @param {string} line @returns {{ordered: boolean, text: string} | null} */
function listItem(line) {
    const found = /^[ \t]{0,3}(?:([-*+])|(\d{1,9})[.)])[ \t]+(.*)$/.exec(line);
    return found ? { ordered: found[2] !== undefined, text: found[3] } : null;
}

// MARK: Inlines

/**
 * @param {string} text
 * @returns {Inline[]}
 */
export function parseInlines(text) {
    /** @type {Inline[]} */
    const out = [];
    let plain = '';
    const flush = () => {
        if (plain) out.push({ type: 'text', text: plain });
        plain = '';
    };
    let i = 0;
    while (i < text.length) {
        const c = text[i];
        if (c === '\\' && i + 1 < text.length && /[!-/:-@[-`{-~]/.test(text[i + 1])) {
            plain += text[i + 1];
            i += 2;
            continue;
        }
        if (c === '`') {
            const run = /^`+/.exec(text.slice(i))?.[0] ?? '`';
            const close = text.indexOf(run, i + run.length);
            if (close > 0) {
                flush();
                out.push({ type: 'code', text: text.slice(i + run.length, close) });
                i = close + run.length;
                continue;
            }
            plain += run;
            i += run.length;
            continue;
        }
        if (text.startsWith('[[', i)) {
            const close = text.indexOf(']]', i + 2);
            const name = close > 0 ? text.slice(i + 2, close).replace(/^[ \t]+|[ \t]+$/g, '') : '';
            if (close > 0 && isPageName(name)) {
                flush();
                out.push({ type: 'page', name });
                i = close + 2;
                continue;
            }
        }
        if (c === '[' || (c === '!' && text[i + 1] === '[')) {
            const start = c === '!' ? i + 1 : i;
            const link = linkAt(text, start);
            if (link) {
                const source = text.slice(i, link.end);
                const href = safeHref(link.url);
                flush();
                // A link to anything else (javascript:, data:, a relative path) is its text, as written.
                if (href) out.push({ type: 'link', href, children: parseInlines(link.label) });
                else out.push({ type: 'text', text: source });
                i = link.end;
                continue;
            }
        }
        if (c === '<') {
            const auto = /^<([a-zA-Z][a-zA-Z0-9+.-]*:[^\s<>]*)>/.exec(text.slice(i));
            const href = auto ? safeHref(auto[1]) : null;
            if (auto && href) {
                flush();
                out.push({ type: 'link', href, children: [{ type: 'text', text: auto[1] }] });
                i += auto[0].length;
                continue;
            }
        }
        if (c === '*' || c === '_') {
            const double = text[i + 1] === c;
            const marker = double ? c + c : c;
            const inner = i + marker.length;
            const close = text.indexOf(marker, inner + 1);
            if (close > inner && !/\s/.test(text[inner]) && !/\s/.test(text[close - 1])
                && (c === '*' || !/\w/.test(text[i - 1] ?? ''))) {
                flush();
                out.push({ type: double ? 'strong' : 'em', children: parseInlines(text.slice(inner, close)) });
                i = close + marker.length;
                continue;
            }
        }
        plain += c;
        i += 1;
    }
    flush();
    return out;
}

/**
 * `[label](url)` starting at `start` (its `[`): the label (brackets balanced), the url, and
 * where it ends; `null` when the text there is not one.
 * @param {string} text
 * @param {number} start
 */
function linkAt(text, start) {
    let depth = 0;
    let close = -1;
    for (let j = start; j < text.length; j++) {
        if (text[j] === '\\') { j += 1; continue; }
        if (text[j] === '[') depth += 1;
        if (text[j] === ']') {
            depth -= 1;
            if (depth === 0) { close = j; break; }
        }
    }
    if (close < 0 || text[close + 1] !== '(') return null;
    const end = text.indexOf(')', close + 2);
    if (end < 0) return null;
    const target = text.slice(close + 2, end).trim();
    const url = /^<(.*)>$/.exec(target)?.[1] ?? target.split(/[ \t]+/)[0] ?? '';
    return { label: text.slice(start + 1, close), url, end: end + 1 };
}

// MARK: Elements

/**
 * How `[[links]]` are drawn: where each leads, and whether its page exists.
 * @typedef {{pageHref: (name: string) => string, pageExists: (name: string) => boolean}} PageLinks
 */

/**
 * The elements of a Markdown text: text goes in text nodes, attributes are set one by one
 * (only `href`, from {@link safeHref} or `pageHref`), so nothing in the text becomes markup.
 * @param {string} markdown
 * @param {PageLinks} links
 * @returns {DocumentFragment}
 */
export function renderMarkdown(markdown, links) {
    const fragment = document.createDocumentFragment();
    for (const block of parseMarkdown(markdown)) fragment.append(renderBlock(block, links));
    return fragment;
}

/** @param {Block} block @param {PageLinks} links @returns {Node} */
function renderBlock(block, links) {
    switch (block.type) {
        case 'heading': return withInlines(document.createElement(`h${block.level}`), block.inlines, links);
        case 'paragraph': return withInlines(document.createElement('p'), block.inlines, links);
        case 'code': {
            const pre = document.createElement('pre');
            const code = document.createElement('code');
            code.textContent = block.text;
            pre.append(code);
            return pre;
        }
        case 'quote': {
            const quote = document.createElement('blockquote');
            for (const inner of block.blocks) quote.append(renderBlock(inner, links));
            return quote;
        }
        case 'list': {
            const list = document.createElement(block.ordered ? 'ol' : 'ul');
            for (const item of block.items) list.append(withInlines(document.createElement('li'), item, links));
            return list;
        }
        case 'rule': return document.createElement('hr');
    }
}

/** @param {HTMLElement} parent @param {Inline[]} inlines @param {PageLinks} links */
function withInlines(parent, inlines, links) {
    for (const inline of inlines) parent.append(renderInline(inline, links));
    return parent;
}

/** @param {Inline} inline @param {PageLinks} links @returns {Node} */
function renderInline(inline, links) {
    switch (inline.type) {
        case 'text': return document.createTextNode(inline.text);
        case 'code': {
            const code = document.createElement('code');
            code.textContent = inline.text;
            return code;
        }
        case 'strong': return withInlines(document.createElement('strong'), inline.children, links);
        case 'em': return withInlines(document.createElement('em'), inline.children, links);
        case 'link': {
            const anchor = document.createElement('a');
            anchor.href = inline.href;
            anchor.rel = 'noopener noreferrer nofollow';
            anchor.target = '_blank';
            anchor.className = 'external';
            return withInlines(anchor, inline.children, links);
        }
        case 'page': {
            const anchor = document.createElement('a');
            const exists = links.pageExists(inline.name);
            anchor.href = links.pageHref(inline.name);
            anchor.className = exists ? 'page-link' : 'page-link missing';
            anchor.dataset.page = inline.name;
            anchor.textContent = inline.name;
            if (!exists) anchor.title = `${inline.name} does not exist yet: follow the link to write it`;
            return anchor;
        }
    }
}
