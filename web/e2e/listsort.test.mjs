// End-to-end test of issue #20's list: sortable columns (time, duration,
// tokens, cost, violations, a score), verdict columns after an evaluation
// run and scores posted through the API, and the score:/verdict: query
// terms. In headless Chromium against a real `lookout serve` (harness.mjs),
// on the 200 tau-bench airline trajectories, each given a span with a
// duration and tokens derived here from the file. Every expected order and
// count is computed here from the file (and the shipped price table), not
// read from Lookout.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { api, createDataset, openPage, repo, shared, shot, uploadFile } from './harness.mjs';

const runs = JSON.parse(readFileSync(join(shared, 'corpus/openai/tau-bench/gpt-4o-airline.json'), 'utf8'));
const price = JSON.parse(readFileSync(join(repo, 'internal/usage/prices.json'), 'utf8')).models['gpt-4o'];
const cancelPolicy = 'raise "cancel_reservation called" if:\n    (call: ToolCall)\n    call is tool:cancel_reservation\n';

// What each trajectory's row will show: every tenth has no span (no
// duration, tokens or cost); the others a span of a second a message with
// chars/100 tokens in and a token an assistant message out on gpt-4o.
const t0 = Date.parse('2026-03-01T12:00:00Z');
const facts = runs.map((r, i) => {
  const chars = r.traj.reduce((n, m) => n + (typeof m.content === 'string' ? m.content.length : 0), 0);
  const out = r.traj.filter((m) => m.role === 'assistant').length;
  const cancels = r.traj.reduce((n, m) => n + (m.tool_calls ?? []).filter((c) => c.function?.name === 'cancel_reservation').length, 0);
  // A score posted through the API on all but every seventh trace.
  const quality = i % 7 === 0 ? undefined : ((i * 37) % 11) / 10;
  if (i % 10 === 9) return { i, dur: -1, tokens: -1, cost: -1, cancels, reward: r.reward, quality };
  const inTok = Math.floor(chars / 100);
  return { i, dur: r.traj.length * 1000, tokens: inTok + out, cost: (inTok * price.input + out * price.output) / 1e6, inTok, out, cancels, reward: r.reward, quality };
});

let srv, browser, page, problems, ds;
let ids; // trace ids by index

