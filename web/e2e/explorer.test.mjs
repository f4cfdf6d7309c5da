// End-to-end tests of the explorer in headless Chromium against a real
// `lookout serve` (see harness.mjs). Each test saves a screenshot under
// web/e2e/screenshots/.
import assert from 'node:assert/strict';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { api, createDataset, launch, shared, shot, startServer, uploadFile, watch } from './harness.mjs';

const airline = join(shared, 'corpus/openai/tau-bench/gpt-4o-airline.json');
const seeds = join(shared, 'corpus/seeds');

let srv, browser, page, problems;

before(async () => {
  srv = await startServer();
  browser = await launch();
  page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  problems = watch(page);
});

after(async () => {
  await browser?.close();
  await srv?.stop();
});

/** inView reports whether the element's box is inside the window. */
async function inView(locator) {
  const box = await locator.boundingBox();
  const vp = page.viewportSize();
  return !!box && box.y >= 0 && box.y + Math.min(box.height, 40) <= vp.height && box.height > 0;
}

/** expect400 removes the one console error a deliberate 400 answer causes. */
function expect400() {
  const k = problems.findIndex((p) => /status of 400/.test(p));
  assert.ok(k >= 0, `expected the console error of a 400 answer, got ${JSON.stringify(problems)}`);
  problems.splice(k, 1);
}

/** expect422 removes the one console error a deliberate 422 answer causes. */
function expect422() {
  const k = problems.findIndex((p) => /status of 422/.test(p));
  assert.ok(k >= 0, 'the browser saw the 422 answer');
  problems.splice(k, 1);
}

async function openFirstTrace(datasetName) {
  await page.goto(`${srv.base}/datasets/local/${datasetName}`);
  await page.locator('.trow[data-trace]').first().click();
  await page.waitForSelector('.card[data-event="0"]');
}

