// Takes every ```js block of docs/CLIENT.md out into test/docs/.generated/client-md-<n>.js, so
// that the documented code is type-checked (test/docs/tsconfig.json) and run in a browser
// (test/browser/run_tests.py, test_client_md_example_runs) exactly as written. Prints how
// many blocks it wrote; fails when there is none.
//
//   node test/docs/extract.mjs
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const document = path.resolve(here, '../../../../docs/CLIENT.md');
const out = path.join(here, '.generated');

/**
 * The ```js blocks of a Markdown text, with the line each starts on.
 * @param {string} text
 * @returns {{line: number, code: string}[]}
 */
export function jsBlocks(text) {
    const lines = text.split('\n');
    /** @type {{line: number, code: string}[]} */
    const blocks = [];
    for (let i = 0; i < lines.length; i++) {
        if (lines[i].trim() !== '```js') continue;
        const start = i + 1;
        let end = start;
        while (end < lines.length && !lines[end].trim().startsWith('```')) end++;
        if (end === lines.length) throw new Error(`docs/CLIENT.md:${i + 1}: a js block that never ends`);
        blocks.push({ line: start + 1, code: lines.slice(start, end).join('\n') + '\n' });
        i = end;
    }
    return blocks;
}

const blocks = jsBlocks(fs.readFileSync(document, 'utf8'));
if (blocks.length === 0) {
    console.error('docs/CLIENT.md has no js block');
    process.exit(1);
}
fs.rmSync(out, { recursive: true, force: true });
fs.mkdirSync(out, { recursive: true });
blocks.forEach((block, index) => {
    const name = `client-md-${index + 1}.js`;
    fs.writeFileSync(path.join(out, name), `// docs/CLIENT.md, line ${block.line} (written by test/docs/extract.mjs: edit the document, not this)\n${block.code}`);
});
console.log(`docs/CLIENT.md: ${blocks.length} js block(s) written to test/docs/.generated/`);
