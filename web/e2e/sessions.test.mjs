// End-to-end tests of sessions, users and the search terms session:,
// user:, score: and verdict: (issue #20), in headless Chromium against a
// real `lookout serve` (harness.mjs), on the corpus's Langfuse and
// any-agent OpenTelemetry files. What each check expects is computed here
// from the corpus files and the scores this test posts, not by Lookout.
import assert from 'node:assert/strict';
import { copyFileSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { api, createDataset, openPage, repo, screenshots, shared, shot, uploadFile } from './harness.mjs';

const otel = join(shared, 'corpus', 'otel');
// One file a trace, uploaded in this order: the index of each is its place.
const files = [
  ...readdirSync(join(otel, 'langfuse'))
    .filter((f) => f.endsWith('.trace.json'))
    .sort()
    .map((f) => join(otel, 'langfuse', f)),
  ...readdirSync(join(otel, 'any-agent'))
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => join(otel, 'any-agent', f)),
];

/** expected reads a file's session, user and time on its own: a Langfuse
 * export's trace.sessionId / userId, else its observations' OpenTelemetry
 * attributes (session.id before gen_ai.conversation.id; user.id); an
 * any-agent dump's span attributes the same way. */
function expected(file) {
  const d = JSON.parse(readFileSync(file, 'utf8'));
  const spansAttrs = [];
  if (d.observations) {
    for (const o of d.observations) {
      let m = o.metadata;
      if (typeof m === 'string') {
        try {
          m = JSON.parse(m);
        } catch {
          m = null;
        }
      }
      spansAttrs.push({ ...(m?.attributes ?? {}) }, { ...(m?.resourceAttributes ?? {}) });
    }
  } else {
    for (const s of d.spans ?? []) spansAttrs.push(s.attributes ?? {}, s.resource?.attributes ?? {});
  }
  const attr = (keys) => {
    for (const k of keys) for (const a of spansAttrs) if (typeof a[k] === 'string' && a[k].trim()) return a[k];
    return '';
  };
  const t = d.trace ?? {};
  return {
    session: t.sessionId || attr(['session.id', 'gen_ai.conversation.id', 'langfuse.session.id']),
    user: t.userId || attr(['user.id', 'langfuse.user.id']),
    time: t.timestamp ? Date.parse(t.timestamp) : null,
  };
}

let srv, browser, page, problems, ds, rows; // rows: [{index, id, session, user, time}]
// The scores this test posts: accuracy (a number) and correct (a verdict,
// some on a step), with a first grade that a second one supersedes.
const accuracy = (i) => (i % 5) / 4;
const correct = (i) => (i % 3 === 0 ? [false] : i % 2 === 0 ? [true] : i % 7 === 1 ? [true, false] : []);

before(async () => {
  ({ srv, browser, page, problems } = await openPage());
  ds = await createDataset(srv.base, 'sessions');
  for (const f of files) await uploadFile(srv.base, ds.id, f);
  const stored = (await api(srv.base, 'GET', `/datasets/${ds.id}/traces?limit=1000`)).traces.sort((a, b) => a.index - b.index);
  assert.equal(stored.length, files.length);
  rows = stored.map((t, i) => ({ index: t.index, id: t.id, created: Date.parse(t.created_at), ...expected(files[i]) }));
  for (const [i, r] of rows.entries()) {
    await api(srv.base, 'POST', `/traces/${r.id}/scores`, { criterion: 'accuracy', value: 0.99, source: 'code' });
    await api(srv.base, 'POST', `/traces/${r.id}/scores`, { criterion: 'accuracy', value: accuracy(i), source: 'code' });
    for (const [k, v] of correct(i).entries())
      await api(srv.base, 'POST', `/traces/${r.id}/scores`, { criterion: 'correct', value: v, source: 'code', address: k ? 'messages.0' : '' });
  }
});

after(async () => {
  await browser?.close();
  await srv?.stop();
});

const datasetURL = () => `${srv.base}/datasets/${encodeURIComponent(ds.owner)}/${encodeURIComponent(ds.name)}`;