before(async () => {
  ({ srv, browser, page, problems } = await openPage());
  ds = await createDataset(srv.base, 'airline-sort');
  // Canonical JSON lines: the trajectory's messages, its reward, a span.
  const lines = runs.map((r, i) => {
    const f = facts[i];
    const t = { name: `task ${r.task_id}`, metadata: { task_id: r.task_id, reward: r.reward }, events: r.traj };
    if (f.dur >= 0)
      t.spans = [
        {
          id: 'llm',
          name: 'chat gpt-4o',
          kind: 'LLM',
          start_time: new Date(t0).toISOString(),
          end_time: new Date(t0 + f.dur).toISOString(),
          attributes: { 'gen_ai.request.model': 'gpt-4o', 'gen_ai.usage.input_tokens': f.inTok, 'gen_ai.usage.output_tokens': f.out },
        },
      ];
    return JSON.stringify(t);
  });
  const file = join(mkdtempSync(join(tmpdir(), 'lookout-sort-')), 'airline-sort.jsonl');
  writeFileSync(file, lines.join('\n') + '\n');
  await uploadFile(srv.base, ds.id, file);
  ids = (await api(srv.base, 'GET', `/datasets/${ds.id}/traces?limit=1000`)).traces.sort((a, b) => a.index - b.index).map((t) => t.id);
  assert.equal(ids.length, 200);

  // Violations: a saved policy checked over the dataset.
  const pol = await api(srv.base, 'POST', `/datasets/${ds.id}/policies`, { name: 'cancel-calls', source: cancelPolicy });
  // The check answers server-sent events; the stream ends with the check.
  const chk = await fetch(`${srv.base}/api/v1/datasets/${ds.id}/policies/${pol.id}/check`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' });
  const events = await chk.text();
  assert.ok(chk.ok && events.includes('event: done'), `the check: ${chk.status} ${events.slice(-300)}`);
  // Scores through the API, then an evaluation run of a code criterion.
  for (const f of facts) if (f.quality !== undefined) await api(srv.base, 'POST', `/traces/${ids[f.i]}/scores`, { criterion: 'quality', value: f.quality, source: 'human' });
  const run = await api(srv.base, 'POST', `/datasets/${ds.id}/eval/runs`, { criteria: [{ name: 'solved', evaluator: 'code', expr: 'metadata.reward == 1' }] });
  for (let k = 0; ; k++) {
    const r = await api(srv.base, 'GET', `/eval/runs/${run.id}`);
    if (r.state === 'done' || r.state === 'finished' || r.state === 'completed') break;
    assert.ok(!['failed', 'cancelled', 'error'].includes(r.state), `the run ${r.state}`);
    assert.ok(k < 600, 'the run does not end');
    await new Promise((res) => setTimeout(res, 100));
  }
});

after(async () => {
  await browser?.close();
  await srv?.stop();
});

/** expected is the order the test computes: by key, ties by index, both
 * in the direction asked; for a score, the traces without one last, by
 * index in the same direction. */
function expected(key, desc) {
  const s = desc ? -1 : 1;
  const val = (f) => ({ time: 0, duration: f.dur, tokens: f.tokens, cost: f.cost, violations: f.cancels, 'score:quality': f.quality })[key];
  return [...facts]
    .sort((a, b) => {
      const va = val(a), vb = val(b);
      if ((va === undefined) !== (vb === undefined)) return va === undefined ? 1 : -1;
      if (va !== undefined && va !== vb) return (va < vb ? -1 : 1) * s;
      return (a.i - b.i) * s;
    })
    .map((f) => ids[f.i]);
}

/** firstRows are the trace ids of the list's first n rows once loaded. */
async function firstRows(n) {
  await page.waitForFunction((n) => document.querySelectorAll('.trow[data-trace]').length >= n && document.querySelector('.vl-row[data-i="0"] .trow[data-trace]') && !document.querySelector('.trow.placeholder'), n, { timeout: 10000 });
  const rows = await page.$$eval('.vl-row', (rs) =>
    rs
      .sort((a, b) => Number(a.dataset.i) - Number(b.dataset.i))
      .map((r) => r.querySelector('.trow')?.getAttribute('data-trace'))
      .filter(Boolean),
  );
  return rows.slice(0, n);
}

async function clickHeader(key) {
  const before = await page.$$eval('.trow[data-trace]', (rs) => rs.map((r) => r.getAttribute('data-trace')).join());
  // A DOM click: columns may still be added (a criterion's) as rows load.
  await page.$eval(`.thead [data-sort="${key}"] button`, (b) => b.click());
  // The rows change, unless the order is the same.
  await page.waitForFunction((b) => [...document.querySelectorAll('.trow[data-trace]')].map((r) => r.getAttribute('data-trace')).join() !== b, before, { timeout: 3000 }).catch(() => {});
}

async function waitQuiet() {
  await page.waitForLoadState('networkidle');
}

describe('sortable list columns, verdict columns and score/verdict search (issue #20)', () => {
  test('each column sorts both ways, the URL keeps it, aria-sort says it', async () => {
    // Violations as the test reads the file: a violation per cancel call.
    for (const [i, id] of ids.entries()) {
      const anns = (await api(srv.base, 'GET', `/traces/${id}/annotations`)).annotations.filter((a) => a.source === 'analyzer');
      assert.equal(anns.length, facts[i].cancels, `trace ${i}'s violations`);
    }
    assert.ok(facts.filter((f) => f.cancels).length > 5, 'some trajectories cancel');
    await page.goto(`${srv.base}/datasets/local/airline-sort`);
    await page.locator('.trow[data-trace]').first().waitFor();
    await page.locator('.thead [data-sort="score:quality"]').waitFor();
    assert.deepEqual(await firstRows(15), expected('time', false).slice(0, 15), 'by index at first');
    for (const key of ['duration', 'tokens', 'cost', 'violations', 'score:quality', 'time']) {
      await clickHeader(key);
      await waitQuiet();
      const desc = key !== 'time';
      assert.deepEqual(await firstRows(15), expected(key, desc).slice(0, 15), `${key} ${desc ? 'desc' : 'asc'}`);
      assert.equal(await page.getAttribute(`.thead [data-sort="${key}"]`, 'aria-sort'), desc ? 'descending' : 'ascending');
      const u = new URL(page.url());
      assert.equal(u.searchParams.get('sort') ?? 'time', key);
      await clickHeader(key);
      await waitQuiet();
      assert.deepEqual(await firstRows(15), expected(key, !desc).slice(0, 15), `${key} ${desc ? 'asc' : 'desc'}`);
      assert.equal(await page.getAttribute(`.thead [data-sort="${key}"]`, 'aria-sort'), desc ? 'ascending' : 'descending');
    }
    // A reload keeps the sort; scrolled to the end, the last rows follow.
    await page.goto(`${srv.base}/datasets/local/airline-sort?sort=cost&order=desc`);
    await page.locator('.trow[data-trace]').first().waitFor();
    assert.deepEqual(await firstRows(15), expected('cost', true).slice(0, 15), 'cost desc after a reload');
    await page.$eval('.trace-list', (el) => (el.scrollTop = el.scrollHeight));
    // The last row is rendered, and no row is waiting for its page.
    await page.waitForFunction(() => document.querySelector('.vl-row[data-i="199"] .trow[data-trace]') && !document.querySelector('.trow.placeholder'));
    const last = await page.$$eval('.vl-row', (rs) =>
      rs
        .sort((a, b) => Number(a.dataset.i) - Number(b.dataset.i))
        .map((r) => r.querySelector('.trow')?.getAttribute('data-trace'))
        .filter(Boolean),
    );
    const want = expected('cost', true);
    assert.deepEqual(last.slice(-5), want.slice(-5), 'the last rows by cost');
    // j/k move through the sorted rows.
    await page.$eval('.trace-list', (el) => (el.scrollTop = 0));
    await page.waitForFunction(() => !document.querySelector('.trow.placeholder'));
    await page.keyboard.press('j');
    await page.keyboard.press('j');
    await page.keyboard.press('j');
    await page.keyboard.press('k');
    assert.equal(await page.getAttribute('.trow.selected', 'data-trace'), want[1], 'j j j k selects the second row');
    await shot(page, 'r2-list-sorted-cost');
    assert.deepEqual(problems, []);
  });

  test('verdict columns show each criterion per trace', async () => {
    await page.goto(`${srv.base}/datasets/local/airline-sort`);
    await page.locator('.trow[data-trace]').first().waitFor();
    await page.locator('.thead [data-sort="score:solved"]').waitFor();
    await page.locator('.thead [data-sort="score:quality"]').waitFor();
    // Every row, scrolled through.
    const seen = new Map();
    await page.$eval('.trace-list', (el) => (el.scrollTop = 0));
    for (let k = 0; k < 100; k++) {
      await page.waitForFunction(() => !document.querySelector('.trow.placeholder'));
      for (const r of await page.$$eval('.trow[data-trace]', (rs) =>
        rs.map((r) => ({
          id: r.getAttribute('data-trace'),
          solved: r.querySelector('[data-criterion="solved"]')?.getAttribute('data-verdict'),
          quality: r.querySelector('[data-criterion="quality"]')?.textContent,
        })),
      ))
        seen.set(r.id, r);
      const end = await page.$eval('.trace-list', (el) => {
        const end = el.scrollTop + el.clientHeight >= el.scrollHeight - 1;
        el.scrollTop += el.clientHeight;
        return end;
      });
      if (end) break;
      await page.waitForTimeout(50);
    }
    assert.equal(seen.size, 200);
    const pass = facts.filter((f) => f.reward === 1).length;
    assert.equal([...seen.values()].filter((r) => r.solved === 'pass').length, pass, 'solved: pass');
    assert.equal([...seen.values()].filter((r) => r.solved === 'fail').length, 200 - pass, 'solved: fail');
    for (const f of facts) {
      const want = f.reward === 1 ? 'pass' : 'fail';
      assert.equal(seen.get(ids[f.i]).solved, want, `trace ${f.i} solved`);
      assert.equal(seen.get(ids[f.i]).quality, f.quality === undefined ? '' : String(f.quality), `trace ${f.i} quality`);
    }
    await shot(page, 'r2-list-verdicts');
    assert.deepEqual(problems, []);
  });

  for (const [q, count] of [
    ['score:quality>0.5', facts.filter((f) => f.quality !== undefined && f.quality > 0.5).length],
    ['verdict:solved=fail', facts.filter((f) => f.reward !== 1).length],
    ['verdict:solved=pass', facts.filter((f) => f.reward === 1).length],
  ])
    test(`search ${q} finds ${count} traces`, async () => {
      assert.ok(count > 10 && count < 200, `${q}: ${count} traces is a count worth checking`);
      await page.fill('input[aria-label="search traces"]', q);
      await page.press('input[aria-label="search traces"]', 'Enter');
      await page.waitForFunction((want) => document.querySelector('.search-status')?.textContent === want, `${count} matching traces`, { timeout: 15000 }).catch(() => {});
      assert.equal(await page.textContent('.search-status'), `${count} matching traces`);
      // The rows are the traces the test expects.
      const want = new Set(facts.filter((f) => (q.startsWith('score') ? f.quality !== undefined && f.quality > 0.5 : q.endsWith('fail') ? f.reward !== 1 : f.reward === 1)).map((f) => ids[f.i]));
      const shown = await page.$$eval('.trow[data-trace]', (rs) => rs.map((r) => r.getAttribute('data-trace')));
      assert.ok(shown.length > 5 && shown.every((id) => want.has(id)), `${q}: the rows shown are among the expected traces`);
      assert.deepEqual(problems, []);
    });
});
