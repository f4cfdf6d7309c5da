import { render } from 'preact-render-to-string';
import { describe, expect, it } from 'vitest';
import { resolveHighlights } from '../lib/highlight';
import { parseBlocks, safeHref } from '../lib/markdown';
import { Rich } from './Rich';

const html = (src: string, addrs: string[] = [], mode: 'markdown' | 'raw' = 'markdown') => {
  const t = { id: 't', events: [{ role: 'user', content: src }] };
  const ranges = resolveHighlights(
    t,
    addrs.map((a, i) => ({ id: 'h' + i, kind: 'annotation' as const, address: a, message: 'note ' + i })),
  );
  return render(<Rich src={src} field="messages.0.content" ctx={{ ranges, current: null }} mode={mode} />);
};

describe('safe markdown', () => {
  it('keeps HTML as text', () => {
    const out = html('<script>alert(1)</script> <img src=x onerror="alert(2)"> <b>bold</b>');
    expect(out).not.toMatch(/<script|<img|<b>/);
    expect(out).toContain('&lt;script>alert(1)&lt;/script>');
    expect(out).toContain('&lt;img src=x onerror=');
  });
  it('links only http, https and mailto, with rel', () => {
    const out = html('[ok](https://example.org/a) [bad](javascript:alert(1)) [data](data:text/html,<x>) [rel](/etc) <mailto:a@b.org>');
    expect(out).toContain('href="https://example.org/a"');
    expect(out).toContain('rel="noopener noreferrer nofollow"');
    expect(out).toContain('href="mailto:a@b.org"');
    expect(out).not.toMatch(/href="javascript|href="data|href="\/etc/);
    expect(out).toContain('[bad](javascript:alert(1))');
    for (const bad of ['javascript:alert(1)', 'JaVaScRiPt:alert(1)', ' javascript:x', 'java\tscript:x', 'vbscript:x', '//evil.org', 'data:text/html,x']) expect(safeHref(bad), bad).toBeNull();
  });
  it('shows only data: raster images inline', () => {
    const out = html('![a](data:image/png;base64,iVBORw0KGgo=) ![b](https://t.example/pixel.gif) ![c](data:image/svg+xml;base64,PHN2Zz4=)');
    expect(out).toContain('<img class="md-img" src="data:image/png;base64,iVBORw0KGgo="');
    expect(out.match(/<img/g)).toHaveLength(1);
    expect(out).toContain('href="https://t.example/pixel.gif"');
  });
  it('renders code blocks and structure', () => {
    const out = html('# Title\n\n- one\n- **two**\n\n```python\ndef f(): return "x"\n```\n> quote');
    expect(out).toContain('<h3 class="md-h">');
    expect(out).toContain('<strong>');
    // One source offset on the code element (the start of its text), bare
    // text between tokens.
    expect(out).toMatch(/<pre class="md-pre" data-lang="python"><code data-o="36"><span class="tk-kw">def<\/span> f\(\): <span class="tk-kw">return/);
    expect(out).toContain('<blockquote>');
    expect(parseBlocks('a\nb\n\nc').map((b) => b.t)).toEqual(['p', 'p']);
  });
});

describe('highlights in rendered text', () => {
  const marked = (out: string) => [...out.matchAll(/<mark[^>]*><span[^>]*>([^<]*)<\/span><\/mark>/g)].map((m) => m[1]);
  it('marks exact code point ranges through markdown', () => {
    const src = '😀 **héllo** wörld and `code 𝄞 here`';
    expect(marked(html(src, ['messages.0.content:4-9']))).toEqual(['héllo']);
    expect(marked(html(src, ['messages.0.content:28-29']))).toEqual(['𝄞']);
    // A range across markdown structure is marked piece by piece.
    expect(marked(html(src, ['messages.0.content:6-16'])).join('|')).toBe('llo| wörl'); // the ** markup is not shown
  });
  it('marks a line, in markdown and raw views', () => {
    const src = 'first line\nsecond line\nthird';
    expect(marked(html(src, ['messages.0.content:L1']))).toEqual(['second line']);
    const raw = html(src, ['messages.0.content:L2'], 'raw');
    expect(marked(raw)).toEqual(['third']);
    expect(raw).toContain('data-line="2"');
  });
  it('pretty-prints a JSON document, its highlights on the same characters', () => {
    const src = '{"name": "Émile 𝄞", "n": 42}';
    const out = html(src, ['messages.0.content:10-22']);
    expect(out).toContain('class="md-pre printed"');
    // The marked text is the range, split at token edges, with the printer's
    // line break where the source had a blank.
    expect(marked(out).join('|').replace(/&quot;/g, '"')).toBe('Émile 𝄞"|,\n  |"n');
    expect(out.replace(/<[^>]+>/g, '').replace(/&quot;/g, '"')).toContain(JSON.stringify(JSON.parse(src), null, 2));
  });
  it('marks exact ranges in a JSON document already printed, with its source offset', () => {
    const src = '{\n  "name": "Émile 𝄞",\n  "n": 42\n}';
    const out = html(src, ['messages.0.content:13-18']);
    expect(out).toContain('<code data-o="0">');
    expect(marked(out).join('|').replace(/&quot;/g, '"')).toBe('Émile');
    expect(out.replace(/<[^>]+>/g, '').replace(/&quot;/g, '"')).toContain(src);
  });
  it('puts the message on hover and the source offset on every piece', () => {
    const out = html('abc def', ['messages.0.content:4-7']);
    expect(out).toContain('title="note 0"');
    expect(out).toContain('data-o="4"');
    expect(out).toContain('data-hl="h0"');
  });
  it('folds long content and unfolds for a target past the fold', () => {
    const long = Array.from({ length: 200 }, (_, i) => `line ${i}`).join('\n');
    expect(html(long)).toContain('show more');
    expect(html(long)).not.toContain('line 150');
  });
});
