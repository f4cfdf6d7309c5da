// End-to-end tests of the explorer's second round (issue #20, defects 1-9),
// in headless Chromium against a real `lookout serve` (see harness.mjs), on
// the shared corpus. Expected values come from the API or the corpus files,
// computed here, not from the UI's own code.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { api, createDataset, shared, shot, startServer, uploadFile, watch, openPage } from './harness.mjs';

const corpus = join(shared, 'corpus');
const airlineFile = join(corpus, 'openai/tau-bench/gpt-4o-airline.json');
const cancelPolicy = 'raise "cancel_reservation called" if:\n    (call: ToolCall)\n    call is tool:cancel_reservation\n';

let srv, browser, page, problems;
let airline, airlineIds; // the airline dataset and its trace ids by index

before(async () => {
  ({ srv, browser, page, problems } = await openPage());
  airline = await createDataset(srv.base, 'airline');
  await uploadFile(srv.base, airline.id, airlineFile);
  airlineIds = (await api(srv.base, 'GET', `/datasets/${airline.id}/traces?limit=1000`)).traces.sort((a, b) => a.index - b.index).map((t) => t.id);
  assert.equal(airlineIds.length, 200);
});

after(async () => {
  await browser?.close();
  await srv?.stop();
});

/** expectConsole removes the console errors a deliberate failed answer
 * causes (the browser logs each one); at least one must be there. */
function expectConsole(list, re) {
  const n = list.length;
  for (let k = list.length - 1; k >= 0; k--) if (re.test(list[k])) list.splice(k, 1);
  assert.ok(list.length < n, `expected a console error matching ${re}`);
}

/** runPolicyAPI saves a policy on a dataset and runs it to the end through
 * the API, as the policy panel does. */
async function runPolicyAPI(base, datasetId, name, source, headers = {}) {
  const pol = await api(base, 'POST', `/datasets/${datasetId}/policies`, { name, source }, headers);
  const r = await fetch(`${base}/api/v1/datasets/${datasetId}/policies/${pol.id}/check`, {
    method: 'POST',
    headers: { Accept: 'text/event-stream', 'Content-Type': 'application/json', ...headers },
    body: '{}',
  });
  assert.equal(r.status, 200);
  await r.text();
  return pol;
}

/** box is an element's rectangle in the window. */
const box = (loc) => loc.evaluate((e) => JSON.parse(JSON.stringify(e.getBoundingClientRect())));
const overlap = (a, b) => a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5;

/** upload sends traces as an Invariant JSONL body. */
async function uploadLines(base, datasetId, traces, headers = {}) {
  const body = traces.map((t) => JSON.stringify(t)).join('\n') + '\n';
  return api(base, 'POST', `/datasets/${datasetId}/upload?filename=t.jsonl`, body, { 'Content-Type': 'application/octet-stream', ...headers });
}