describe('explorer', () => {
  test('upload the tau-bench airline file from the home page, with progress', async () => {
    await page.goto(srv.base + '/');
    await page.waitForSelector('.home');
    await page.setInputFiles('.upload input[type=file]', airline);
    await page.fill('input[name=upload-name]', 'airline');
    await page.click('.upload button:has-text("Upload")');
    await page.waitForSelector('.upload progress');
    const res = page.locator('.upload-result');
    await res.waitFor({ timeout: 60000 });
    assert.match(await res.textContent(), /Stored 200 traces in airline/);
    const row = page.locator('tr[data-dataset="airline"]');
    await row.waitFor();
    assert.match(await row.textContent(), /200/);
    await shot(page, 'home-upload');
  });

  test('an invalid upload is reported line by line and stores nothing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lookout-e2e-bad-'));
    const bad = join(dir, 'bad.jsonl');
    writeFileSync(bad, '[{"role": "user", "content": "fine"}]\n[{"role": "user", "content": 5}]\n{not json\n');
    await page.goto(srv.base + '/');
    await page.setInputFiles('.upload input[type=file]', bad);
    await page.fill('input[name=upload-name]', 'broken');
    await page.click('.upload button:has-text("Upload")');
    await page.locator('.upload-error').waitFor();
    assert.match(await page.locator('.upload-error').textContent(), /upload rejected, nothing stored/);
    const lines = await page.locator('table.errors tbody tr td:first-child').allTextContents();
    assert.ok(lines.includes('2'), `error lines ${lines}`);
    assert.ok(lines.includes('3'), `error lines ${lines}`);
    const ds = (await api(srv.base, 'GET', '/datasets?name=broken')).datasets;
    assert.equal(ds.length === 0 ? 0 : ds[0].trace_count, 0);
    await shot(page, 'upload-errors');
  });

  test('open a trace: tool calls and their outputs link to each other', async () => {
    await openFirstTrace('airline');
    const call = page.locator('.tool-call:has(a.to-output)').first();
    await call.waitFor();
    const callId = await call.getAttribute('data-call');
    const callEvent = Number(await call.locator('xpath=ancestor::article').getAttribute('data-event'));
    assert.ok(callId, 'the tool call has an id');
    await call.locator('a.to-output').click();
    const out = page.locator('.card.focused');
    await out.waitFor();
    const outEvent = Number(await out.getAttribute('data-event'));
    assert.ok(outEvent > callEvent, `output ${outEvent} after call ${callEvent}`);
    assert.equal(await out.locator('.r-tool').textContent(), 'tool');
    assert.ok(await inView(out), 'the output card is on screen');
    // and back from the output to its call
    await out.locator('a.to-call').click();
    await page.waitForSelector(`.card.focused[data-event="${callEvent}"]`);
    assert.ok(await inView(page.locator(`.card[data-event="${callEvent}"]`)));
    assert.ok(await page.locator(`.card[data-event="${callEvent}"] .tool-name`).textContent());
    await shot(page, 'trace-view');
  });

  test('a line annotation is saved through the API and shown after reload', async () => {
    await openFirstTrace('airline');
    const card = page.locator('.card[data-event="1"]');
    await card.locator('button.toggle-raw').click();
    await card.locator('button.ln[data-line="0"]').click();
    assert.equal(await page.locator('.composer-addr').textContent(), 'messages.1.content:L0');
    await page.fill('.composer textarea', 'the user opens with the route');
    await page.click('button.save-comment');
    await page.locator('.ann:has-text("the user opens with the route")').waitFor();
    const traceId = page.url().split('/traces/')[1].split(/[?#]/)[0];
    const stored = await api(srv.base, 'GET', `/traces/${traceId}/annotations`);
    assert.deepEqual(
      stored.annotations.map((a) => [a.address, a.content]),
      [['messages.1.content:L0', 'the user opens with the route']],
    );
    await page.reload();
    await page.locator('.ann:has-text("the user opens with the route")').waitFor();
    const mark = page.locator('.card[data-event="1"] mark.hl-annotation');
    await mark.first().waitFor();
    const firstLine = (await api(srv.base, 'GET', `/traces/${traceId}`)).events[1].content.split('\n')[0];
    assert.equal((await mark.allTextContents()).join(''), firstLine);
    assert.match(await mark.first().getAttribute('title'), /the user opens with the route/);
    await shot(page, 'line-annotation');
  });

  test('a comment on a selected range lands on exactly those characters', async () => {
    await openFirstTrace('airline');
    // Select characters 4..12 of the first text piece of event 1.
    const want = await page.evaluate(() => {
      const span = document.querySelector('.card[data-event="1"] .rich [data-o]');
      const text = span.firstChild;
      const r = document.createRange();
      r.setStart(text, 4);
      r.setEnd(text, 12);
      const s = getSelection();
      s.removeAllRanges();
      s.addRange(r);
      span.dispatchEvent(new MouseEvent('mouseup', { bubbles: true }));
      return { text: r.toString(), o: Number(span.dataset.o) };
    });
    await page.click('button.sel-comment');
    const addr = await page.locator('.composer-addr').textContent();
    assert.equal(addr, `messages.1.content:${want.o + 4}-${want.o + 12}`);
    await page.fill('.composer textarea', 'range note');
    await page.click('button.save-comment');
    const mark = page.locator('.card[data-event="1"] mark.hl-annotation[title*="range note"]');
    await mark.first().waitFor();
    assert.equal((await mark.allTextContents()).join(''), want.text);
    // edit and delete our own annotation
    const annId = await page.locator('.ann:has-text("range note")').getAttribute('data-ann');
    const ann = page.locator(`.ann[data-ann="${annId}"]`);
    await ann.locator('button.edit').click();
    await ann.locator('textarea').fill('range note, edited');
    await ann.locator('button:has-text("Save")').click();
    await page.locator('.ann:has-text("range note, edited")').waitFor();
    await page.locator('.ann:has-text("range note, edited") button.delete').click();
    await page.locator('.ann:has-text("range note")').waitFor({ state: 'detached' });
    await shot(page, 'range-annotation');
  });

  test('a selection across the tokens of a JSON tool output maps to its source characters', async () => {
    await openFirstTrace('airline');
    const traceId = page.url().split('/traces/')[1].split(/[?#]/)[0];
    const events = (await api(srv.base, 'GET', `/traces/${traceId}`)).events;
    const k = events.findIndex((e) => e.role === 'tool' && /^\{.{100,}\}$/s.test(e.content ?? ''));
    assert.ok(k > 0, 'a JSON tool output in the first trace');
    await page.goto(`${srv.base}/traces/${traceId}#messages.${k}`);
    await page.waitForSelector(`.card[data-event="${k}"] .rich code[data-o]`);
    // Code blocks carry one offset on the code element; the text between
    // tokens is bare, so the address comes from the text before the point.
    const sel = await page.evaluate((k) => {
      const code = document.querySelector(`.card[data-event="${k}"] .rich code[data-o]`);
      const texts = [];
      const w = document.createTreeWalker(code, NodeFilter.SHOW_TEXT);
      while (w.nextNode()) texts.push(w.currentNode);
      const r = document.createRange();
      r.setStart(texts[3], 1);
      r.setEnd(texts[9], 1);
      const s = getSelection();
      s.removeAllRanges();
      s.addRange(r);
      code.dispatchEvent(new MouseEvent('mouseup', { bubbles: true }));
      return { text: r.toString(), event: Number(code.closest('.card').dataset.event), nodes: texts.length };
    }, k);
    assert.ok(sel.nodes > 10 && sel.text.length > 5, JSON.stringify(sel));
    await page.click('button.sel-comment');
    const addr = await page.locator('.composer-addr').textContent();
    const m = addr.match(/^messages\.(\d+)\.content:(\d+)-(\d+)$/);
    assert.ok(m, addr);
    assert.equal(Number(m[1]), sel.event);
    const content = events[sel.event].content;
    // The output shows pretty-printed: the selection holds the source's
    // characters, with the printer's line breaks and indents between tokens.
    const picked = [...content].slice(Number(m[2]), Number(m[3])).join('');
    assert.equal(picked.replace(/\s+/g, ''), sel.text.replace(/\s+/g, ''), `${picked} | ${sel.text}`);
    assert.ok(/\S/.test(picked) && !/^\s|\s$/.test(picked.trim()), picked);
    await page.keyboard.press('Escape');
  });

  test('thumbs up is stored as an annotation and shown on the event', async () => {
    await openFirstTrace('airline');
    await page.locator('.card[data-event="2"] button.rate[aria-label="thumbs up"]').click();
    await page.locator('.card[data-event="2"] button.rate.on').waitFor();
    const traceId = page.url().split('/traces/')[1].split(/[?#]/)[0];
    const anns = (await api(srv.base, 'GET', `/traces/${traceId}/annotations`)).annotations;
    assert.ok(anns.some((a) => a.address === 'messages.2' && a.extra?.rating === 1), JSON.stringify(anns));
  });

  test('search a word in the dataset and land on its highlight in the trace', async () => {
    await page.goto(`${srv.base}/datasets/local/airline`);
    await page.fill('.search-input', 'baggage');
    await page.press('.search-input', 'Enter');
    await page.locator('.search-status').waitFor();
    const first = page.locator('.trow[data-trace]').first();
    await first.waitFor();
    await page.locator('.trow mark.hl-search').first().waitFor();
    assert.match((await page.locator('.trow mark.hl-search').first().textContent()).toLowerCase(), /baggage/);
    await shot(page, 'search-list');
    await first.click();
    const cur = page.locator('mark.hl-search.hl-current');
    await cur.waitFor();
    assert.equal((await cur.textContent()).toLowerCase(), 'baggage');
    await page.waitForFunction(() => {
      const r = document.querySelector('mark.hl-current').getBoundingClientRect();
      return r.top >= 0 && r.bottom <= innerHeight;
    });
    assert.match(await page.locator('.hl-count').textContent(), /^1 \/ \d+/);
    // n steps to the next highlight
    await page.keyboard.press('n');
    await page.waitForFunction(() => /^2 \//.test(document.querySelector('.hl-count').textContent));
    assert.equal((await page.locator('mark.hl-current').first().textContent()).toLowerCase(), 'baggage');
    await shot(page, 'search-highlight');
  });

  test('search in the full language (a tool filter, OR, a group, a negated filter) agrees with the API; a bad query names its column', async () => {
    await page.goto(`${srv.base}/datasets/local/airline`);
    const q = 'tool:cancel_reservation (refund OR "full amount") -meta:reward=0';
    await page.fill('.search-input', q);
    await page.press('.search-input', 'Enter');
    await page.waitForFunction(() => /^\d+ matching traces$/.test(document.querySelector('.search-status')?.textContent.trim() ?? ''));
    const shown = Number((await page.locator('.search-status').textContent()).trim().split(' ')[0]);
    const ds = (await api(srv.base, 'GET', '/datasets?name=airline')).datasets[0];
    const res = await api(srv.base, 'GET', `/datasets/${ds.id}/search?q=${encodeURIComponent(q)}&limit=1000`);
    assert.equal(shown, res.traces.length);
    assert.ok(shown > 0 && shown < 200, `${shown} traces`);
    // The first row is the first match, its hits marked.
    await page.locator(`.trow[data-trace="${res.traces[0].id}"]`).waitFor();
    await shot(page, 'search-language');
    // The trace page marks the hits the server gives for the trace.
    await page.locator(`.trow[data-trace="${res.traces[0].id}"]`).click();
    await page.locator('mark.hl-search.hl-current').waitFor();
    const n = Number((await page.locator('.hl-count').textContent()).split('/')[1]);
    assert.ok(n >= res.traces[0].hits.length, `${n} highlights for ${res.traces[0].hits.length} hits`);
    // A query the server cannot read: the message with its column, no page error.
    await page.goto(`${srv.base}/datasets/local/airline`);
    await page.fill('.search-input', 'refund (cancel');
    await page.press('.search-input', 'Enter');
    const err = page.locator('p.error[role=alert]');
    await err.waitFor();
    assert.match(await err.textContent(), /column 8: this "\(" is never closed/);
    expect400();
    await shot(page, 'search-bad-query');
  });

  test('an address after # scrolls to the place and marks it; j/k move between events', async () => {
    const list = await api(srv.base, 'GET', `/datasets/${(await api(srv.base, 'GET', '/datasets?name=airline')).datasets[0].id}/traces?limit=5`);
    const id = list.traces[3].id;
    const t = await api(srv.base, 'GET', `/traces/${id}`);
    // a non-blank line after the first, in an event past the first screen
    const k = t.events.findIndex((e, i) => i > 10 && typeof e.content === 'string' && e.content.split('\n').slice(1).some((l) => l.trim().length > 3));
    assert.ok(k > 0, 'a multi-line event deep in the trace');
    const lines = t.events[k].content.split('\n');
    const L = lines.findIndex((l, i) => i > 0 && l.trim().length > 3);
    await page.goto(`${srv.base}/traces/${id}#messages.${k}.content:L${L}`);
    const target = page.locator(`.card[data-event="${k}"] mark.hl-target`);
    await target.first().waitFor();
    // the marked text is the line as rendered: markdown markup is not shown
    const shown = lines[L].replace(/^\s*(\d+[.)]|[-*+]|#+|>)\s+/, '').replace(/[*_`]/g, '');
    assert.equal((await target.allTextContents()).join('').replace(/[*_`]/g, ''), shown);
    assert.ok(await inView(page.locator(`.card.focused[data-event="${k}"]`)));
    await page.keyboard.press('j');
    await page.waitForSelector(`.card.focused[data-event="${k + 1}"]`);
    await page.keyboard.press('k');
    await page.keyboard.press('k');
    await page.waitForSelector(`.card.focused[data-event="${k - 1}"]`);
    await shot(page, 'hash-address');
  });

  test('open the MLflow and Bedrock seed traces in the tree and timeline views', async () => {
    const ds = await createDataset(srv.base, 'seeds');
    const ml = await uploadFile(srv.base, ds.id, join(seeds, 'mlflow-bedrock-trace.json'));
    const br = await uploadFile(srv.base, ds.id, join(seeds, 'bedrock-raw-mlflow-blog.json'));
    const mlTrace = await api(srv.base, 'GET', `/traces/${ml.ids[0]}`);
    // MLflow: spans with times.
    await page.goto(`${srv.base}/traces/${ml.ids[0]}`);
    await page.click('button.tab-tree');
    await page.waitForSelector('.tree-row');
    await page.click('button:has-text("Collapse all")');
    const roots = await page.locator('.tree-row').count();
    await page.click('button:has-text("Expand all")');
    const all = await page.locator('.tree-row').count();
    assert.equal(all, mlTrace.spans.length, 'expand all shows every span');
    assert.ok(roots < all, `collapse all shows fewer rows (${roots} < ${all})`);
    const kinds = await page.locator('.tree-row .badge.kind').allTextContents();
    assert.ok(kinds.includes('CHAT_MODEL'), `kinds ${kinds}`);
    assert.ok((await page.locator('.tree-row .lat').count()) > 0, 'latency shown');
    // one node: collapse and expand
    const rootRow = page.locator('.tree-row').first();
    await rootRow.locator('button.caret').click();
    assert.equal(await page.locator('.tree-row').count(), 1);
    await rootRow.locator('button.caret').click();
    assert.ok((await page.locator('.tree-row').count()) > 1);
    // click a node: its details
    const child = page.locator('.tree-row').nth(1);
    const childId = await child.getAttribute('data-span');
    await child.click();
    await page.waitForSelector(`[data-span-details="${childId}"]`);
    assert.match(await page.locator('.span-details').textContent(), /inputs|outputs|attributes/i);
    await shot(page, 'tree-view');
    await page.click('button.tab-timeline');
    await page.waitForSelector('.tl-bar');
    assert.equal(await page.locator('.tl-row').count(), (await page.locator('.tl-bar').count()));
    const widths = await page.locator('.tl-bar').evaluateAll((els) => els.map((e) => e.getBoundingClientRect().width));
    assert.ok(Math.max(...widths) > 100, `the root bar spans the axis: ${widths}`);
    await shot(page, 'timeline-view');

    // Bedrock: a tree of phases; no times, so the timeline says so.
    const brTrace = await api(srv.base, 'GET', `/traces/${br.ids[0]}`);
    await page.goto(`${srv.base}/traces/${br.ids[0]}`);
    await page.click('button.tab-tree');
    await page.waitForSelector('.tree-row');
    await page.click('button:has-text("Expand all")');
    assert.equal(await page.locator('.tree-row').count(), brTrace.spans.length);
    const brKinds = await page.locator('.tree-row .badge.kind').allTextContents();
    assert.ok(brKinds.includes('pre-processing') || brKinds.includes('orchestration'), `kinds ${brKinds}`);
    await page.locator('.tree-row').nth(1).click();
    await page.waitForSelector('.span-details');
    await shot(page, 'bedrock-tree');
    await page.click('button.tab-timeline');
    const hasTimes = brTrace.spans.some((s) => s.start_time && s.end_time);
    if (hasTimes) await page.waitForSelector('.tl-bar');
    else await page.waitForSelector('.timeline-empty');
    await shot(page, 'bedrock-timeline');
  });

  test('run a policy over the dataset and see its highlight in a flagged trace', async () => {
    await page.goto(`${srv.base}/datasets/local/airline`);
    await page.fill('input[aria-label="policy name"]', 'baggage-talk');
    await page.fill('textarea[aria-label="policy source"]', 'raise "mentions baggage" if:\n    (msg: Message)\n    msg.role == "assistant"\n    "baggage" in msg.content\n');
    await page.click('button:has-text("Check syntax")');
    assert.equal(await page.locator('.diags').count(), 0);
    await page.click('button.run-policy');
    await page.waitForFunction(() => /^checked 200\/200/.test(document.querySelector('.check-status')?.textContent ?? ''), null, { timeout: 120000 });
    const status = await page.locator('.check-status').textContent();
    const flagged = Number(status.match(/(\d+) flagged/)[1]);
    assert.ok(flagged > 0 && flagged < 200, status);
    await page.click('button.show-flagged');
    await page.waitForFunction((n) => document.querySelectorAll('.trow[data-trace]').length === Math.min(n, 30) || document.querySelectorAll('.trow[data-trace]').length >= 10, flagged);
    await shot(page, 'policy-run');
    await page.locator('.trow[data-trace]').first().click();
    const mark = page.locator('mark.hl-analyzer');
    await page.click('.stepper button[title^="next"]');
    await mark.first().waitFor();
    assert.equal((await mark.first().textContent()).toLowerCase(), 'baggage');
    assert.match(await mark.first().getAttribute('title'), /mentions baggage/);
    await shot(page, 'policy-highlight');
  });

  test('a policy is created in block mode and each saved policy switched between block and log', async () => {
    const ds = (await api(srv.base, 'GET', '/datasets?name=airline')).datasets[0];
    const saved = async () =>
      Object.fromEntries((await api(srv.base, 'GET', `/datasets/${ds.id}/policies`)).policies.map((p) => [p.name, p.mode]));
    const modeOf = (name) => page.locator(`.policy-modes li[data-policy="${name}"] select.policy-mode`);
    await page.goto(`${srv.base}/datasets/local/airline`);
    // The policy the test before saved has the default mode.
    await modeOf('baggage-talk').waitFor();
    assert.equal(await modeOf('baggage-talk').inputValue(), 'log');
    // A new policy, in block mode.
    await page.selectOption('select[aria-label="saved policy"]', '');
    await page.fill('input[aria-label="policy name"]', 'no-refunds');
    await page.fill('textarea[aria-label="policy source"]', 'raise "refund offered" if:\n    (msg: Message)\n    "refund" in msg.content\n');
    await page.selectOption('select[aria-label="policy mode"]', 'block');
    await page.click('.policy-panel button:text-is("Save")');
    await modeOf('no-refunds').waitFor();
    assert.equal(await modeOf('no-refunds').inputValue(), 'block');
    assert.deepEqual(await saved(), { 'baggage-talk': 'log', 'no-refunds': 'block' });
    await shot(page, 'policy-modes');
    // Each saved policy's selector saves its mode at once.
    await modeOf('no-refunds').selectOption('log');
    await page.locator('.policy-panel .muted:has-text("no-refunds: mode log")').waitFor();
    await modeOf('baggage-talk').selectOption('block');
    await page.locator('.policy-panel .muted:has-text("baggage-talk: mode block")').waitFor();
    assert.deepEqual(await saved(), { 'baggage-talk': 'block', 'no-refunds': 'log' });
    // After a reload the page shows the saved modes; picking a saved
    // policy puts its mode in the editor.
    await page.reload();
    await modeOf('baggage-talk').waitFor();
    assert.equal(await modeOf('baggage-talk').inputValue(), 'block');
    assert.equal(await modeOf('no-refunds').inputValue(), 'log');
    await page.selectOption('select[aria-label="saved policy"]', { label: 'baggage-talk' });
    assert.equal(await page.locator('select[aria-label="policy mode"]').inputValue(), 'block');
    // Saving from the editor keeps the mode it shows.
    await page.click('.policy-panel button:text-is("Save")');
    await page.locator('.policy-panel .muted:has-text("saved baggage-talk")').waitFor();
    assert.equal((await saved())['baggage-talk'], 'block');
  });

  test('a syntax error in a policy is shown at its line and column', async () => {
    await page.goto(`${srv.base}/datasets/local/airline`);
    await page.fill('textarea[aria-label="policy source"]', 'raise "x" if:\n    (msg: Message\n');
    await page.click('button:has-text("Check syntax")');
    await page.locator('.diags li').first().waitFor();
    assert.match(await page.locator('.diags li').first().textContent(), /^2:5: /);
    assert.equal(await page.locator('.gutter .gl.err').textContent(), '2');
    expect422();
  });

  // withLatePolicies opens the airline dataset with its list of saved
  // policies held back until what runs first has run, then waits for it.
  const withLatePolicies = async (first) => {
    let release;
    const held = new Promise((r) => (release = r));
    const slow = async (route) => {
      await held;
      await route.continue();
    };
    await page.route('**/api/v1/datasets/*/policies', slow);
    try {
      await page.goto(`${srv.base}/datasets/local/airline`);
      await first();
      release();
      await page.locator('select[aria-label="saved policy"] option:has-text("baggage-talk")').waitFor({ state: 'attached' });
    } finally {
      release();
      await page.unroute('**/api/v1/datasets/*/policies', slow);
    }
  };

  test('what the user types before the saved policies arrive is kept', async () => {
    // The list of saved policies comes late; the editor would open the
    // last saved one (baggage-talk) over what was typed meanwhile.
    const typed = 'raise "typed first" if:\n    (msg: Message)\n';
    await withLatePolicies(() => page.fill('textarea[aria-label="policy source"]', typed));
    assert.equal(await page.locator('textarea[aria-label="policy source"]').inputValue(), typed);
  });

  test('text selected in the editor before the saved policies arrive is what the typing replaces', async () => {
    // A select-all, then the list, then the typing: the list must not put
    // a saved policy under the selection, or the typing lands after it.
    const ta = page.locator('textarea[aria-label="policy source"]');
    await withLatePolicies(async () => {
      await ta.focus();
      await ta.evaluate((el) => el.select());
    });
    const typed = 'raise "selected first" if:\n    (msg: Message)\n';
    await page.keyboard.insertText(typed);
    assert.equal(await ta.inputValue(), typed);
  });

  test('share: the owner makes a dataset public, then private again', async () => {
    const info = async () => (await api(srv.base, 'GET', '/datasets?name=airline')).datasets[0];
    assert.equal((await info()).public, false);
    await page.goto(`${srv.base}/datasets/local/airline`);
    await page.click('.share-toggle:has-text("Make public")');
    await page.locator('.dataset-head h2 .badge:has-text("public")').waitFor();
    assert.equal((await info()).public, true);
    await shot(page, 'dataset-public');
    await page.click('.share-toggle:has-text("Make private")');
    await page.locator('.dataset-head h2 .badge').waitFor({ state: 'detached' });
    assert.equal((await info()).public, false);
  });

  test('a metadata column chosen in the picker shows per trace and stays after reload', async () => {
    const ds = (await api(srv.base, 'GET', '/datasets?name=airline')).datasets[0];
    const first = (await api(srv.base, 'GET', `/datasets/${ds.id}/traces?limit=1`)).traces[0];
    await page.goto(`${srv.base}/datasets/local/airline`);
    await page.locator('.trow[data-trace]').first().waitFor();
    const cells = () => page.locator(`.trow[data-trace="${first.id}"] > span`).count();
    const before = await cells();
    await page.click('button:has-text("Columns")');
    await page.locator('.cols label:has-text("reward") input').check();
    const cell = page.locator(`.trow[data-trace="${first.id}"] > span`).last();
    await page.waitForFunction((n) => document.querySelectorAll('.trow[data-trace] ')[0].children.length === n, before + 1);
    assert.equal(await cell.textContent(), String(first.metadata.reward));
    await shot(page, 'dataset-columns');
    await page.reload();
    await page.locator('.trow[data-trace]').first().waitFor();
    assert.equal(await cells(), before + 1, 'the chosen column is kept');
    assert.equal(await cell.textContent(), String(first.metadata.reward));
    await page.click('button:has-text("Columns")');
    await page.locator('.cols label:has-text("reward") input').uncheck();
    await page.waitForFunction((n) => document.querySelectorAll('.trow[data-trace]')[0].children.length === n, before);
  });

  test('[ and ] open the previous and next trace of the list', async () => {
    const ds = (await api(srv.base, 'GET', '/datasets?name=airline')).datasets[0];
    const ids = (await api(srv.base, 'GET', `/datasets/${ds.id}/traces?limit=3`)).traces.map((t) => t.id);
    await page.goto(`${srv.base}/datasets/local/airline`);
    await page.locator(`.trow[data-trace="${ids[1]}"]`).click();
    await page.waitForURL(`**/traces/${ids[1]}`);
    await page.waitForSelector('.card[data-event="0"]');
    await page.keyboard.press(']');
    await page.waitForURL(`**/traces/${ids[2]}`);
    await page.waitForSelector('.card[data-event="0"]');
    await page.keyboard.press('[');
    await page.keyboard.press('[');
    await page.waitForURL(`**/traces/${ids[0]}`);
    await page.keyboard.press('[');
    await page.waitForTimeout(300);
    assert.ok(page.url().endsWith(`/traces/${ids[0]}`), 'no trace before the first');
  });

  test('deleting a dataset asks first: cancel keeps it, confirm removes it', async () => {
    await createDataset(srv.base, 'doomed');
    await page.goto(srv.base + '/');
    const row = page.locator('tr[data-dataset="doomed"]');
    await row.locator('button:has-text("Delete")').click();
    const dialog = page.locator('.modal[role="dialog"]');
    assert.match(await dialog.locator('h3').textContent(), /Delete doomed\?/);
    await dialog.locator('button:has-text("Cancel")').click();
    await dialog.waitFor({ state: 'detached' });
    assert.equal((await api(srv.base, 'GET', '/datasets?name=doomed')).datasets.length, 1);
    await row.locator('button:has-text("Delete")').click();
    await shot(page, 'delete-confirm');
    await dialog.locator('button.danger:has-text("Delete")').click();
    await row.waitFor({ state: 'detached' });
    assert.equal((await api(srv.base, 'GET', '/datasets?name=doomed')).datasets.length, 0);
  });

  test('grade with the keyboard: 1 passes a trace, g opens the next ungraded one; step scores show in the tree', async () => {
    const ds = (await api(srv.base, 'GET', '/datasets?name=airline')).datasets[0];
    await api(srv.base, 'POST', `/datasets/${ds.id}/criteria`, { name: 'helpful', evaluator: 'human' });
    const ids = (await api(srv.base, 'GET', `/datasets/${ds.id}/traces?limit=3`)).traces.map((t) => t.id);
    await api(srv.base, 'POST', `/traces/${ids[1]}/scores`, { criterion: 'helpful', value: true, source: 'human' });
    await page.goto(`${srv.base}/datasets/local/airline`);
    await page.locator(`.trow[data-trace="${ids[0]}"]`).click();
    await page.waitForURL(`**/traces/${ids[0]}`);
    await page.locator('.scores .grade[data-criterion="helpful"]').waitFor();
    await page.keyboard.press('1');
    await page.locator('.scores .score[data-score="helpful"] .score-value.pass').waitFor();
    const mine = (await api(srv.base, 'GET', `/traces/${ids[0]}/scores`)).scores.filter((s) => s.current && s.criterion === 'helpful');
    assert.deepEqual(mine.map((s) => [s.value, s.source]), [[true, 'human']]);
    await shot(page, 'grading');
    // g skips the second trace, graded already.
    await page.keyboard.press('g');
    await page.waitForURL(`**/traces/${ids[2]}`);
    await page.locator('.scores .grade[data-criterion="helpful"]').waitFor();
    await page.keyboard.press('2');
    await page.locator('.scores .score[data-score="helpful"] .score-value.fail').waitFor();
    // A score on a step shows on its row of the tree.
    const seeds = (await api(srv.base, 'GET', '/datasets?name=seeds')).datasets[0];
    const mlId = (await api(srv.base, 'GET', `/datasets/${seeds.id}/traces?limit=1`)).traces[0].id;
    const span = (await api(srv.base, 'GET', `/traces/${mlId}`)).spans[0].id;
    await api(srv.base, 'POST', `/traces/${mlId}/scores`, { criterion: 'grounded', value: false, address: `spans.${span}`, source: 'rule' });
    await page.goto(`${srv.base}/traces/${mlId}`);
    await page.click('button.tab-tree');
    const badge = page.locator(`.tree-row[data-span="${span}"] .step-score.fail`);
    await badge.waitFor();
    assert.match(await badge.textContent(), /grounded ✗/);
    // An evaluation run: the list shows each trace's status.
    const run = await api(srv.base, 'POST', `/datasets/${ds.id}/eval/runs`, { name: 'e2e', criteria: [{ name: 'solved', evaluator: 'code', expr: 'metadata.reward == 1' }] });
    for (let i = 0; (await api(srv.base, 'GET', `/eval/runs/${run.id}`)).state === 'running'; i++) {
      assert.ok(i < 600, 'the run ends');
      await new Promise((r) => setTimeout(r, 100));
    }
    await page.goto(`${srv.base}/datasets/local/airline`);
    const status = page.locator(`.trow[data-trace="${ids[0]}"] .eval-status[data-eval="evaluated"]`);
    await status.waitFor();
    assert.match(await status.getAttribute('title'), /solved: evaluated/);
    await shot(page, 'eval-status');
    // The Evaluation panel: the run's pass rate; a run started here; the two
    // compared.
    const all = (await api(srv.base, 'GET', `/datasets/${ds.id}/traces?limit=1000`)).traces;
    const solved = all.filter((t) => t.metadata?.reward === 1).length;
    const rate = page.locator(`.eval-panel .run[data-run="${run.id}"] .run-crit[data-criterion="solved"] .rate`);
    assert.equal(await rate.textContent(), `${Math.round((solved / all.length) * 1000) / 10}%`);
    await api(srv.base, 'DELETE', `/datasets/${ds.id}/criteria/${(await api(srv.base, 'GET', `/datasets/${ds.id}/criteria`)).criteria.find((c) => c.name === 'helpful').id}`);
    await api(srv.base, 'POST', `/datasets/${ds.id}/criteria`, { name: 'solved', evaluator: 'code', expr: 'metadata.reward >= 0' });
    await page.click('.eval-panel button.start-run');
    await page.locator('.eval-panel .run[data-state="done"]').nth(1).waitFor({ timeout: 60000 });
    const runs = (await api(srv.base, 'GET', `/datasets/${ds.id}/eval/runs`)).runs;
    const fresh = runs.find((r) => r.id !== run.id);
    await page.selectOption('select[aria-label="first run"]', run.id);
    await page.selectOption('select[aria-label="second run"]', fresh.id);
    await page.click('.eval-panel button:has-text("Compare")');
    await page.locator('.eval-panel .changes').waitFor();
    assert.match(await page.locator('.eval-panel .changes .muted').textContent(), new RegExp(`^${all.length - solved} changed verdicts`));
    assert.match(await page.locator('.eval-panel .change').first().textContent(), /solved: fail → pass/);
    await shot(page, 'eval-compare');
  });

  test('a benchmark of the airline tasks: score the dataset from its leaderboard, see the accuracy there and on the home page', async () => {
    const ds = (await api(srv.base, 'GET', '/datasets?name=airline')).datasets[0];
    const bench = await api(srv.base, 'POST', '/benchmarks', {
      name: 'airline-bench',
      dataset: ds.id,
      criteria: [{ name: 'solved', evaluator: 'code', expr: 'metadata.reward == 1' }],
    });
    // The expected accuracy, from the traces' own rewards: per task, the
    // share of its trials solved; the mean over tasks.
    const all = (await api(srv.base, 'GET', `/datasets/${ds.id}/traces?limit=1000`)).traces;
    const tasks = new Map();
    for (const t of all) {
      const k = t.metadata.task_id;
      const [n, ok] = tasks.get(k) ?? [0, 0];
      tasks.set(k, [n + 1, ok + (t.metadata.reward === 1 ? 1 : 0)]);
    }
    const accuracy = [...tasks.values()].reduce((s, [n, ok]) => s + ok / n, 0) / tasks.size;
    assert.equal(bench.item_count, tasks.size);
    await page.goto(srv.base + '/');
    const item = page.locator('.benchmarks .bench[data-benchmark="airline-bench@1"]');
    await item.locator('.bench-toggle').click();
    await item.locator('.leaderboard .muted:has-text("No dataset scored yet")').waitFor();
    await item.locator('select[aria-label="dataset to score"]').selectOption(ds.id);
    await item.locator('button.score-dataset').click();
    const entry = item.locator('.leaderboard tr.entry[data-dataset="airline"]');
    await entry.waitFor();
    assert.equal(await entry.locator('.accuracy').textContent(), `${Math.round(accuracy * 1000) / 10}%`);
    // The home page's metadata of the dataset shows the benchmark first.
    const meta = page.locator('table.datasets tr[data-dataset="airline"] .meta-cell .kv');
    await page.waitForFunction(() => /benchmark: airline-bench/.test(document.querySelector('table.datasets tr[data-dataset="airline"] .meta-cell')?.textContent ?? ''));
    assert.match(await meta.nth(0).textContent(), /^benchmark: airline-bench$/);
    assert.match(await meta.nth(2).textContent(), new RegExp(`^accuracy: ${Math.round(accuracy * 1000) / 1000}$`));
    await shot(page, 'benchmark-leaderboard');
  });

  test('a trace sent over OpenTelemetry grows on screen while its agent runs', async () => {
    const traceId = '7d1f0c0a9b8e4d3c2b1a09f8e7d6c5b4';
    const span = (id, name, start, attrs) => ({
      traceId, spanId: id, parentSpanId: id === 'a000000000000001' ? undefined : 'a000000000000001', name, kind: 1,
      startTimeUnixNano: String(start * 1e9), endTimeUnixNano: String(start * 1e9 + 5e8),
      attributes: Object.entries(attrs).map(([key, v]) => ({ key, value: { stringValue: v } })),
    });
    const chat = (id, start, question, answer) => span(id, 'chat gpt-4o', start, {
      'gen_ai.operation.name': 'chat',
      'gen_ai.input.messages': JSON.stringify([{ role: 'user', parts: [{ type: 'text', content: question }] }]),
      'gen_ai.output.messages': JSON.stringify([{ role: 'assistant', parts: [{ type: 'text', content: answer }] }]),
    });
    const send = async (spans) => {
      const r = await fetch(srv.base + '/v1/traces', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'X-Lookout-Dataset': 'live-agent' },
        body: JSON.stringify({ resourceSpans: [{ resource: { attributes: [] }, scopeSpans: [{ spans }] }] }),
      });
      assert.equal(r.status, 200, await r.text());
    };
    await send([chat('b000000000000001', 1, 'first question', 'first answer')]);
    const ds = (await api(srv.base, 'GET', '/datasets?name=live-agent')).datasets[0];
    const id = (await api(srv.base, 'GET', `/datasets/${ds.id}/traces`)).traces[0].id;
    await page.goto(`${srv.base}/traces/${id}`);
    await page.locator('.card', { hasText: 'first answer' }).waitFor();
    assert.equal(await page.locator('.card').count(), 2);
    // The agent goes on: a second turn and, last, its root span.
    await send([chat('b000000000000002', 2, 'second question', 'second answer'), span('a000000000000001', 'invoke_agent support', 0, { 'gen_ai.operation.name': 'invoke_agent' })]);
    await page.locator('.card', { hasText: 'second answer' }).waitFor({ timeout: 15000 });
    assert.equal(await page.locator('.card').count(), 4);
    assert.match(await page.locator('.trace-head').textContent(), /4 events · 3 spans/);
    await shot(page, 'live-trace');
  });

  test('no console errors, page errors or dialogs during the run', () => {
    assert.deepEqual(problems, []);
  });
});
