// Serves the SDK and its browser tests from this folder and passes /v1/*, /health, /ready,
// /metrics (HTTP and the WebSocket upgrade) and /sdk/js/* (the SDK as the server serves it, which
// docs/CLIENT.md's example imports) to a PartitionSync server, so that the pages
// and the server share one origin (the server sends no CORS headers). While the server is
// down the pass-through answers 502 and refuses upgrades: the pages see the server gone.
//
//   node scripts/devserver.mjs --port 8090 --backend 8080
import http from 'node:http';
import net from 'node:net';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const args = Object.fromEntries(process.argv.slice(2).reduce((pairs, arg, i, all) => (arg.startsWith('--') ? [...pairs, [arg.slice(2), all[i + 1]]] : pairs), /** @type {string[][]} */ ([])));
const port = Number(args.port ?? 8090);
const backend = Number(args.backend ?? 8080);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const types = { '.js': 'text/javascript', '.mjs': 'text/javascript', '.html': 'text/html', '.json': 'application/json', '.md': 'text/plain' };
const passed = (/** @type {string} */ url) => /^\/(v1\/|health|ready|metrics|sdk\/js\/)/.test(url);

const server = http.createServer((request, response) => {
    const url = request.url ?? '/';
    if (passed(url)) {
        const upstream = http.request({ host: '127.0.0.1', port: backend, path: url, method: request.method, headers: request.headers }, (answer) => {
            response.writeHead(answer.statusCode ?? 502, answer.headers);
            answer.pipe(response);
        });
        upstream.on('error', () => {
            if (!response.headersSent) response.writeHead(502, { 'Content-Type': 'application/json' });
            response.end('{"error":{"code":"unavailable","message":"the server is down"}}');
        });
        request.pipe(upstream);
        return;
    }
    const file = path.join(root, decodeURIComponent(url.split('?')[0]));
    if (!file.startsWith(root + path.sep) || !fs.existsSync(file) || !fs.statSync(file).isFile()) {
        response.writeHead(404);
        response.end('not found');
        return;
    }
    response.writeHead(200, { 'Content-Type': types[/** @type {keyof typeof types} */ (path.extname(file))] ?? 'application/octet-stream', 'Cache-Control': 'no-store' });
    fs.createReadStream(file).pipe(response);
});

server.on('upgrade', (request, socket, head) => {
    const upstream = net.connect(backend, '127.0.0.1', () => {
        const lines = [`${request.method} ${request.url} HTTP/1.1`];
        for (let i = 0; i < request.rawHeaders.length; i += 2) lines.push(`${request.rawHeaders[i]}: ${request.rawHeaders[i + 1]}`);
        upstream.write(lines.join('\r\n') + '\r\n\r\n');
        if (head.length) upstream.write(head);
        upstream.pipe(socket);
        socket.pipe(upstream);
    });
    upstream.on('error', () => socket.destroy());
    socket.on('error', () => upstream.destroy());
    upstream.on('close', () => socket.destroy());
    socket.on('close', () => upstream.destroy());
});

server.listen(port, '127.0.0.1', () => console.log(`devserver on http://127.0.0.1:${port}, passing to ${backend}`));
process.on('SIGTERM', () => process.exit(0));
