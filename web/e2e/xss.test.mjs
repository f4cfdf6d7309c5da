// Trace content is hostile: scripts, event handlers, javascript: links and
// markdown HTML must show as text and never run.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { api, createDataset, launch, shot, startServer, watch } from './harness.mjs';

let srv, browser;
before(async () => {
  srv = await startServer();
  browser = await launch();
});
after(async () => {
  await browser?.close();
  await srv?.stop();
});

const payloads = [
  '<script>window.__xss = 1; alert("script")</script>',
  '<img src=x onerror="window.__xss = 2; alert(\'img\')">',
  '[click me](javascript:window.__xss=3;alert("link"))',
  '[data](data:text/html,<script>alert(4)</script>) and <a href="javascript:alert(5)">raw anchor</a>',
  '<svg onload="alert(6)"></svg><iframe src="javascript:alert(7)"></iframe>',
  '**bold <b onmouseover="alert(8)">html</b>** `<script>alert(9)</script>`\n\n```html\n<script>alert(10)</script>\n```',
  '![pixel](javascript:alert(11)) ![x](https://tracker.example/p.gif) <style>body{display:none}</style>',
];

test('hostile trace content is shown as text and nothing runs', async () => {
  const ds = await createDataset(srv.base, '<img src=x onerror=alert(12)>');
  const events = [
    ...payloads.map((content, i) => ({ role: i % 2 ? 'assistant' : 'user', content })),
    { role: '<script>alert(13)</script>', content: 'odd role' },
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'c1', type: 'function', function: { name: '<img src=x onerror=alert(14)>', arguments: { html: '<script>alert(15)</script>' } } }],
    },
    { role: 'tool', tool_call_id: 'c1', content: [{ type: 'text', text: '<script>alert(16)</script>' }, { type: 'image', image_url: 'javascript:alert(17)' }] },
  ];
  const up = await api(srv.base, 'POST', `/datasets/${ds.id}/upload?filename=x.jsonl`, JSON.stringify(events) + '\n', { 'Content-Type': 'application/octet-stream' });
  const id = up.ids[0];
  await api(srv.base, 'POST', `/traces/${id}/annotations`, { address: 'messages.0.content:0-8', content: '<script>alert(18)</script><img src=x onerror=alert(19)>' });
  await api(srv.base, 'POST', `/traces/${id}/annotations`, { address: 'messages.2', content: 'x', source: '<b onclick=alert(20)>analyzer</b>' });

  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const problems = watch(page);
  await page.goto(srv.base + '/');
  await page.waitForSelector('table.datasets');
  await page.goto(`${srv.base}/traces/${id}`);
  await page.waitForSelector(`.card[data-event="${events.length - 1}"]`);
  // hover over everything that might carry a handler, click the links
  for (const el of await page.locator('.card-body *').all()) await el.hover({ force: true, timeout: 500 }).catch(() => {});
  await page.waitForTimeout(300);

  const found = await page.evaluate(() => ({
    xss: window.__xss ?? null,
    scripts: [...document.scripts].map((s) => s.src || 'inline:' + s.textContent.slice(0, 40)),
    handlers: [...document.querySelectorAll('*')].flatMap((e) => [...e.attributes].filter((a) => /^on/i.test(a.name)).map((a) => `${e.tagName} ${a.name}`)),
    badHrefs: [...document.querySelectorAll('a[href]')].map((a) => a.getAttribute('href')).filter((h) => !/^(https?:|mailto:|\/|#)/.test(h)),
    frames: document.querySelectorAll('iframe, object, embed, svg[onload], style:not([data-vite-dev-id])').length,
    imgs: [...document.querySelectorAll('.card img')].map((i) => i.getAttribute('src')),
    text: document.querySelector('.chat').innerText,
    ann: document.querySelector('.annotations').innerText,
    links: [...document.querySelectorAll('.card a[target=_blank]')].map((a) => a.rel),
  }));
  assert.equal(found.xss, null, 'no payload ran');
  assert.ok(found.scripts.every((s) => s.startsWith(srv.base + '/assets/')), `only the app's script: ${found.scripts}`);
  assert.deepEqual(found.handlers, []);
  assert.deepEqual(found.badHrefs, []);
  assert.equal(found.frames, 0);
  assert.deepEqual(found.imgs, [], 'no image from hostile URLs');
  for (const s of ['<script>window.__xss = 1; alert("script")</script>', '<img src=x onerror="window.__xss = 2;', '[click me](javascript:window.__xss=3;alert("link"))', '<a href="javascript:alert(5)">raw anchor</a>', '<svg onload="alert(6)">', '<style>body{display:none}</style>', '<script>alert(15)</script>', '<script>alert(16)</script>']) {
    assert.ok(found.text.includes(s), `shown as text: ${s}`);
  }
  assert.ok(found.ann.includes('<script>alert(18)</script><img src=x onerror=alert(19)>'), 'annotation content is text');
  assert.ok(found.links.every((r) => r.includes('noopener') && r.includes('noreferrer')), `rel: ${found.links}`);
  // the response carries the headers that back this up
  const res = await fetch(`${srv.base}/traces/${id}`);
  assert.match(res.headers.get('content-security-policy'), /script-src 'self';/);
  assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
  await shot(page, 'xss');
  assert.deepEqual(problems, [], 'no dialogs, page errors or console errors');
});

test('hostile metadata in the data a dataset page carries stays data', async () => {
  // The dataset page embeds its first answers in the HTML (boot data); a
  // string that closes the element must not get out of it.
  const name = 'boot </script> data';
  await createDataset(srv.base, name);
  const evil = '</script><script>window.__xss = 21; alert(21)</script><!--';
  await api(srv.base, 'POST', '/push/trace', { dataset: name, messages: [[{ role: 'user', content: evil }]], metadata: [{ note: evil, '</script>': 1 }] });
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const problems = watch(page);
  await page.goto(`${srv.base}/datasets/local/${encodeURIComponent(name)}`);
  await page.locator('.trow[data-trace]').first().waitFor();
  await page.click('button:has-text("Columns")');
  await page.locator('.cols label:has-text("note") input').check();
  await page.locator('.trow[data-trace] span', { hasText: '</script><script>' }).first().waitFor();
  const found = await page.evaluate(() => ({
    xss: window.__xss ?? null,
    scripts: [...document.scripts].filter((s) => s.type !== 'application/json').map((s) => s.src || 'inline:' + s.textContent.slice(0, 40)),
    boot: [...document.scripts].filter((s) => s.type === 'application/json').length,
  }));
  assert.equal(found.xss, null, 'no payload ran');
  assert.equal(found.boot, 1, 'the page carried its data');
  assert.ok(found.scripts.every((s) => s.startsWith(srv.base + '/assets/')), `only the app's script: ${found.scripts}`);
  await shot(page, 'xss-boot');
  assert.deepEqual(problems, [], 'no dialogs, page errors or console errors');
});
