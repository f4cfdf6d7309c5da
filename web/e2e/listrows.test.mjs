// End-to-end test of issue #20's defect 10: the dataset page's list rows
// come from the list's summaries (and a search's snippets) alone; the page
// fetches no trace while the list is scrolled, searched and refreshed after
// a policy run. In headless Chromium against a real `lookout serve` (see
// harness.mjs), on the 200 tau-bench airline traces. Expected values come
// from the corpus file and the annotations API, computed here.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { api, createDataset, openPage, shared, shot, uploadFile } from './harness.mjs';

const airlineFile = join(shared, 'corpus/openai/tau-bench/gpt-4o-airline.json');
const cancelPolicy = 'raise "cancel_reservation called" if:\n    (call: ToolCall)\n    call is tool:cancel_reservation\n';

let srv, browser, page, problems;
let ids; // the airline trace ids by index
const traceFetches = []; // the page's requests for a trace's content

// The first user message of each trajectory, read from the file here, as
// the list shows it: at most 200 UTF-16 code units, on one line.
const firstUser = JSON.parse(readFileSync(airlineFile, 'utf8')).map((run) => {
  const u = run.traj.find((m) => m.role === 'user');
  return (u?.content ?? '').slice(0, 200).replace(/\s+/g, ' ').trim();
});

before(async () => {
  ({ srv, browser, page, problems } = await openPage());
  const ds = await createDataset(srv.base, 'airline');
  await uploadFile(srv.base, ds.id, airlineFile);
  ids = (await api(srv.base, 'GET', `/datasets/${ds.id}/traces?limit=1000`)).traces.sort((a, b) => a.index - b.index).map((t) => t.id);
  assert.equal(ids.length, 200);
  // GET /api/v1/traces/{id} and /api/v1/traces/{id}/events: a trace's
  // content, which the list must not need.
  page.on('request', (r) => {
    const p = new URL(r.url()).pathname;
    if (/^\/api\/v1\/traces\/[^/]+(\/events)?$/.test(p)) traceFetches.push(`${r.method()} ${r.url()}`);
  });
});

after(async () => {
  await browser?.close();
  await srv?.stop();
});

/** rowsShown are the rows in the document: trace id, first user message
 * (or match) text, violations and annotations. */
const rowsShown = () =>
  page.$$eval('.trow[data-trace]', (rs) =>
    rs.map((r) => ({
      id: r.getAttribute('data-trace'),
      first: (r.querySelector('.first-user')?.textContent ?? '').replace(/\s+/g, ' ').trim(),
      viol: r.querySelector('[title="violations"]')?.textContent ?? '',
      notes: r.querySelector('[title="annotations"]')?.textContent ?? '',
      snip: r.querySelector('.first-user.snip mark')?.textContent ?? null,
    })),
  );

/** scrollAll scrolls the list from top to bottom a screen at a time and
 * returns every row seen, by trace id, once its placeholders were filled. */
async function scrollAll() {
  const seen = new Map();
  await page.$eval('.trace-list', (el) => (el.scrollTop = 0));
  for (let k = 0; k < 200; k++) {
    // The rows in view are loaded: no placeholder left.
    await page.waitForFunction(() => !document.querySelector('.trow.placeholder'), null, { timeout: 10000 });
    for (const r of await rowsShown()) seen.set(r.id, r);
    const done = await page.$eval('.trace-list', (el) => {
      const end = el.scrollTop + el.clientHeight >= el.scrollHeight - 1;
      el.scrollTop += el.clientHeight;
      return end;
    });
    if (done) break;
    await page.waitForTimeout(50);
  }
  return seen;
}

