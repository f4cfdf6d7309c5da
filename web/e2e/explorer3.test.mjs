// End-to-end tests of what issue #20 says users expect (policy editor,
// readable payloads, dark mode, keyboard), in headless Chromium against a
// real `lookout serve` (see harness.mjs). Expected values are computed
// here from what the test uploads or the API answers.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { api, createDataset, shared, shot, uploadFile, watch, openPage } from './harness.mjs';

const corpus = join(shared, 'corpus');

let srv, browser, page, problems;
let kb, kbIds; // a dataset of 40 short traces, ids by index
let payloadId, payload; // the trace with JSON payloads and what it holds

async function uploadLines(base, datasetId, traces) {
  const body = traces.map((t) => JSON.stringify(t)).join('\n') + '\n';
  return api(base, 'POST', `/datasets/${datasetId}/upload?filename=t.jsonl`, body, { 'Content-Type': 'application/octet-stream' });
}

/** payloadTrace: a call with long arguments (a rare word far into them), a
 * long minified JSON output (a rare word in its last record, and hostile
 * markup as text) and a short one. */
function payloadTrace() {
  const notes = Array.from({ length: 120 }, (_, i) => `note ${i} about the booking`).join(', ') + ', quokka';
  const records = Array.from({ length: 90 }, (_, i) => ({ id: i, city: `city-${i}`, price: 100 + i }));
  records.push({ id: 90, city: 'zebracorn', note: '<img src=x onerror=alert(1)><script>alert(2)</script>' });
  const big = JSON.stringify({ results: records });
  const small = { ok: true, n: 3, where: { city: 'Lisbon' } };
  return {
    notes,
    big,
    small,
    trace: {
      messages: [
        { role: 'user', content: 'find flights' },
        { role: 'assistant', content: '', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'search_flights', arguments: { query: 'LIS', notes } } }] },
        { role: 'tool', tool_call_id: 'c1', content: big },
        { role: 'tool', tool_call_id: 'c1', content: JSON.stringify(small) },
      ],
    },
  };
}

before(async () => {
  ({ srv, browser, page, problems } = await openPage());
  kb = await createDataset(srv.base, 'kb');
  await uploadLines(
    srv.base,
    kb.id,
    Array.from({ length: 40 }, (_, i) => ({ messages: [{ role: 'user', content: `question ${i}` }, { role: 'assistant', content: `answer ${i}` }] })),
  );
  kbIds = (await api(srv.base, 'GET', `/datasets/${kb.id}/traces?limit=1000`)).traces.sort((a, b) => a.index - b.index).map((t) => t.id);
  assert.equal(kbIds.length, 40);
  const ds = await createDataset(srv.base, 'payloads');
  payload = payloadTrace();
  payloadId = (await uploadLines(srv.base, ds.id, [payload.trace])).ids[0];
});

after(async () => {
  await browser?.close();
  await srv?.stop();
});

const source = () => page.locator('textarea[aria-label="policy source"]');
const value = () => source().inputValue();
const focusedLabel = () => page.evaluate(() => document.activeElement?.getAttribute('aria-label') ?? document.activeElement?.tagName);
const selectedRow = () => page.evaluate(() => document.querySelector('.trow.selected')?.getAttribute('data-trace') ?? null);