/** search runs a query in the dataset page's box and returns the rows it
 * lists, once the count says the search is done. */
async function search(q, want) {
  await page.goto(datasetURL());
  await page.locator('.trow[data-trace]').first().waitFor();
  await page.fill('.search-input', q);
  await page.press('.search-input', 'Enter');
  await page.waitForFunction((n) => (document.querySelector('.search-status')?.textContent ?? '') === `${n} matching traces`, want);
  if (want) await page.locator('.trow[data-trace]').first().waitFor();
  return (await page.locator('.trow[data-trace]').evaluateAll((rs) => rs.map((r) => r.getAttribute('data-trace')))).sort();
}

/** groupBy is Map.groupBy, which Node 20 lacks. */
function groupBy(xs, key) {
  const m = new Map();
  for (const x of xs) m.set(key(x), [...(m.get(key(x)) ?? []), x]);
  return m;
}

const ids = (pred) => rows.filter(pred).map((r) => r.id).sort();

describe('sessions and users', () => {
  test('the corpus has sessions to group: several traces share one, others have none', () => {
    const by = groupBy(rows.filter((r) => r.session), (r) => r.session);
    assert.ok([...by.values()].some((g) => g.length >= 3), 'a session of 3 or more traces');
    assert.ok(rows.some((r) => !r.session), 'traces without a session');
  });

  test('session: and user: find the traces the files name, exactly', async () => {
    const sessions = [...new Set(rows.map((r) => r.session).filter(Boolean))];
    const users = [...new Set(rows.map((r) => r.user).filter(Boolean))];
    assert.ok(sessions.length >= 4 && users.length >= 3);
    for (const s of sessions) assert.deepEqual(await search(`session:"${s}"`, ids((r) => r.session === s).length), ids((r) => r.session === s), s);
    for (const u of users) assert.deepEqual(await search(`user:"${u}"`, ids((r) => r.user === u).length), ids((r) => r.user === u), u);
    // Not in a session: every trace but those of one.
    const [s0] = sessions;
    assert.deepEqual(await search(`-session:"${s0}"`, ids((r) => r.session !== s0).length), ids((r) => r.session !== s0));
  });

  test('a session\'s view lists its traces by time, then index, and links to each', async () => {
    const by = groupBy(rows.filter((r) => r.session), (r) => r.session);
    const [session, group] = [...by.entries()].sort((a, b) => b[1].length - a[1].length)[0];
    // Langfuse's trace timestamp is the time; equal times keep index order.
    const want = [...group].sort((a, b) => (a.time ?? a.created) - (b.time ?? b.created) || a.index - b.index).map((r) => String(r.index));
    assert.notDeepEqual(want, group.map((r) => String(r.index)), 'the corpus orders this session otherwise than its indexes');
    assert.ok(group.some((r, k) => group.some((o, j) => j !== k && o.time === r.time)), 'two traces of the session share a time');
    await page.goto(`${datasetURL()}/sessions/${encodeURIComponent(session)}`);
    await page.waitForFunction((n) => document.querySelectorAll('.session-trace').length === n, group.length);
    const got = await page.locator('.session-trace').evaluateAll((ls) => ls.map((l) => l.getAttribute('data-index')));
    assert.deepEqual(got, want);
    assert.equal(await page.locator('.session-count').textContent(), `${group.length} traces · user ${group[0].user}`);
    await shot(page, 'session-view');
    // README's picture, refreshed on demand.
    if (process.env.UPDATE_DOCS_SCREENSHOTS) copyFileSync(join(screenshots, 'session-view.png'), join(repo, 'docs', 'explorer-session.png'));
    // Its second trace opens, and ] steps to the session's next one.
    const at = (k) => group.find((r) => String(r.index) === want[k]).id;
    await page.locator('.session-trace a').nth(1).click();
    await page.waitForURL(`**/traces/${at(1)}`);
    await page.locator('.trace-session').waitFor();
    await page.keyboard.press(']');
    await page.waitForURL(`**/traces/${at(2)}`);
  });

  test('a row of the list links to its session, and a trace page too', async () => {
    const r = rows.find((x) => x.session === 'demo-session') ?? rows.find((x) => x.session);
    await page.goto(datasetURL());
    const cell = page.locator(`.trow[data-trace="${r.id}"] .session-link`);
    assert.equal(await cell.textContent(), r.session);
    // A row without a session has an empty cell.
    const none = rows.find((x) => !x.session);
    assert.equal(await page.locator(`.trow[data-trace="${none.id}"] .session-cell`).textContent(), '');
    await cell.click();
    await page.waitForURL(`**/sessions/${encodeURIComponent(r.session)}`);
    await page.waitForFunction((n) => document.querySelectorAll('.session-trace').length === n, rows.filter((x) => x.session === r.session).length);
    // A trace opened by its own link (no list remembered) finds its dataset.
    await page.evaluate(() => sessionStorage.clear());
    await page.goto(`${srv.base}/traces/${r.id}`);
    const link = page.locator('.trace-session a.session-link');
    assert.equal(await link.textContent(), r.session);
    await page.locator('.trace-user').waitFor();
    assert.equal(await page.locator('.trace-user').textContent(), ` · user ${r.user}`);
    await link.click();
    await page.waitForURL(`**/sessions/${encodeURIComponent(r.session)}`);
    await page.locator('.session-trace').first().waitFor();
  });

  test('a trace page\'s user links to the dataset list of that user\'s traces', async () => {
    const r = rows.find((x) => x.user);
    const want = ids((x) => x.user === r.user);
    await page.goto(`${srv.base}/traces/${r.id}`);
    const link = page.locator('.trace-user a.user-link');
    assert.equal(await link.textContent(), r.user);
    await link.click();
    await page.waitForURL((u) => new URL(u).searchParams.get('q') === `user:"${r.user}"`);
    await page.waitForFunction((n) => document.querySelectorAll('.trow:not(.placeholder)').length === n, want.length);
    const shown = await page.locator('.trow:not(.placeholder)').evaluateAll((els) => els.map((e) => e.getAttribute('data-trace')));
    assert.deepEqual([...shown].sort(), [...want].sort());
  });
});