describe('list rows fetch no trace bodies (issue #20, defect 10)', () => {
  test('scrolling the whole list shows each first user message from the summaries', async () => {
    await page.goto(`${srv.base}/datasets/local/airline`);
    await page.locator('.trow[data-trace]').first().waitFor();
    const seen = await scrollAll();
    assert.equal(seen.size, 200, 'every row was seen');
    for (const [i, id] of ids.entries()) assert.equal(seen.get(id).first, firstUser[i], `trace ${i}'s first user message`);
    assert.ok(firstUser.filter((s) => s).length > 190, 'the corpus has first user messages');
    assert.deepEqual(traceFetches, [], 'the list fetched traces');
  });

  test('a search shows each hit in its context from the search answer', async () => {
    await page.fill('input[aria-label="search traces"]', 'baggage');
    await page.press('input[aria-label="search traces"]', 'Enter');
    await page.waitForFunction(() => /^\d+ matching traces$/.test(document.querySelector('.search-status')?.textContent ?? ''));
    const n = Number((await page.textContent('.search-status')).split(' ')[0]);
    const want = firstUser.length && JSON.parse(readFileSync(airlineFile, 'utf8')).filter((run) => JSON.stringify(run.traj).toLowerCase().includes('baggage')).length;
    assert.ok(n > 10 && n <= want, `${n} matches, the file has ${want} trajectories mentioning baggage`);
    const seen = await scrollAll();
    assert.equal(seen.size, n);
    const snips = [...seen.values()].filter((r) => r.snip !== null);
    assert.ok(snips.length >= n * 0.9, `${snips.length} of ${n} rows show a snippet`);
    for (const r of snips) assert.equal(r.snip.toLowerCase(), 'baggage');
    await shot(page, 'r2-list-search-snippets');
    assert.deepEqual(traceFetches, [], 'the search fetched traces');
  });

  test('after a policy run the rows show the new violation counts', async () => {
    await page.fill('input[aria-label="search traces"]', '');
    await page.press('input[aria-label="search traces"]', 'Enter');
    await page.waitForFunction(() => !document.querySelector('.search-status'));
    await page.$eval('.trace-list', (el) => (el.scrollTop = 0));
    await page.waitForFunction(() => !document.querySelector('.trow.placeholder') && document.querySelectorAll('.trow[data-trace]').length > 0);
    await page.fill('input[aria-label="policy name"]', 'cancel-calls');
    await page.fill('textarea[aria-label="policy source"]', cancelPolicy);
    await page.click('button.run-policy');
    await page.waitForFunction(() => /^checked 200\/200/.test(document.querySelector('.check-status')?.textContent ?? ''), null, { timeout: 120000 });
    // What the run left on each trace, from the annotations API.
    const want = new Map();
    for (const id of ids) {
      const anns = (await api(srv.base, 'GET', `/traces/${id}/annotations`)).annotations;
      want.set(id, { viol: String(anns.filter((a) => a.source === 'analyzer').length || ''), notes: String(anns.length || '') });
    }
    assert.ok([...want.values()].filter((w) => w.viol).length > 0, 'some trace calls cancel_reservation');
    // The rows in view refresh without a reload, then every row as it is
    // scrolled to.
    await page.waitForFunction(
      (want) => {
        const rs = [...document.querySelectorAll('.trow[data-trace]')];
        return rs.length > 0 && rs.every((r) => {
          const w = want[r.getAttribute('data-trace')];
          return r.querySelector('[title="violations"]')?.textContent === w.viol && r.querySelector('[title="annotations"]')?.textContent === w.notes;
        });
      },
      Object.fromEntries(want),
      { timeout: 15000 },
    );
    const deadline = Date.now() + 30000;
    let wrong;
    do {
      const seen = await scrollAll();
      wrong = ids.filter((id) => seen.get(id)?.viol !== want.get(id).viol || seen.get(id)?.notes !== want.get(id).notes);
    } while (wrong.length && Date.now() < deadline);
    assert.deepEqual(wrong, [], 'rows whose counts are not the run\'s');
    await shot(page, 'r2-list-violations');
    assert.deepEqual(traceFetches, [], 'the list fetched traces');
    assert.deepEqual(problems, []);
  });
});