describe('explorer, what users expect (#20)', () => {
  test('policy editor: Tab and Shift+Tab indent, Enter keeps the indentation, a valid check says so, the saved policy opens after a reload', async () => {
    await page.goto(`${srv.base}/datasets/local/kb`);
    await source().waitFor();
    await source().fill('');
    await source().focus();
    await page.keyboard.type('raise "found a refund" if:');
    await page.keyboard.press('Enter');
    assert.equal(await value(), 'raise "found a refund" if:\n    ', 'Enter after a colon indents one level');
    await page.keyboard.type('(msg: Message)');
    await page.keyboard.press('Enter');
    assert.equal(await value(), 'raise "found a refund" if:\n    (msg: Message)\n    ', 'Enter keeps the indentation');
    await page.keyboard.type('"refund" in msg.content');
    await page.keyboard.press('Shift+Tab');
    assert.equal(await value(), 'raise "found a refund" if:\n    (msg: Message)\n"refund" in msg.content', 'Shift+Tab dedents the line');
    await page.keyboard.press('Home');
    await page.keyboard.press('Tab');
    const policy = 'raise "found a refund" if:\n    (msg: Message)\n    "refund" in msg.content';
    assert.equal(await value(), policy, 'Tab indents');
    assert.equal(await focusedLabel(), 'policy source', 'Tab does not leave the editor');

    // A valid policy: the check says so.
    await page.click('button:has-text("Check syntax")');
    await page.locator('.syntax-ok').waitFor();
    assert.match(await page.locator('.syntax-ok').textContent(), /syntax OK/);
    assert.equal(await page.locator('.diags li').count(), 0);
    // An invalid one names line and column, and no longer says OK.
    await source().fill('raise "x" if:\n    (msg: Message\n');
    assert.equal(await page.locator('.syntax-ok').count(), 0, 'an edit clears the OK');
    await page.click('button:has-text("Check syntax")');
    await page.locator('.diags li').first().waitFor();
    assert.match(await page.locator('.diags li').first().textContent(), /^\d+:\d+: /);
    // The browser logs the check's error answer.
    for (let k = problems.length - 1; k >= 0; k--) if (/status of 4\d\d/.test(problems[k])) problems.splice(k, 1);
    assert.equal(await page.locator('.syntax-ok').count(), 0);

    // Saved, then reloaded: the editor opens the saved policy.
    await source().fill(policy);
    await page.fill('input[aria-label="policy name"]', 'refunds');
    await page.click('.policy-panel button:text-is("Save")');
    await page.locator('.policy-panel :text("saved refunds")').waitFor();
    const saved = (await api(srv.base, 'GET', `/datasets/${kb.id}/policies`)).policies.find((p) => p.name === 'refunds');
    assert.equal(saved.source, policy);
    await page.reload();
    await source().waitFor();
    await page.waitForFunction((want) => document.querySelector('textarea[aria-label="policy source"]')?.value === want, policy);
    assert.equal(await page.inputValue('input[aria-label="policy name"]'), 'refunds');
    assert.equal(await page.inputValue('select[aria-label="saved policy"]'), saved.id);
    await shot(page, 'r3-policy-editor');
  });

  test('keyboard: j/k and the arrows move the list selection and Enter opens it; typing in fields is left alone', async () => {
    await page.goto(`${srv.base}/datasets/local/kb`);
    await page.waitForSelector(`.trow[data-trace="${kbIds[0]}"]`);
    await source().waitFor();
    assert.equal(await selectedRow(), null);
    await page.keyboard.press('j');
    assert.equal(await selectedRow(), kbIds[0]);
    await page.keyboard.press('j');
    await page.keyboard.press('ArrowDown');
    assert.equal(await selectedRow(), kbIds[2]);
    await page.keyboard.press('k');
    assert.equal(await selectedRow(), kbIds[1]);
    await page.keyboard.press('ArrowUp');
    await page.keyboard.press('ArrowUp'); // held at the first row
    assert.equal(await selectedRow(), kbIds[0]);
    // Far down: the list scrolls to keep the selected row in view.
    for (let i = 0; i < 35; i++) await page.keyboard.press('ArrowDown');
    await page.waitForFunction((id) => document.querySelector('.trow.selected')?.getAttribute('data-trace') === id, kbIds[35]);
    const inView = await page.evaluate(() => {
      const r = document.querySelector('.trow.selected').getBoundingClientRect();
      const l = document.querySelector('.trace-list').getBoundingClientRect();
      return r.top >= l.top - 1 && r.bottom <= l.bottom + 1;
    });
    assert.ok(inView, 'the selected row is in view');

    // Typing in the search box and the policy editor moves nothing.
    await page.click('input[aria-label="search traces"]');
    await page.keyboard.type('jk');
    await page.keyboard.press('ArrowDown');
    assert.equal(await page.inputValue('input[aria-label="search traces"]'), 'jk');
    await page.fill('input[aria-label="search traces"]', '');
    await source().focus();
    const before = await value();
    await page.keyboard.press('Control+End');
    await page.keyboard.type('j');
    assert.equal(await value(), before + 'j', 'the editor got the j');
    await page.keyboard.press('ArrowUp');
    await page.keyboard.press('Enter');
    assert.ok((await value()).length > before.length + 1, 'the editor got the Enter');
    assert.equal(await selectedRow(), kbIds[35], 'the selection did not move');
    assert.match(page.url(), /\/datasets\/local\/kb$/, 'Enter in the editor opened nothing');
    // Escape leaves the field; Enter opens the selected trace.
    await page.keyboard.press('Escape');
    await page.keyboard.press('Enter');
    await page.waitForURL(`**/traces/${kbIds[35]}`);
    await page.locator('.card[data-event="0"]').waitFor();
    assert.match(await page.locator('.card[data-event="0"]').textContent(), /question 35/);
  });

  test('keyboard: j/k and the arrows move the selected span in the tree, Enter opens and closes it, left goes to the parent', async () => {
    const ds = await createDataset(srv.base, 'spans');
    const id = (await uploadFile(srv.base, ds.id, join(corpus, 'otel/any-agent/OPENAI_trace.json'))).ids[0];
    const t = await api(srv.base, 'GET', `/traces/${id}`);
    // The tree's pre-order, computed here from parent ids (input order
    // among siblings).
    const kids = new Map();
    const ids = new Set(t.spans.map((s) => s.id));
    for (const s of t.spans) {
      const p = s.parent_id && ids.has(s.parent_id) ? s.parent_id : '';
      kids.set(p, [...(kids.get(p) ?? []), s.id]);
    }
    const order = [];
    const walk = (p) => (kids.get(p) ?? []).forEach((c) => (order.push(c), walk(c)));
    walk('');
    assert.ok(order.length >= 3, `${order.length} spans`);
    const root = order[0];
    const child = kids.get(root)[0];

    await page.goto(`${srv.base}/traces/${id}`);
    await page.click('button.tab-tree');
    await page.click('button:has-text("Expand all")');
    await page.waitForSelector(`.tree-row[data-span="${order[order.length - 1]}"]`);
    const sel = () => page.evaluate(() => document.querySelector('.tree-row.selected')?.getAttribute('data-span') ?? null);
    await page.keyboard.press('j'); // focus is on the Expand all button: j still moves
    assert.equal(await sel(), order[0]);
    await page.locator(`[data-span-details="${order[0]}"]`).waitFor();
    await page.keyboard.press('ArrowDown');
    assert.equal(await sel(), order[1]);
    await page.keyboard.press('j');
    assert.equal(await sel(), order[2]);
    await page.keyboard.press('k');
    await page.keyboard.press('ArrowUp');
    assert.equal(await sel(), order[0]);
    // Enter closes the root (its children leave), Enter opens it again. A
    // click on the row first: Enter on the focused Expand all button is the
    // button's.
    await page.locator(`.tree-row[data-span="${root}"] .tree-name`).click();
    assert.equal(await sel(), root);
    await page.keyboard.press('Enter');
    await page.waitForFunction((c) => !document.querySelector(`.tree-row[data-span="${c}"]`), child);
    assert.equal(await page.locator('.tree-row').count(), kids.get('').length);
    await page.keyboard.press('Enter');
    await page.locator(`.tree-row[data-span="${child}"]`).waitFor();
    // Down to the child, left goes back to its parent.
    await page.keyboard.press('ArrowDown');
    assert.equal(await sel(), child);
    if ((kids.get(child) ?? []).length) await page.keyboard.press('ArrowLeft'); // first closes the child
    await page.keyboard.press('ArrowLeft');
    assert.equal(await sel(), root);
    // Typing in the find box moves nothing.
    await page.click('input[aria-label="find in trace"]');
    await page.keyboard.type('jj');
    await page.keyboard.press('ArrowDown');
    assert.equal(await sel(), root);
    assert.equal(await page.inputValue('input[aria-label="find in trace"]'), 'jj');
    await shot(page, 'r3-tree-keys');
  });

  test('readable payloads: JSON pretty-printed, long outputs and arguments folded, a search hit unfolds them, content stays text', async () => {
    await page.goto(`${srv.base}/traces/${payloadId}`);
    const small = page.locator('.card[data-event="3"] .rich pre');
    await small.waitFor();
    assert.equal(await small.textContent(), JSON.stringify(payload.small, null, 2));
    // The long output: printed, folded, the rest behind a control.
    const big = page.locator('.card[data-event="2"]');
    const bigText = await big.locator('.rich pre').textContent();
    assert.ok(bigText.startsWith(JSON.stringify(JSON.parse(payload.big), null, 2).slice(0, 200)), bigText.slice(0, 200));
    assert.ok(bigText.length < JSON.stringify(JSON.parse(payload.big), null, 2).length, 'folded');
    assert.ok(!bigText.includes('zebracorn'));
    const more = big.locator('button.fold');
    assert.match(await more.textContent(), /show more/);
    await more.click();
    assert.ok((await big.locator('.rich pre').textContent()).includes('"city": "zebracorn"'));
    // Hostile markup in the JSON is text.
    assert.equal(await big.locator('img, script').count(), 0);
    assert.ok((await big.textContent()).includes('<img src=x onerror=alert(1)>'));
    // Long arguments: folded to a few lines, a control unfolds them.
    const args = page.locator('.card[data-event="1"] .tool-args');
    assert.match(await args.getAttribute('class'), /\bfolded\b/);
    const [h, sh] = await args.evaluate((e) => [e.clientHeight, e.scrollHeight]);
    assert.ok(h < sh && h < 250, `folded height ${h} of ${sh}`);
    const unfold = page.locator('.card[data-event="1"] button.fold-args');
    assert.match(await unfold.textContent(), /show all arguments/);
    await unfold.click();
    assert.doesNotMatch(await args.getAttribute('class'), /\bfolded\b/);
    const [h2, sh2] = await args.evaluate((e) => [e.clientHeight, e.scrollHeight]);
    assert.ok(h2 >= sh2 - 1, `unfolded ${h2} of ${sh2}`);
    await shot(page, 'r3-payloads');

    // A search hit in the folded part of the output: the stepper lands on
    // it and the output unfolds.
    await page.goto(`${srv.base}/traces/${payloadId}?q=zebracorn`);
    const hit = page.locator('.card[data-event="2"] mark.hl-search');
    await hit.waitFor();
    assert.equal(await hit.textContent(), 'zebracorn');
    assert.ok(await hit.isVisible());
    // A hit far into the long arguments: they are not folded.
    await page.goto(`${srv.base}/traces/${payloadId}?q=quokka`);
    const ahit = page.locator('.card[data-event="1"] mark.hl-search');
    await ahit.waitFor();
    assert.equal(await ahit.textContent(), 'quokka');
    assert.doesNotMatch(await page.locator('.card[data-event="1"] .tool-args').getAttribute('class'), /\bfolded\b/);
    const vis = await ahit.evaluate((m) => {
      const r = m.getBoundingClientRect();
      const a = m.closest('.tool-args').getBoundingClientRect();
      return r.height > 0 && r.top >= a.top - 1 && r.bottom <= a.bottom + 1;
    });
    assert.ok(vis, 'the hit is inside the shown arguments');
  });

  test('dark mode follows the system, a toggle overrides it and is remembered; text, links, highlights and violations readable in both', async () => {
    // A violation mark and a search hit on the first message.
    await api(srv.base, 'POST', `/traces/${payloadId}/annotations`, { address: 'messages.0.content:0-4', content: 'a violation', source: 'analyzer' });
    const measure = async (p) => {
      await p.goto(`${srv.base}/traces/${payloadId}?q=flights`);
      await p.locator('.card[data-event="0"] mark.hl-search').waitFor();
      await p.locator('.card[data-event="0"] mark.hl-analyzer').waitFor();
      return p.evaluate(() => {
        const rgb = (s) => (s.match(/[\d.]+/g) ?? []).map(Number);
        // The colour behind an element: the nearest opaque background.
        const bg = (e) => {
          for (let x = e; x; x = x.parentElement) {
            const c = rgb(getComputedStyle(x).backgroundColor);
            if (c.length === 3 || c[3] > 0.5) return c.slice(0, 3);
          }
          return rgb(getComputedStyle(document.documentElement).backgroundColor).slice(0, 3);
        };
        const lum = ([r, g, b]) => {
          const f = (v) => ((v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
          return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
        };
        const ratio = (a, b) => {
          const [x, y] = [lum(a), lum(b)].sort((m, n) => n - m);
          return (x + 0.05) / (y + 0.05);
        };
        const at = (sel) => {
          const e = document.querySelector(sel);
          const fg = rgb(getComputedStyle(e).color).slice(0, 3);
          const b = bg(e);
          return { fg: fg.join(','), bg: b.join(','), ratio: ratio(fg, b) };
        };
        return {
          theme: document.documentElement.dataset.theme,
          page: at('.trace-head'),
          text: at('.card[data-event="0"] .rich p > span'),
          link: at('.trace-head h2 a'),
          muted: at('.trace-head .muted'),
          search: at('.card[data-event="0"] mark.hl-search'),
          violation: at('.card[data-event="0"] mark.hl-analyzer'),
          code: at('.card[data-event="3"] .md-pre'),
        };
      });
    };
    const check = (m, theme) => {
      assert.equal(m.theme, theme);
      for (const k of ['page', 'text', 'link', 'muted', 'search', 'violation', 'code']) {
        assert.notEqual(m[k].fg, m[k].bg, `${theme} ${k}: text the colour of its background`);
        assert.ok(m[k].ratio >= 4.5, `${theme} ${k}: contrast ${m[k].ratio.toFixed(2)} (${m[k].fg} on ${m[k].bg})`);
      }
      assert.notEqual(m.search.bg, m.text.bg, `${theme}: search hits stand out`);
      assert.notEqual(m.violation.bg, m.text.bg, `${theme}: violations stand out`);
      assert.notEqual(m.violation.bg, m.search.bg, `${theme}: violations and hits differ`);
    };
    const light = await browser.newContext({ colorScheme: 'light', viewport: { width: 1400, height: 900 } });
    const dark = await browser.newContext({ colorScheme: 'dark', viewport: { width: 1400, height: 900 } });
    try {
      const lp = await light.newPage();
      const dp = await dark.newPage();
      const lprob = watch(lp);
      const dprob = watch(dp);
      const lm = await measure(lp);
      const dm = await measure(dp);
      check(lm, 'light');
      check(dm, 'dark');
      assert.notEqual(lm.page.bg, dm.page.bg);
      assert.notEqual(lm.text.fg, dm.text.fg);
      const num = (c) => c.split(',').map(Number);
      assert.ok(lum(num(dm.page.bg)) < lum(num(lm.page.bg)), 'the dark page is darker');
      await shot(dp, 'r3-dark-trace');
      // The other pages in the dark: the list and the home page.
      await dp.goto(`${srv.base}/datasets/local/kb`);
      await dp.waitForSelector(`.trow[data-trace="${kbIds[0]}"] .first-user:not(:empty)`);
      const rows = await dp.evaluate(() => {
        const s = getComputedStyle(document.querySelector('.trow'));
        return { fg: s.color, bg: s.backgroundColor, page: getComputedStyle(document.documentElement).backgroundColor };
      });
      assert.notEqual(rows.fg, rows.bg);
      assert.ok(lum(rows.bg.match(/\d+/g).map(Number)) < 0.05, `dark rows ${rows.bg}`);
      await shot(dp, 'r3-dark-dataset');
      await dp.goto(`${srv.base}/`);
      await dp.waitForSelector('table.datasets');
      const home = await dp.evaluate(() => [getComputedStyle(document.querySelector('table.datasets td')).color, getComputedStyle(document.documentElement).backgroundColor]);
      assert.ok(lum(home[0].match(/\d+/g).map(Number)) > 0.5 && lum(home[1].match(/\d+/g).map(Number)) < 0.05, `home ${home}`);

      // The toggle overrides the system's dark, and a reload remembers it.
      await dp.click('button.theme-toggle');
      assert.equal(await dp.evaluate(() => document.documentElement.dataset.theme), 'light');
      await dp.reload();
      await dp.waitForSelector('table.datasets');
      assert.equal(await dp.evaluate(() => document.documentElement.dataset.theme), 'light');
      assert.equal(await dp.getAttribute('button.theme-toggle', 'aria-pressed'), 'false');
      // Toggled back to the system's own theme, the page follows the system
      // again: no choice is stored.
      await dp.click('button.theme-toggle');
      assert.equal(await dp.evaluate(() => [document.documentElement.dataset.theme, localStorage.getItem('lookout.theme')].join()), 'dark,');
      // The light system, no choice stored, follows a change of setting.
      await lp.emulateMedia({ colorScheme: 'dark' });
      await lp.waitForFunction(() => document.documentElement.dataset.theme === 'dark');
      assert.deepEqual([...lprob, ...dprob], []);
    } finally {
      await light.close();
      await dark.close();
    }
  });

  test('no console errors, page errors or dialogs during the run', () => {
    assert.deepEqual(problems, []);
  });
});

function lum([r, g, b]) {
  const f = (v) => ((v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
  return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
}
