// End-to-end tests of the trace header and of cost and tokens (issue #20),
// in headless Chromium against a real `lookout serve` (harness.mjs), on the
// shared corpus. Every expected number is computed here from the corpus
// file itself (and the price table's own file), not by the UI's code or the
// server's.
import assert from 'node:assert/strict';
import { copyFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { api, createDataset, openPage, repo, screenshots, shared, shot, uploadFile, watch } from './harness.mjs';

const corpus = join(shared, 'corpus');
const usd = (x) => '$' + String(Number(x.toPrecision(3)));
const int = (n) => n.toLocaleString('en-US');

let srv, browser, page, problems;

before(async () => {
  ({ srv, browser, page, problems } = await openPage());
});

after(async () => {
  await browser?.close();
  await srv?.stop();
});

/** seconds reads a duration as the page writes it ("7.36 s", "250 ms",
 * "1 min 3 s") in seconds. */
function seconds(text) {
  let m = /(\d+) min (\d+) s/.exec(text);
  if (m) return Number(m[1]) * 60 + Number(m[2]);
  m = /([\d.]+) (ms|s)\b/.exec(text);
  assert.ok(m, `no duration in ${text}`);
  return Number(m[1]) / (m[2] === 'ms' ? 1000 : 1);
}

/** freshPage is a page with no memory of lists opened before: a shared
 * link opened by someone else. */
async function freshPage(width = 1400, height = 900) {
  const ctx = await browser.newContext({ viewport: { width, height } });
  const p = await ctx.newPage();
  p.setDefaultTimeout(10000);
  return { p, ctx, probs: watch(p) };
}

describe('trace header: metadata, tokens, cost, duration', () => {
  test('a Langfuse export: totals of its own usageDetails and costDetails, the dataset in the breadcrumb from a shared link', async () => {
    const file = join(corpus, 'otel/langfuse/claude-agent-2025-12-22.trace.json');
    const raw = JSON.parse(readFileSync(file, 'utf8'));
    let tin = 0,
      tout = 0,
      cost = 0,
      first = Infinity,
      last = -Infinity;
    for (const o of raw.observations) {
      tin += o.usageDetails?.input ?? 0;
      tout += o.usageDetails?.output ?? 0;
      cost += o.costDetails?.total ?? 0;
      first = Math.min(first, Date.parse(o.startTime));
      if (o.endTime) last = Math.max(last, Date.parse(o.endTime));
    }
    assert.ok(tin > 0 && cost > 0);
    const ds = await createDataset(srv.base, 'langfuse-claude');
    const id = (await uploadFile(srv.base, ds.id, file)).ids[0];

    const { p, ctx, probs } = await freshPage();
    await p.goto(`${srv.base}/traces/${id}`);
    const sum = p.locator('.trace-summary .usage-totals');
    await sum.waitFor();
    assert.equal(await sum.locator('.sum-in').textContent(), int(tin));
    assert.equal(await sum.locator('.sum-out').textContent(), int(tout));
    assert.equal(await sum.locator('.sum-cost-value').textContent(), usd(cost));
    assert.equal(await sum.locator('.sum-cost .est').count(), 0, 'a recorded cost is not marked estimated');
    assert.ok(Math.abs(seconds(await sum.locator('.sum-duration').textContent()) - (last - first) / 1000) < 0.01);
    assert.match(await sum.locator('.sum-models').textContent(), new RegExp(raw.observations.find((o) => o.model).model));
    // Reached by a link, not from the list: the breadcrumb still names the dataset.
    const crumb = p.locator('.trace-head h2 a.crumb-dataset');
    await crumb.waitFor();
    assert.equal(await crumb.textContent(), 'langfuse-claude');
    assert.equal(await crumb.getAttribute('href'), '/datasets/local/langfuse-claude');
    await ctx.close();
    assert.deepEqual(probs, []);
  });

  test('a tau-bench trace: its reward and task id in the header', async () => {
    const file = join(corpus, 'openai/tau-bench/gpt-4o-airline.json');
    const raw = JSON.parse(readFileSync(file, 'utf8'));
    const ds = await createDataset(srv.base, 'airline-head');
    await uploadFile(srv.base, ds.id, file);
    const list = (await api(srv.base, 'GET', `/datasets/${ds.id}/traces?limit=5`)).traces.sort((a, b) => a.index - b.index);
    await page.goto(`${srv.base}/traces/${list[3].id}`);
    const chip = (k) => page.locator(`.trace-summary .meta-chip[data-key="${k}"]`);
    await chip('reward').waitFor();
    assert.equal((await chip('reward').textContent()).replace(/^reward\s*/, ''), String(raw[3].reward));
    assert.equal((await chip('task_id').textContent()).replace(/^task_id\s*/, ''), String(raw[3].task_id));
    // No spans, no usage: no totals are made up.
    assert.equal(await page.locator('.trace-summary .sum-tokens, .trace-summary .sum-cost').count(), 0);
  });

  test('a cost priced from the table shows "est."; each card shows its span\'s model and tokens and links to it', async () => {
    // any-agent spans with their recorded costs taken out: the server prices
    // the tokens, at the price in internal/usage/prices.json.
    const file = join(corpus, 'otel/any-agent/AGNO_trace.json');
    const text = readFileSync(file, 'utf8');
    const doc = JSON.parse(text.replace(/"(trace_id|span_id)": (\d{16,})/g, '"$1": "$2"')); // keeps 128-bit ids exact
    const prices = JSON.parse(readFileSync(join(repo, 'internal/usage/prices.json'), 'utf8')).models;
    let tin = 0,
      tout = 0;
    const calls = [];
    for (const s of doc.spans) {
      const a = s.attributes ?? {};
      delete a['gen_ai.usage.input_cost'];
      delete a['gen_ai.usage.output_cost'];
      if (a['gen_ai.usage.input_tokens'] !== undefined) {
        tin += a['gen_ai.usage.input_tokens'];
        tout += a['gen_ai.usage.output_tokens'];
        calls.push(s);
      }
    }
    const model = calls[0].attributes['gen_ai.request.model']; // mistral/mistral-small-latest
    const price = prices['mistral-small'];
    assert.ok(model.includes('mistral-small') && price, model);
    const want = (tin * price.input + tout * price.output) / 1e6;
    // Back to the file's own text, the ids as they were.
    const body = JSON.stringify(doc).replace(/"(trace_id|span_id)":"(\d{16,})"/g, '"$1":$2');
    const ds = await createDataset(srv.base, 'estimated');
    const r = await api(srv.base, 'POST', `/datasets/${ds.id}/upload?filename=agno.json`, body, { 'Content-Type': 'application/octet-stream' });
    const id = r.ids[0];

    await page.goto(`${srv.base}/traces/${id}`);
    const sum = page.locator('.trace-summary .usage-totals');
    await sum.waitFor();
    assert.equal(await sum.locator('.sum-cost-value').textContent(), usd(want));
    assert.equal((await sum.locator('.sum-cost .est').textContent()).trim(), 'est.');
    assert.equal(await sum.locator('.sum-in').textContent(), int(tin));
    assert.equal(await sum.locator('.sum-out').textContent(), int(tout));

    // Cards from a model call: its model, tokens in and out, est. cost, and a link to the span.
    const tr = await api(srv.base, 'GET', `/traces/${id}`);
    const byName = tr.spans.filter((s) => s.attributes?.['gen_ai.usage.input_tokens'] !== undefined);
    assert.equal(byName.length, calls.length);
    const k = tr.events.findIndex((e) => byName.some((s) => s.id === e.span_id));
    assert.ok(k >= 0, 'an event comes from a model call');
    const span = byName.find((s) => s.id === tr.events[k].span_id);
    const card = page.locator(`.card[data-event="${k}"]`);
    await card.waitFor();
    const badge = card.locator('.card-span');
    assert.equal(await badge.locator('.model').textContent(), span.attributes['gen_ai.request.model']);
    const tok = await badge.locator('.tok').textContent();
    assert.match(tok, new RegExp(`\\b${span.attributes['gen_ai.usage.input_tokens']} in\\b`), tok);
    assert.match(tok, new RegExp(`\\b${span.attributes['gen_ai.usage.output_tokens']} out\\b`), tok);
    assert.match(await badge.locator('.cost').textContent(), /est\.$/);
    const ms = Date.parse(span.end_time) - Date.parse(span.start_time);
    assert.ok(Math.abs(seconds(await badge.locator('.lat').textContent()) - ms / 1000) < 0.01);
    await page.setViewportSize({ width: 1200, height: 560 });
    await shot(page, 'r2-trace-header-cost');
    // README's picture: refreshed on demand, so that a test run leaves the tree clean.
    if (process.env.UPDATE_DOCS_SCREENSHOTS) copyFileSync(join(screenshots, 'r2-trace-header-cost.png'), join(repo, 'docs/explorer-trace-header.png'));
    await page.setViewportSize({ width: 1400, height: 900 });
    await badge.locator('a.span-link').click();
    await page.waitForSelector(`.tree-row.selected[data-span="${span.id}"]`);
    assert.equal(await page.locator('button.tab-tree').getAttribute('aria-selected'), 'true');
    const det = await page.locator(`[data-span-details="${span.id}"]`).textContent();
    assert.match(det, /cost: \$[\d.e-]+ est\./);
    assert.match(await page.locator(`.tree-row[data-span="${span.id}"] .cost`).textContent(), /est\.$/);
    assert.deepEqual(problems, []);
  });

  test('at 400, 600 and 900 px the header wraps inside the window', async () => {
    const ds = await createDataset(srv.base, 'narrow-head');
    const id = (await uploadFile(srv.base, ds.id, join(corpus, 'otel/langfuse/langgraph-python-2025-08-22.trace.json'))).ids[0];
    for (const w of [400, 600, 900]) {
      const { p, ctx, probs } = await freshPage(w, 800);
      await p.goto(`${srv.base}/traces/${id}`);
      await p.waitForSelector('.trace-summary .sum-cost');
      const over = await p.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      assert.ok(over <= 0, `${w} px: the page is ${over} px wider than the window`);
      const s = await p.locator('.trace-summary').evaluate((e) => e.getBoundingClientRect().right);
      assert.ok(s <= w, `${w} px: the header ends at ${s}`);
      const chat = await p.locator('.chat').evaluate((e) => e.getBoundingClientRect().width);
      if (w < 900) assert.ok(chat >= 0.9 * w, `${w} px: chat ${chat} px`);
      await shot(p, `r2-trace-header-${w}`);
      // README's picture of the narrow layout, refreshed on demand.
      if (w === 400 && process.env.UPDATE_DOCS_SCREENSHOTS) copyFileSync(join(screenshots, 'r2-trace-header-400.png'), join(repo, 'docs', 'explorer-narrow.png'));
      await ctx.close();
      assert.deepEqual(probs, []);
    }
  });
});
