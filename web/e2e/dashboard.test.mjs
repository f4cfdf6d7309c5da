// End-to-end test of the dataset dashboard (issue #20) in headless
// Chromium against a real `lookout serve` (harness.mjs): tau-bench
// airline's 200 traces (stored now: they record no times) and a Langfuse
// trace of December 2025. What each check expects is computed here from
// the corpus files and the annotations and scores this test posts.
import assert from 'node:assert/strict';
import { copyFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { api, createDataset, openPage, repo, screenshots, shared, shot, uploadFile } from './harness.mjs';

const airline = join(shared, 'corpus', 'openai', 'tau-bench', 'gpt-4o-airline.json');
const langfuse = join(shared, 'corpus', 'otel', 'langfuse', 'claude-agent-2025-12-22.trace.json');
const tau = JSON.parse(readFileSync(airline, 'utf8'));

// Tool calls and errors ("Error: ..." outputs) by tool, and the traces
// that call cancel_reservation, read from the file.
const calls = new Map();
const errors = new Map();
const cancels = [];
tau.forEach((t, i) => {
  let cancel = false;
  for (const m of t.traj) {
    for (const c of m.tool_calls ?? []) {
      calls.set(c.function.name, (calls.get(c.function.name) ?? 0) + 1);
      cancel ||= c.function.name === 'cancel_reservation';
    }
    if (m.role === 'tool' && typeof m.content === 'string' && m.content.toLowerCase().startsWith('error:')) errors.set(m.name, (errors.get(m.name) ?? 0) + 1);
  }
  if (cancel) cancels.push(i);
});
const solved = tau.slice(0, 40).filter((t) => t.reward === 1).length;

let srv, browser, page, problems, ds;

before(async () => {
  ({ srv, browser, page, problems } = await openPage());
  ds = await createDataset(srv.base, 'airline');
  await uploadFile(srv.base, ds.id, airline);
  await uploadFile(srv.base, ds.id, langfuse);
  const stored = (await api(srv.base, 'GET', `/datasets/${ds.id}/traces?limit=1000`)).traces.sort((a, b) => a.index - b.index);
  assert.equal(stored.length, 201);
  const pol = await api(srv.base, 'POST', `/datasets/${ds.id}/policies`, {
    name: 'no cancellations',
    source: 'raise "cancel_reservation called" if:\n    (call: ToolCall)\n    call is tool:cancel_reservation\n',
  });
  for (const i of cancels)
    await api(srv.base, 'POST', `/traces/${stored[i].id}/annotations`, { address: 'messages.0', content: 'cancel_reservation called', source: 'analyzer', extra: { policy_id: pol.id } });
  for (let i = 0; i < 40; i++) await api(srv.base, 'POST', `/traces/${stored[i].id}/scores`, { criterion: 'solved', value: tau[i].reward === 1 });
});

after(async () => {
  await browser?.close();
  await srv?.stop();
});

const stat = (id) => page.locator(`.dash-stat[data-stat="${id}"] b`).textContent();
const fmt = (n) => n.toLocaleString('en-US');

test('the dataset header links to the dashboard, which counts what the files hold', async () => {
  await page.goto(`${srv.base}/datasets/${encodeURIComponent(ds.owner)}/${encodeURIComponent(ds.name)}`);
  await page.locator('.ds-totals .ds-cost').waitFor();
  // The header's tokens: the sum of each trace's own usage.
  let tin = 0;
  let tout = 0;
  for (const t of (await api(srv.base, 'GET', `/datasets/${ds.id}/traces?limit=1000`)).traces) {
    const u = (await api(srv.base, 'GET', `/traces/${t.id}?usage=1`)).usage;
    tin += u.input_tokens ?? 0;
    tout += u.output_tokens ?? 0;
  }
  assert.ok(tin > 0);
  assert.equal(await page.locator('.ds-totals .ds-tokens').textContent(), `${fmt(tin)} in · ${fmt(tout)} out`);
  await page.click('a.dashboard-link');
  await page.waitForFunction(() => document.querySelector('.dash-stat[data-stat="traces"] b')?.textContent === '201');
  assert.match(page.url(), /\/datasets\/[^/]+\/airline\/dashboard$/);
  // The last 24 hours: tau-bench's traces alone (stored now).
  await page.click('[data-range="24h"]');
  await page.waitForFunction(() => document.querySelector('.dash-stat[data-stat="traces"] b')?.textContent === '200');
  const tools = await page.locator('[data-chart="tools"] li').evaluateAll((ls) => ls.map((l) => [l.getAttribute('data-key'), l.querySelector('.hbar-note').textContent]));
  assert.equal(tools.length, calls.size);
  for (const [name, note] of tools) {
    const c = calls.get(name) ?? 0;
    assert.ok(note.startsWith(`${fmt(c)} calls · ${fmt(errors.get(name) ?? 0)} errors`), `${name}: ${note}`);
  }
  const policy = await page.locator('[data-chart="policies"] li[data-key="no cancellations"] .hbar-note').textContent();
  assert.ok(policy.startsWith(`${cancels.length} of 200 traces`), policy);
  const crit = await page.locator('[data-chart="criteria"] li[data-key="solved"] .hbar-note').textContent();
  assert.ok(crit.startsWith(`${solved} passed · ${40 - solved} failed`), crit);
  assert.equal(await stat('tool-calls'), fmt([...calls.values()].reduce((a, b) => a + b, 0)));
  const bars = await page.locator('[data-chart="traces"] rect.bar').evaluateAll((rs) => rs.reduce((n, r) => n + Number(r.getAttribute('data-value')), 0));
  assert.equal(bars, 200);
  // All time: the Langfuse trace too, with its tokens and model.
  await page.click('[data-range="all"]');
  await page.waitForFunction(() => document.querySelector('.dash-stat[data-stat="traces"] b')?.textContent === '201');
  assert.notEqual(await stat('input'), '0');
  assert.ok((await page.locator('[data-chart="models"] li').count()) >= 1);
  await page.mouse.move(0, 0);
  await shot(page, 'dashboard');
  // README's picture: refreshed on demand, so that a test run leaves the tree clean.
  if (process.env.UPDATE_DOCS_SCREENSHOTS) copyFileSync(join(screenshots, 'dashboard.png'), join(repo, 'docs', 'explorer-dashboard.png'));
  // Narrow: one column, nothing wider than the window.
  await page.setViewportSize({ width: 400, height: 900 });
  const wide = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(wide <= 400, `page ${wide} px wide at 400`);
  await shot(page, 'dashboard-400');
  assert.deepEqual(problems, []);
});