describe('explorer, second round', () => {
  // Defect 2. Runs first: the rows must be seen before any policy ran.
  test('defect 2: the list\'s violation column fills in after a dataset-wide run, without a reload', async () => {
    await page.goto(`${srv.base}/datasets/local/airline`);
    const id = airlineIds[15];
    const row = page.locator(`.trow[data-trace="${id}"]`);
    // The row's details have arrived (its first user message shows) and it
    // has no violation yet.
    await page.waitForFunction((id) => (document.querySelector(`.trow[data-trace="${id}"] .first-user`)?.textContent ?? '').length > 0, id);
    assert.equal(await row.locator('[title="violations"]').textContent(), '');
    await page.fill('input[aria-label="policy name"]', 'cancel-calls');
    await page.fill('textarea[aria-label="policy source"]', cancelPolicy);
    await page.click('button.run-policy');
    await page.waitForFunction(() => /^checked 200\/200/.test(document.querySelector('.check-status')?.textContent ?? ''), null, { timeout: 120000 });
    // What the run left on the trace, from the API.
    const anns = (await api(srv.base, 'GET', `/traces/${id}/annotations`)).annotations;
    const viol = anns.filter((a) => a.source === 'analyzer').length;
    assert.ok(viol > 0, 'trace 15 calls cancel_reservation');
    await page.waitForFunction(
      ([id, v, n]) => {
        const r = document.querySelector(`.trow[data-trace="${id}"]`);
        return r?.querySelector('[title="violations"]')?.textContent === v && r?.querySelector('[title="annotations"]')?.textContent === n;
      },
      [id, String(viol), String(anns.length)],
      { timeout: 15000 },
    );
    await shot(page, 'r2-violations-refreshed');
  });

  test('defect 1: a violation on a whole tool call marks its card, one on its arguments object marks the arguments', async () => {
    await runPolicyAPI(srv.base, airline.id, 'cancel-calls-api', cancelPolicy);
    const id = airlineIds[15];
    const anns = (await api(srv.base, 'GET', `/traces/${id}/annotations`)).annotations;
    const onCall = anns.find((a) => a.source === 'analyzer' && /^messages\.\d+\.tool_calls\.\d+$/.test(a.address));
    assert.ok(onCall, JSON.stringify(anns));
    const [, ev, k] = onCall.address.match(/^messages\.(\d+)\.tool_calls\.(\d+)$/);
    await api(srv.base, 'POST', `/traces/${id}/annotations`, { address: `${onCall.address}.function.arguments`, content: 'arguments looked at', source: 'analyzer' });
    const total = anns.length + 1; // every annotation here has content
    await page.goto(`${srv.base}/traces/${id}`);
    await page.waitForSelector('.card[data-event="0"]');
    await page.waitForFunction((n) => document.querySelector('.hl-count')?.textContent.endsWith(`/ ${n}`), total);
    const call = page.locator(`.card[data-event="${ev}"] .tool-call`).nth(Number(k));
    // n steps to the first highlight: the call.
    await page.keyboard.press('n');
    await call.waitFor();
    assert.match(await call.getAttribute('class'), /\bhl-analyzer\b/);
    assert.match(await call.getAttribute('title'), /cancel_reservation called/);
    await page.waitForFunction((ev) => document.querySelector(`.card[data-event="${ev}"] .tool-call.hl-current`) !== null, ev);
    const args = call.locator('.tool-args > .arg-obj');
    assert.match(await args.getAttribute('class'), /\bhl-analyzer\b/);
    assert.match(await args.getAttribute('title'), /arguments looked at/);
    // Stepping on reaches the arguments.
    let reached = false;
    for (let i = 1; i < total && !reached; i++) {
      await page.keyboard.press('n');
      await page.waitForFunction((i) => document.querySelector('.hl-count').textContent.startsWith(`${i + 1} /`), i);
      reached = (await page.locator(`.card[data-event="${ev}"] .tool-args > .arg-obj.hl-current`).count()) === 1;
    }
    assert.ok(reached, 'a step lands on the arguments');
    await shot(page, 'r2-tool-call-violation');
  });

  test('defect 3: numbered items separated by blank lines are one list, start numbers kept, markup stays text', async () => {
    const ds = await createDataset(srv.base, 'markdown');
    const md = 'Steps:\n\n1. first\n\n2. second <b>not bold</b>\n\n3. third\n   - a nested point\n\nThen:\n\n4. four\n5. five\n\n- dash\n\n- dash again';
    const up = await uploadLines(srv.base, ds.id, [{ messages: [{ role: 'assistant', content: md }] }]);
    await page.goto(`${srv.base}/traces/${up.ids[0]}`);
    const rich = page.locator('.card[data-event="0"] .rich');
    await rich.waitFor();
    const lists = await rich.evaluate((r) =>
      [...r.children].filter((c) => c.tagName === 'OL' || c.tagName === 'UL').map((l) => ({ tag: l.tagName, start: l.start ?? null, items: [...l.children].filter((c) => c.tagName === 'LI').length })),
    );
    assert.deepEqual(lists, [
      { tag: 'OL', start: 1, items: 3 },
      { tag: 'OL', start: 4, items: 2 },
      { tag: 'UL', start: null, items: 2 },
    ]);
    assert.equal(await rich.locator('ol > li > ul > li').textContent(), 'a nested point');
    assert.equal(await page.locator('.card[data-event="0"] b').count(), 0, 'no HTML from the content');
    assert.match(await rich.textContent(), /second <b>not bold<\/b>/);

    // The corpus: the first airline message whose numbered items are apart
    // only by blank lines and indented lines (sub-points) is one list.
    const runs = JSON.parse(readFileSync(airlineFile, 'utf8'));
    let found = null;
    for (let i = 0; i < runs.length && !found; i++)
      runs[i].traj.forEach((e, k) => {
        if (found || typeof e.content !== 'string') return;
        const lines = e.content.split('\n');
        const items = lines.map((l, j) => (/^\d+\. /.test(l) ? j : -1)).filter((j) => j >= 0);
        if (items.length < 3) return;
        const between = lines.slice(items[0], items[items.length - 1]);
        const blankApart = between.some((l, j) => l.trim() === '' && /^\d+\. /.test(between[j + 1] ?? ''));
        const oneRun = between.every((l) => l.trim() === '' || /^\d+\. /.test(l) || /^\s/.test(l));
        if (blankApart && oneRun) found = { i, k, n: items.length, nested: between.some((l) => /^\s+[-*] /.test(l)) };
      });
    assert.ok(found, 'an airline message with a loose numbered list');
    await page.goto(`${srv.base}/traces/${airlineIds[found.i]}#messages.${found.k}`);
    const card = page.locator(`.card[data-event="${found.k}"] .rich`);
    await card.waitFor();
    const got = await card.evaluate((r) => [...r.children].filter((c) => c.tagName === 'OL').map((l) => [...l.children].filter((c) => c.tagName === 'LI').length));
    assert.deepEqual(got, [found.n], `trace ${found.i} event ${found.k}`);
    if (found.nested) assert.ok((await card.locator('ol > li > ul').count()) > 0, 'sub-points are nested lists');
    await shot(page, 'r2-numbered-list');
  });

  test('defect 4: tokens in and out, model, usage and cost details, Snorkel latency and its timeline', async () => {
    const ds = await createDataset(srv.base, 'usage');
    const otel = (await uploadFile(srv.base, ds.id, join(corpus, 'otel/any-agent/OPENAI_trace.json'))).ids[0];
    const lf = (await uploadFile(srv.base, ds.id, join(corpus, 'otel/langfuse/openai-agents-2025-09-30.trace.json'))).ids[0];
    const sn = (await uploadFile(srv.base, ds.id, join(corpus, 'seeds/snorkel-example.json'))).ids[0];
    const usd = (x) => '$' + String(Number(x.toPrecision(3)));

    // OpenTelemetry GenAI: input and output tokens, and the recorded cost.
    const ot = await api(srv.base, 'GET', `/traces/${otel}`);
    const llm = ot.spans.filter((s) => s.attributes?.['gen_ai.usage.output_tokens'] !== undefined);
    assert.ok(llm.length > 0);
    await page.goto(`${srv.base}/traces/${otel}`);
    await page.click('button.tab-tree');
    await page.click('button:has-text("Expand all")');
    for (const s of llm) {
      const a = s.attributes;
      const row = page.locator(`.tree-row[data-span="${s.id}"]`);
      const tok = await row.locator('.tok').textContent();
      assert.match(tok, new RegExp(`\\b${a['gen_ai.usage.input_tokens']} in\\b`), tok);
      assert.match(tok, new RegExp(`\\b${a['gen_ai.usage.output_tokens']} out\\b`), tok);
      assert.equal(await row.locator('.cost').textContent(), usd(a['gen_ai.usage.input_cost'] + a['gen_ai.usage.output_cost']));
    }
    await shot(page, 'r2-otel-tokens');

    // Langfuse: model, usageDetails and costDetails of a generation.
    const lt = await api(srv.base, 'GET', `/traces/${lf}`);
    const gen = lt.spans.find((s) => s.model && Object.keys(s.usageDetails ?? {}).length);
    assert.ok(gen);
    await page.goto(`${srv.base}/traces/${lf}`);
    await page.click('button.tab-tree');
    await page.click('button:has-text("Expand all")');
    const grow = page.locator(`.tree-row[data-span="${gen.id}"]`);
    assert.match(await grow.locator('.tok').textContent(), new RegExp(`${gen.usageDetails.input} in.*${gen.usageDetails.output} out`));
    assert.equal(await grow.locator('.cost').textContent(), usd(gen.costDetails.total));
    await grow.click();
    const det = page.locator(`[data-span-details="${gen.id}"]`);
    await det.waitFor();
    const text = await det.textContent();
    assert.ok(text.includes(`model: ${gen.model}`), text.slice(0, 400));
    assert.ok(text.includes(`cost: ${usd(gen.costDetails.total)}`), text.slice(0, 400));
    const heads = await det.locator('.span-field h4').allTextContents();
    assert.ok(heads.includes('usageDetails') && heads.includes('costDetails'), heads.join(','));
    assert.match(await det.locator('.span-field:has(h4:text-is("usageDetails"))').textContent(), new RegExp(`"input": ${gen.usageDetails.input}`));
    await shot(page, 'r2-langfuse-usage');

    // Snorkel: each step's latency, and a timeline laid out from them.
    const st = await api(srv.base, 'GET', `/traces/${sn}`);
    await page.goto(`${srv.base}/traces/${sn}`);
    await page.click('button.tab-tree');
    await page.click('button:has-text("Expand all")');
    for (const s of st.spans) {
      const ms = Math.round(s.attributes.latency * 1000);
      assert.equal(await page.locator(`.tree-row[data-span="${s.id}"] .lat`).textContent(), `${ms} ms`);
    }
    await page.locator(`.tree-row[data-span="${st.spans[1].id}"]`).click();
    assert.match(await page.locator('.span-details').textContent(), new RegExp(`latency: ${Math.round(st.spans[1].attributes.latency * 1000)} ms`));
    await page.click('button.tab-timeline');
    await page.waitForSelector('.tl-bar');
    assert.equal(await page.locator('.tl-bar').count(), st.spans.length);
    const widths = await page.locator('.tl-bar').evaluateAll((els) => els.map((e) => e.getBoundingClientRect().width));
    assert.ok(widths.every((w) => w > 2), `bars ${widths}`);
    await shot(page, 'r2-snorkel-timeline');
  });

  test('defect 5: at 400, 600 and 900 px the chat column, the dataset list and the home table fit', async () => {
    for (const w of [400, 600, 900]) {
      const p = await browser.newPage({ viewport: { width: w, height: 800 } });
      p.setDefaultTimeout(10000);
      const probs = watch(p);
      // Trace page: below 900 px the chat is at least 90% of the window.
      await p.goto(`${srv.base}/traces/${airlineIds[0]}`);
      await p.waitForSelector('.card[data-event="0"]');
      const chat = await box(p.locator('.chat'));
      if (w < 900) assert.ok(chat.width >= 0.9 * w, `${w} px: chat ${chat.width} px`);
      else assert.ok(chat.width >= 0.45 * w, `${w} px: chat ${chat.width} px`);
      assert.ok(!overlap(chat, await box(p.locator('.trace-side'))), `${w} px: the side panel is over the chat`);
      await shot(p, `r2-trace-${w}`);
      // Dataset page: the policy panel is beside or below the list, never on it.
      await p.goto(`${srv.base}/datasets/local/airline`);
      await p.waitForSelector('.trow[data-trace]');
      await p.waitForSelector('.policy-panel');
      const list = await box(p.locator('.trace-list'));
      const head = await box(p.locator('.thead'));
      for (const panel of ['.policy-panel', '.eval-panel']) {
        const b = await box(p.locator(panel));
        assert.ok(!overlap(list, b) && !overlap(head, b), `${w} px: ${panel} covers the list`);
      }
      assert.ok(list.width >= 0.85 * w, `${w} px: list ${list.width} px`);
      assert.ok(head.right <= list.right + 0.5, `${w} px: the header runs past the list`);
      await shot(p, `r2-dataset-${w}`);
      // Home: nothing of the table is cut off, and the page does not scroll sideways.
      await p.goto(`${srv.base}/`);
      await p.waitForSelector('table.datasets');
      const cells = await p.locator('table.datasets th, table.datasets td, table.datasets button').evaluateAll((els) => els.map((e) => e.getBoundingClientRect().right));
      const panel = await box(p.locator('section.panel:has(table.datasets)'));
      assert.ok(Math.max(...cells) <= Math.min(w, panel.right) + 0.5, `${w} px: a cell ends at ${Math.max(...cells)}`);
      assert.ok(await p.evaluate(() => document.documentElement.scrollWidth <= innerWidth), `${w} px: the page scrolls sideways`);
      await shot(p, `r2-home-${w}`);
      assert.deepEqual(probs, []);
      await p.close();
    }
  });

  test('defect 6: search snippets keep the hit in view with metadata columns shown', async () => {
    await page.goto(`${srv.base}/datasets/local/airline`);
    await page.locator('.trow[data-trace]').first().waitFor();
    await page.click('button:has-text("Columns")');
    for (const k of ['task_id', 'reward', 'trial', 'info']) await page.locator(`.cols label:has-text("${k}") input`).check();
    await page.fill('.search-input', '"travel certificate"');
    await page.press('.search-input', 'Enter');
    await page.locator('.trow mark.hl-search').first().waitFor();
    await page.waitForTimeout(500); // the snippets of the rows in view
    const marks = await page.locator('.trow .first-user').evaluateAll((cells) =>
      cells
        .filter((c) => c.querySelector('mark'))
        .map((c) => {
          const m = c.querySelector('mark');
          const cr = c.getBoundingClientRect();
          const mr = m.getBoundingClientRect();
          return { text: m.textContent, cell: [cr.left, cr.right], mark: [mr.left, mr.right] };
        }),
    );
    assert.ok(marks.length >= 3, `${marks.length} snippets`);
    for (const m of marks) {
      assert.match(m.text.toLowerCase(), /travel certificate/);
      assert.ok(m.mark[0] >= m.cell[0] - 0.5 && m.mark[1] <= m.cell[1] + 0.5, `hit at ${m.mark} outside its cell ${m.cell}`);
    }
    await shot(page, 'r2-snippets');
    for (const k of ['task_id', 'reward', 'trial', 'info']) await page.locator(`.cols label:has-text("${k}") input`).uncheck();
  });

  test('defect 7: Invariant\'s local_base64_img content shows as an image, and a hostile one as text', async () => {
    const ds = await createDataset(srv.base, 'sample');
    const up = await uploadFile(srv.base, ds.id, join(corpus, 'openai/explorer/sample_data.jsonl'));
    let at = null;
    for (const id of up.ids) {
      const t = await api(srv.base, 'GET', `/traces/${id}`);
      const k = t.events.findIndex((e) => typeof e.content === 'string' && e.content.startsWith('local_base64_img:'));
      if (k >= 0) at = { id, k, b64: t.events[k].content.slice('local_base64_img:'.length).trim() };
    }
    assert.ok(at, 'the sample data has an image');
    await page.goto(`${srv.base}/traces/${at.id}#messages.${at.k}`);
    const img = page.locator(`.card[data-event="${at.k}"] img`);
    await img.waitFor();
    assert.equal(await img.getAttribute('src'), `data:image/png;base64,${at.b64}`);
    await page.waitForFunction((k) => document.querySelector(`.card[data-event="${k}"] img`)?.naturalWidth > 0, at.k);
    assert.ok(!(await page.locator(`.card[data-event="${at.k}"]`).textContent()).includes(at.b64.slice(0, 40)), 'the base64 text is not shown');
    await shot(page, 'r2-base64-image');
    // Not an image: the text stays text.
    const bad = await uploadLines(srv.base, ds.id, [
      { messages: [{ role: 'tool', content: 'local_base64_img: "><img src=x onerror=alert(1)>' }, { role: 'tool', content: 'local_base64_img: data:image/svg+xml;base64,PHN2Zy8+' }] },
    ]);
    await page.goto(`${srv.base}/traces/${bad.ids[0]}`);
    await page.waitForSelector('.card[data-event="1"]');
    assert.equal(await page.locator('.card img').count(), 0);
    assert.match(await page.locator('.card[data-event="0"]').textContent(), /onerror=alert\(1\)/);
  });

  test('defect 8: an unknown page is the app\'s not-found page (the API keeps JSON); an unknown trace says so with a way back', async () => {
    const r = await fetch(`${srv.base}/no/such/page`);
    assert.equal(r.status, 404);
    assert.match(r.headers.get('content-type'), /^text\/html/);
    assert.match(r.headers.get('content-security-policy'), /script-src 'self'/);
    const a = await fetch(`${srv.base}/api/v1/no/such`);
    assert.equal(a.status, 404);
    assert.match(a.headers.get('content-type'), /^application\/json/);
    assert.ok((await a.json()).error);

    const res = await page.goto(`${srv.base}/no/such/page`);
    assert.equal(res.status(), 404);
    await page.locator('.not-found h2:has-text("Not found")').waitFor();
    assert.equal(await page.locator('.not-found a[href="/"]').count(), 1);
    expectConsole(problems, /status of 404/);

    await page.goto(`${srv.base}/traces/00000000-0000-4000-8000-000000000000`);
    const nf = page.locator('.not-found');
    await nf.waitFor();
    assert.match(await nf.locator('h2').textContent(), /Trace not found/);
    assert.equal(await nf.locator('a[href="/"]').count(), 1);
    assert.equal(await nf.locator('.signin-hint').count(), 0, 'local mode: no sign-in hint');
    expectConsole(problems, /status of 404/);
    await page.goto(`${srv.base}/datasets/local/no-such-dataset`);
    await page.locator('.not-found h2:has-text("Dataset not found")').waitFor();
    assert.equal(await page.locator('.not-found a[href="/"]').count(), 1);
    await shot(page, 'r2-trace-not-found');
  });

  test('no console errors, page errors or dialogs during the run', () => {
    assert.deepEqual(problems, []);
  });
});

