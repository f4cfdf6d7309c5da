// Rendering of trace text: markdown and code as Preact vnodes (never HTML
// strings), with highlights at exact ranges. Every text piece carries
// data-o, its UTF-16 offset in the source, so a selection maps back to an
// address; data-f on the container names the field.
import type { ComponentChildren, VNode } from 'preact';
import { useState } from 'preact/hooks';
import type { Highlight } from '../lib/highlight';
import { segments } from '../lib/highlight';
import { foldPoint, parseBlocks, tokenizeCode, type Block, type Inline } from '../lib/markdown';
import { prettyJSON, type Pretty } from '../lib/prettyjson';
import { fmtInt } from './common';

export interface HlCtx {
  ranges: Highlight[]; // range highlights on this field
  current: string | null; // the id of the highlight stepped to
}

const kindOrder = ['target', 'search', 'analyzer', 'annotation'];

/** piece renders src[s, e) split by highlights, with an optional class. */
export function piece(src: string, s: number, e: number, ctx: HlCtx, cls?: string): VNode[] {
  if (e <= s) return [];
  const out: VNode[] = [];
  for (const seg of segments(s, e, ctx.ranges)) {
    const text = src.slice(seg.start, seg.end);
    if (seg.marks.length === 0) {
      out.push(
        <span class={cls} data-o={seg.start}>
          {text}
        </span>,
      );
      continue;
    }
    out.push(
      mark(
        seg.marks,
        ctx,
        <span class={cls} data-o={seg.start}>
          {text}
        </span>,
      ),
    );
  }
  return out;
}

/** mark wraps a piece in its highlights, with their messages on hover. */
function mark(marks: Highlight[], ctx: HlCtx, inner: VNode): VNode {
  const kinds = [...new Set(marks.map((m) => m.kind))].sort((a, b) => kindOrder.indexOf(a) - kindOrder.indexOf(b));
  const isCur = ctx.current !== null && marks.some((m) => m.id === ctx.current);
  return (
    <mark
      class={`hl ${kinds.map((k) => 'hl-' + k).join(' ')}${isCur ? ' hl-current' : ''}`}
      title={marks.map((m) => m.message).filter(Boolean).join('\n')}
      data-hl={marks.map((m) => m.id).join(' ')}
    >
      {inner}
    </mark>
  );
}

function inlines(src: string, xs: Inline[], ctx: HlCtx): ComponentChildren[] {
  return xs.map((x) => {
    switch (x.t) {
      case 'text':
        return piece(src, x.s, x.e, ctx);
      case 'code':
        return <code class="md-code">{piece(src, x.s, x.e, ctx)}</code>;
      case 'strong':
        return <strong>{inlines(src, x.c, ctx)}</strong>;
      case 'em':
        return <em>{inlines(src, x.c, ctx)}</em>;
      case 'del':
        return <del>{inlines(src, x.c, ctx)}</del>;
      case 'link':
        return (
          <a href={x.href} target="_blank" rel="noopener noreferrer nofollow">
            {inlines(src, x.c, ctx)}
          </a>
        );
      case 'image':
        if (x.src) return <img class="md-img" src={x.src} alt={altText(src, x.alt)} loading="lazy" />;
        if (x.href)
          return (
            <a class="md-remote-img" href={x.href} target="_blank" rel="noopener noreferrer nofollow" title="remote image, not loaded">
              🖼 {inlines(src, x.alt, ctx)}
            </a>
          );
        return <span class="md-bad-img">🖼 {inlines(src, x.alt, ctx)}</span>;
    }
  });
}

function altText(src: string, xs: Inline[]): string {
  return xs.map((x) => (x.t === 'text' || x.t === 'code' ? src.slice(x.s, x.e) : x.t === 'image' ? '' : altText(src, (x as any).c ?? []))).join('');
}

function lines(src: string, ls: Inline[][], ctx: HlCtx): ComponentChildren[] {
  const out: ComponentChildren[] = [];
  ls.forEach((l, i) => {
    if (i > 0) out.push(<br />);
    out.push(inlines(src, l, ctx));
  });
  return out;
}

