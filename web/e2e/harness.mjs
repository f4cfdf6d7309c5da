// The end-to-end harness: builds the lookout binary, starts a real
// `lookout serve` on a temporary database and a free loopback port, and
// drives Debian's headless Chromium with playwright-core. No mocks.
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = dirname(fileURLToPath(import.meta.url));
export const repo = resolve(here, '../..');
export const shared = resolve(repo, '../shared');
export const screenshots = join(here, 'screenshots');
mkdirSync(screenshots, { recursive: true });

export const chromiumPath = process.env.CHROMIUM ?? '/usr/bin/chromium';

let built = null;
/** lookoutBinary builds ./cmd/lookout once per process. */
export function lookoutBinary() {
  if (built) return built;
  const dir = mkdtempSync(join(tmpdir(), 'lookout-e2e-bin-'));
  built = join(dir, 'lookout');
  execFileSync('go', ['build', '-o', built, './cmd/lookout'], { cwd: repo, stdio: 'inherit' });
  return built;
}

function freePort() {
  return new Promise((res, rej) => {
    const s = createServer();
    s.once('error', rej);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => res(port));
    });
  });
}

/** startServer runs `lookout serve` and resolves once it answers. With
 * opts.user ({name, password}) the database gets that user first, so the
 * server is not in local mode: anonymous requests only read public datasets,
 * and `key` is an API key of the user's. */
export async function startServer(opts = {}) {
  const bin = lookoutBinary();
  const dir = mkdtempSync(join(tmpdir(), 'lookout-e2e-'));
  const db = join(dir, 'lookout.db');
  let key = '';
  if (opts.user) {
    execFileSync(bin, ['user', 'create', '--db', db, opts.user.name], { input: opts.user.password + '\n', stdio: ['pipe', 'ignore', 'inherit'] });
    key = execFileSync(bin, ['key', 'create', '--db', db, '--user', opts.user.name], { stdio: ['ignore', 'pipe', 'ignore'] }).toString().trim();
  }
  const port = await freePort();
  const addr = `127.0.0.1:${port}`;
  const proc = spawn(bin, ['serve', '--db', db, '--addr', addr, '--quiet'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  proc.stderr.on('data', (d) => (stderr += d));
  const base = `http://${addr}`;
  for (let i = 0; ; i++) {
    if (proc.exitCode !== null) throw new Error(`lookout serve exited: ${stderr}`);
    try {
      const r = await fetch(base + '/api/v1/me');
      if (r.ok) break;
    } catch {
      /* not up yet */
    }
    if (i > 200) throw new Error(`lookout serve did not answer: ${stderr}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    base,
    db,
    key,
    stderr: () => stderr,
    async stop() {
      proc.kill('SIGTERM');
      await new Promise((r) => (proc.exitCode !== null ? r() : proc.once('exit', r)));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export async function launch() {
  return chromium.launch({ executablePath: chromiumPath, headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
}

/** openPage starts a server (with opts) and a browser page on it, 1400 by
 * 900, with a 10 s timeout and its problems watched. */
export async function openPage(opts = {}) {
  const srv = await startServer(opts);
  const browser = await launch();
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  page.setDefaultTimeout(10000);
  return { srv, browser, page, problems: watch(page) };
}

/** watch records dialogs, page errors, console errors and CSP reports. */
export function watch(page) {
  const problems = [];
  page.on('dialog', (d) => {
    problems.push(`dialog ${d.type()}: ${d.message()}`);
    d.dismiss().catch(() => {});
  });
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console error: ${m.text()}`);
  });
  return problems;
}

/** api calls the server's JSON API from Node (local mode: no key). */
export async function api(base, method, path, body, headers = {}) {
  const init = { method, headers: { ...headers } };
  if (body !== undefined) {
    init.body = typeof body === 'string' || body instanceof Uint8Array ? body : JSON.stringify(body);
    if (!init.headers['Content-Type']) init.headers['Content-Type'] = 'application/json';
  }
  const r = await fetch(base + '/api/v1' + path, init);
  const text = await r.text();
  if (!r.ok) throw new Error(`${method} ${path}: ${r.status} ${text.slice(0, 300)}`);
  return text ? JSON.parse(text) : null;
}

export async function createDataset(base, name) {
  return api(base, 'POST', '/datasets', { name });
}

export async function uploadFile(base, datasetId, file, mode = 'all-or-nothing', headers = {}) {
  const body = readFileSync(file);
  return api(base, 'POST', `/datasets/${datasetId}/upload?filename=${encodeURIComponent(file.split('/').pop())}&mode=${mode}`, body, { 'Content-Type': 'application/octet-stream', ...headers });
}

export async function shot(page, name) {
  await page.screenshot({ path: join(screenshots, name + '.png') });
}