describe('explorer, signed out', () => {
  let auth;
  const alice = { name: 'alice', password: 'pw-alice-12345' };
  const asAlice = () => ({ Authorization: `Bearer ${auth.key}` });
  before(async () => {
    auth = await startServer({ user: alice });
  });
  after(async () => {
    await auth?.stop();
  });

  test('defect 9: the empty home page says what is on it, signed out and signed in', async () => {
    const p = await browser.newPage({ viewport: { width: 1200, height: 900 } });
    p.setDefaultTimeout(10000);
    const probs = watch(p);
    await p.goto(auth.base + '/');
    const empty = p.locator('.home p:has-text("datasets yet")');
    await empty.waitFor();
    await p.locator('.top button:has-text("Log in")').waitFor();
    assert.equal(await p.locator('.upload').count(), 0);
    assert.doesNotMatch(await empty.textContent(), /below/);
    assert.match(await empty.textContent(), /log in/i);
    // Signed in: the text points at the panels below it, which are there.
    await p.click('.top button:has-text("Log in")');
    await p.fill('.login input[placeholder="user"]', alice.name);
    await p.fill('.login input[type="password"]', alice.password);
    await p.click('.login button[type="submit"]');
    await p.locator('.upload').waitFor();
    assert.match(await empty.textContent(), /upload a file below/);
    assert.ok((await box(p.locator('.upload'))).top > (await box(empty)).bottom);
    await shot(p, 'r2-empty-home');
    assert.deepEqual(probs, []);
    await p.close();
  });

  test('defect 9: an anonymous viewer of a public dataset gets no comment, rating or grading controls', async () => {
    const ds = await api(auth.base, 'POST', '/datasets', { name: 'open', public: true }, asAlice());
    const up = await uploadFile(auth.base, ds.id, join(corpus, 'openai/explorer/trace_for_analysis.jsonl'), undefined, asAlice());
    await api(auth.base, 'POST', `/datasets/${ds.id}/criteria`, { name: 'helpful', evaluator: 'human' }, asAlice());
    const id = up.ids[0];
    const p = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    p.setDefaultTimeout(10000);
    const probs = watch(p);
    await p.goto(`${auth.base}/datasets/alice/open`);
    await p.locator(`.trow[data-trace="${id}"]`).click();
    await p.waitForSelector('.card[data-event="1"]');
    await p.locator('.top button:has-text("Log in")').waitFor(); // who the viewer is
    await p.waitForTimeout(500); // the scores panel's criteria
    assert.equal(await p.locator('.card button.comment-event').count(), 0);
    assert.equal(await p.locator('.card button.rate').count(), 0);
    assert.equal(await p.locator('.scores button.choice').count(), 0);
    // A selection offers no comment; a line number opens no composer.
    await p.evaluate(() => {
      const span = document.querySelector('.card[data-event="1"] .rich [data-o]');
      const r = document.createRange();
      r.setStart(span.firstChild, 0);
      r.setEnd(span.firstChild, 4);
      getSelection().removeAllRanges();
      getSelection().addRange(r);
      span.dispatchEvent(new MouseEvent('mouseup', { bubbles: true }));
    });
    await p.waitForTimeout(100);
    assert.equal(await p.locator('button.sel-comment').count(), 0);
    await p.locator('.card[data-event="1"] button.toggle-raw').click();
    await p.locator('.card[data-event="1"] button.ln[data-line="0"]').click();
    assert.equal(await p.locator('.composer').count(), 0);
    await shot(p, 'r2-read-only');
    // A private trace, signed out: a not-found page with a sign-in hint
    // that opens the login form.
    const priv = await api(auth.base, 'POST', '/datasets', { name: 'closed' }, asAlice());
    const hidden = (await uploadFile(auth.base, priv.id, join(corpus, 'openai/explorer/abc.jsonl'), undefined, asAlice())).ids[0];
    await p.goto(`${auth.base}/traces/${hidden}`);
    const nf = p.locator('.not-found');
    await nf.waitFor();
    assert.match(await nf.locator('h2').textContent(), /Trace not found/);
    await nf.locator('.signin-hint button').click();
    await p.locator('.top form.login input[placeholder="user"]').waitFor();
    expectConsole(probs, /status of 404/);
    // Signed in as the owner, the controls are there.
    await p.fill('.login input[placeholder="user"]', alice.name);
    await p.fill('.login input[type="password"]', alice.password);
    await p.click('.login button[type="submit"]');
    await p.locator('.top .account:has-text("alice")').waitFor();
    await p.goto(`${auth.base}/traces/${id}`);
    await p.locator('.card[data-event="1"] button.comment-event').waitFor();
    assert.ok((await p.locator('.card button.rate').count()) > 0);
    await p.locator('.scores button.choice').first().waitFor();
    assert.deepEqual(probs, []);
    await p.close();
  });
});