/** cached remembers a pure function's results on the trace's strings, so
 * that a card scrolled back into view does not parse its text again. Keys
 * are the strings themselves (their hash is computed once per string). */
function cached<T>(fn: (src: string, n: number) => T, limit = 400): (src: string, n: number) => T {
  const m = new Map<string, Map<number, T>>();
  return (src, n) => {
    let inner = m.get(src);
    if (!inner) {
      if (m.size >= limit) m.delete(m.keys().next().value!);
      m.set(src, (inner = new Map()));
    }
    let v = inner.get(n);
    if (v === undefined) inner.set(n, (v = fn(src, n)));
    return v;
  };
}

const jsonTokens = cached((src, e) => tokenizeCode(src, 0, e, 'json'));
const blocksOf = cached((src, end) => parseBlocks(src, end));
const foldOf = cached((src) => foldPoint(src));
const isJSON = cached((src) => looksJSON(src));
const prettyOf = cached((src): Pretty | false => prettyJSON(src) ?? false);

/** prettyCtx moves a field's highlights onto its pretty-printed text. */
function prettyCtx(p: Pretty, ctx: HlCtx): HlCtx {
  if (!ctx.ranges.length) return ctx;
  return { current: ctx.current, ranges: ctx.ranges.map((h) => (h.start === undefined ? h : { ...h, start: p.toPretty(h.start), end: p.toPretty(h.end ?? h.start) })) };
}

/** codePiece is piece for code: no data-o (the code element carries the
 * block's offset, see sourceOffset) and bare text between tokens, so a
 * JSON block costs about half the DOM nodes. */
function codePiece(src: string, s: number, e: number, ctx: HlCtx, out: ComponentChildren[], cls?: string) {
  if (e <= s) return;
  if (!ctx.ranges.length) {
    out.push(cls ? <span class={cls}>{src.slice(s, e)}</span> : src.slice(s, e));
    return;
  }
  for (const seg of segments(s, e, ctx.ranges)) {
    const text = src.slice(seg.start, seg.end);
    if (seg.marks.length === 0) {
      out.push(cls ? <span class={cls}>{text}</span> : text);
      continue;
    }
    out.push(mark(seg.marks, ctx, <span class={cls}>{text}</span>));
  }
}

/** printedCode maps the code element of pretty-printed JSON to its
 * printer, whose toSource turns a point in it into a source offset. */
const printedCode = new WeakMap<Element, Pretty>();

export function CodeBlock(props: { src: string; s: number; e: number; lang: string; ctx: HlCtx; printed?: Pretty }) {
  const { src, s, e, lang, ctx } = props;
  const toks = s === 0 && lang === 'json' ? jsonTokens(src, e) : tokenizeCode(src, s, e, lang);
  const out: ComponentChildren[] = [];
  let at = s;
  for (const t of toks) {
    codePiece(src, at, t.s, ctx, out);
    codePiece(src, t.s, t.e, ctx, out, t.cls);
    at = t.e;
  }
  codePiece(src, at, e, ctx, out);
  return (
    <pre class={`md-pre${props.printed ? ' printed' : ''}`} data-lang={lang || undefined}>
      <code data-o={s} ref={props.printed ? (el) => void (el && printedCode.set(el, props.printed!)) : undefined}>
        {out}
      </code>
    </pre>
  );
}

/** sourceOffset maps a point in rendered text (a selection's end) to its
 * UTF-16 offset in the field's source: the nearest element with data-o
 * starts at that offset, and the text before the point inside it follows
 * the source without gaps. Null outside any such element. */
export function sourceOffset(node: Node, offset: number): { at: HTMLElement; o: number } | null {
  const at = (node.nodeType === 3 ? node.parentElement : (node as Element))?.closest<HTMLElement>('[data-o]');
  if (!at) return null;
  const r = document.createRange();
  r.setStart(at, 0);
  r.setEnd(node, offset);
  const o = Number(at.dataset.o) + r.toString().length;
  const p = printedCode.get(at);
  return { at, o: p ? p.toSource(o) : o };
}