describe('scores and verdicts in the query language', () => {
  const cases = [
    ['score:accuracy>0.5', (i) => accuracy(i) > 0.5],
    ['score:accuracy<=0.25', (i) => accuracy(i) <= 0.25],
    ['score:accuracy=0.5', (i) => accuracy(i) === 0.5],
    ['score:accuracy>=0.99', (i) => accuracy(i) >= 0.99], // the superseded 0.99 counts for none
    ['verdict:correct=pass', (i) => correct(i).length > 0 && correct(i).every(Boolean)],
    ['verdict:correct=fail', (i) => correct(i).includes(false)],
    ['-verdict:correct=pass session:session_abc', (i) => !(correct(i).length > 0 && correct(i).every(Boolean)) && rows[i].session === 'session_abc'],
  ];
  for (const [q, pred] of cases)
    test(q, async () => {
      const want = rows.filter((_, i) => pred(i)).map((r) => r.id).sort();
      assert.ok(want.length > 0 && want.length < rows.length, `${q} splits the dataset (${want.length})`);
      assert.deepEqual(await search(q, want.length), want);
    });

  test('a bad score: term is an error at its column', async () => {
    await page.goto(datasetURL());
    await page.locator('.trow[data-trace]').first().waitFor();
    await page.fill('.search-input', 'refund score:accuracy>high');
    await page.press('.search-input', 'Enter');
    const alert = page.locator('.error[role="alert"]');
    await alert.waitFor();
    assert.match(await alert.textContent(), /column 23: "high" is not a number/);
    // The browser logs the 400 it was answered.
    const n = problems.length;
    for (let k = problems.length - 1; k >= 0; k--) if (/status of 400/.test(problems[k])) problems.splice(k, 1);
    assert.ok(problems.length < n, 'the 400 was logged');
  });

  test('no console errors, page errors or dialogs during the run', () => {
    assert.deepEqual(problems, []);
  });
});
