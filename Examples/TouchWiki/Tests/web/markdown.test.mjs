// Unit tests of TouchWiki's Markdown parser (Sources/TouchWiki/Web/Markdown.js) under
// `node --test`: what a page's text becomes, before any element is made. The browser tests
// check the elements themselves (run_tests.py, hostile Markdown).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';

// The module is served to browsers as it is (no package.json beside it): loaded from its text.
const source = await readFile(new URL('../../Sources/TouchWiki/Web/Markdown.js', import.meta.url), 'utf8');
const { parseMarkdown, parseInlines, safeHref, pageLinks, isPageName } = await import(`data:text/javascript,${encodeURIComponent(source)}`);

/** Every inline of blocks, flattened, in order. */
function inlines(blocks) {
    const out = [];
    const walk = (list) => {
        for (const inline of list) {
            out.push(inline);
            if (inline.children) walk(inline.children);
        }
    };
    for (const block of blocks) {
        if (block.inlines) walk(block.inlines);
        if (block.items) block.items.forEach(walk);
        if (block.blocks) walk(inlines(block.blocks));
    }
    return out;
}

const text = (blocks) => inlines(blocks).filter((i) => i.type === 'text').map((i) => i.text).join('');

test('HTML in a page is text, as written', () => {
    for (const hostile of ['<script>window.pwned = 1</script>', '<img src=x onerror="window.pwned = 2">',
        '<iframe src="javascript:alert(1)"></iframe>', '<a href="javascript:alert(1)">x</a>']) {
        const blocks = parseMarkdown(hostile);
        assert.deepEqual(blocks, [{ type: 'paragraph', inlines: [{ type: 'text', text: hostile }] }], hostile);
    }
});

test('links to anything but http, https and mailto stay text', () => {
    for (const url of ['javascript:alert(1)', 'JaVaScRiPt:alert(1)', 'java\tscript:alert(1)', 'java&#x09;script:alert(1)',
        'data:text/html,<script>alert(1)</script>', 'vbscript:msgbox(1)', '/relative', '//evil.example/x', 'http:evil', '\u0001javascript:alert(1)']) {
        assert.equal(safeHref(url), null, url);
        const markdown = `[click me](${url})`;
        const found = inlines(parseMarkdown(markdown));
        assert.ok(!found.some((i) => i.type === 'link'), `${JSON.stringify(url)} made a link`);
    }
    const refused = parseInlines('[click me](javascript:alert(1))');
    assert.equal(refused.map((i) => i.text).join(''), '[click me](javascript:alert(1))', 'shown as written');
    assert.ok(!inlines(parseMarkdown('<javascript:alert(1)>')).some((i) => i.type === 'link'), 'an autolink to a script');
    assert.ok(!inlines(parseMarkdown('![x](javascript:alert(1))')).some((i) => i.type === 'link'), 'an image to a script');
});

test('http, https and mailto links are links', () => {
    const [link] = parseInlines('[the docs](https://example.com/a?b=1)');
    assert.deepEqual(link, { type: 'link', href: 'https://example.com/a?b=1', children: [{ type: 'text', text: 'the docs' }] });
    assert.equal(parseInlines('<http://example.com>')[0].type, 'link');
    assert.equal(parseInlines('[mail](mailto:ann@example.com)')[0].href, 'mailto:ann@example.com');
});

test('[[links]] name pages, as WikiPage.links(in:) reads them', () => {
    const markdown = 'See [[Roadmap]], [[ Roadmap ]] and [[Notes: 2026]]; not [[]] or [[a[b]] or [[\u0007bell]].';
    assert.deepEqual(pageLinks(markdown), ['Roadmap', 'Notes: 2026']);
    const pages = inlines(parseMarkdown(markdown)).filter((i) => i.type === 'page').map((i) => i.name);
    assert.deepEqual(pages, ['Roadmap', 'Roadmap', 'Notes: 2026']);
    assert.ok(isPageName('Home') && isPageName('x'.repeat(200)));
    assert.ok(!isPageName('') && !isPageName(' Home') && !isPageName('x'.repeat(201)) && !isPageName('a]b'));
});

test('blocks: headings, lists, quotes, code kept verbatim, rules, emphasis', () => {
    const blocks = parseMarkdown('# Title\n\nSome *em* and **strong** and `<b>code</b>`.\n\n- one\n- two\n\n1. first\n\n> quoted\n\n```\n<script>x</script>\n```\n\n---\n#hashtag');
    assert.deepEqual(blocks.map((b) => b.type), ['heading', 'paragraph', 'list', 'list', 'quote', 'code', 'rule', 'paragraph']);
    assert.equal(blocks[0].level, 1);
    assert.deepEqual(blocks[1].inlines.map((i) => i.type), ['text', 'em', 'text', 'strong', 'text', 'code', 'text']);
    assert.equal(blocks[1].inlines[5].text, '<b>code</b>');
    assert.equal(blocks[2].items.length, 2);
    assert.equal(blocks[3].ordered, true);
    assert.equal(blocks[5].text, '<script>x</script>');
    assert.equal(text([blocks[7]]), '#hashtag');
    assert.equal(text(parseMarkdown('a\\*b\\* c')), 'a*b* c', 'escapes');
    assert.equal(text(parseMarkdown('snake_case_name')), 'snake_case_name', 'underscores inside words');
});