function blocks(src: string, bs: Block[], ctx: HlCtx): ComponentChildren[] {
  return bs.map((b) => {
    switch (b.t) {
      case 'p':
        return <p>{lines(src, b.lines, ctx)}</p>;
      case 'h': {
        const H = `h${Math.min(6, b.level + 2)}` as 'h3';
        return <H class="md-h">{inlines(src, b.c, ctx)}</H>;
      }
      case 'code':
        return <CodeBlock src={src} s={b.s} e={b.e} lang={b.lang} ctx={ctx} />;
      case 'quote':
        return <blockquote>{lines(src, b.lines, ctx)}</blockquote>;
      case 'list': {
        const items = b.items.map((it) => <li>{blocks(src, it, ctx)}</li>);
        return b.ordered ? <ol start={b.start === 1 ? undefined : b.start}>{items}</ol> : <ul>{items}</ul>;
      }
      case 'hr':
        return <hr />;
    }
  });
}

/** looksJSON tells content that is a JSON document, shown as code. */
export function looksJSON(s: string): boolean {
  const t = s.trim();
  if (!((t.startsWith('{') && t.endsWith('}')) || (t.startsWith('[') && t.endsWith(']')))) return false;
  if (t.length > 200000) return true;
  try {
    JSON.parse(t);
    return true;
  } catch {
    return false;
  }
}

export interface RichProps {
  src: string;
  field: string;
  ctx: HlCtx;
  mode: 'markdown' | 'raw';
  open?: boolean; // force unfolded (a highlight or target lies past the fold)
}

/** Rich shows one text field: markdown, JSON as code, or raw lines. */
export function Rich(props: RichProps) {
  const { field, mode } = props;
  const [expanded, setExpanded] = useState(false);
  // JSON content reads pretty-printed (the Lines view keeps the source),
  // its highlights moved onto the printed text; folding is of what shows.
  const pretty = mode === 'markdown' && isJSON(props.src, 0) ? prettyOf(props.src, 0) : false;
  const src = pretty ? pretty.text : props.src;
  const ctx = pretty ? prettyCtx(pretty, props.ctx) : props.ctx;
  const cut = foldOf(src, 0);
  const needOpen =
    props.open || (cut >= 0 && ctx.ranges.some((h) => (h.start ?? 0) >= cut && (h.id === ctx.current || h.kind === 'target')));
  const end = cut >= 0 && !expanded && !needOpen ? cut : src.length;
  let body: ComponentChildren;
  if (mode === 'raw') body = <RawLines src={src} end={end} ctx={ctx} />;
  else if (pretty) body = <CodeBlock src={src} s={0} e={end} lang="json" ctx={ctx} printed={pretty} />;
  else if (isJSON(src, 0)) body = <CodeBlock src={src} s={0} e={end} lang="json" ctx={ctx} />;
  else body = blocks(src, blocksOf(src, end), ctx);
  return (
    <div class={`rich rich-${mode}`} data-f={field}>
      {body}
      {cut >= 0 && !needOpen && (
        <button class="fold" type="button" aria-expanded={expanded} onClick={() => setExpanded(!expanded)}>
          {expanded ? 'show less' : `show more (${fmtInt(src.length - cut)} more characters)`}
        </button>
      )}
    </div>
  );
}

/** RawLines shows text as numbered lines; a click on a number selects it. */
export function RawLines(props: { src: string; end: number; ctx: HlCtx }) {
  const { src, end, ctx } = props;
  const rows: VNode[] = [];
  let s = 0;
  let n = 0;
  while (s <= end) {
    let e = src.indexOf('\n', s);
    if (e < 0 || e > end) e = end;
    rows.push(
      <div class="raw-line" data-line={n}>
        <button type="button" class="ln" data-line={n} title={`comment on line ${n}`}>
          {n}
        </button>
        <span class="raw-text">{piece(src, s, e, ctx)}</span>
      </div>,
    );
    n++;
    if (e >= end) break;
    s = e + 1;
  }
  return <div class="raw">{rows}</div>;
}
