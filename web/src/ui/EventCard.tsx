import { Component, type ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { prettyJSON } from '../lib/prettyjson';
import type { Highlight, HighlightIndex } from '../lib/highlight';
import type { Annotation, Part, ToolCall, TraceEvent } from '../lib/types';
import { invariantImage, safeHref, safeImageSrc } from '../lib/markdown';
import { looksJSON, piece, Rich } from './Rich';
import { fmtInt } from './common';
import { fmtDuration } from '../lib/tree';
import { fmtTokens, type Usage } from '../lib/usage';
import { Cost } from './TreeView';

/** Arguments longer than this (as JSON) fold to a few lines. */
export const ARGS_FOLD = 600;

export interface CardProps {
  i: number;
  e: TraceEvent;
  hl: HighlightIndex;
  current: string | null; // current highlight id
  focused: boolean; // the j/k event, or the URL target
  raw: boolean;
  callIndex: Map<string, { event: number; call: number }>; // tool call id → where it is
  outputIndex: Map<string, number>; // tool call id → event of its output
  notes: Annotation[]; // annotations on this event
  me: string | null;
  canWrite: boolean; // may annotate and rate (the dataset's owner)
  onJump: (event: number, address?: string) => void;
  onToggleRaw: (i: number) => void;
  onComment: (address: string) => void;
  onRate: (i: number, rating: 1 | -1) => void;
  /** The span the event came from, when it did: its usage and duration. */
  span?: CardSpan;
  /** onSpan opens the tree on a span. */
  onSpan?: (id: string) => void;
}

/** CardSpan is what a card shows of the span its event came from. */
export interface CardSpan {
  id: string;
  name?: string;
  usage: Usage;
  ms?: number; // how long it took
}

/** SpanBadge shows, under a card's header, the model, tokens, cost and
 * latency of the span the event came from, and links to it in the tree. */
function SpanBadge(props: { span: CardSpan; onSpan?: (id: string) => void }) {
  const { span } = props;
  const u = span.usage;
  const tok = fmtTokens(u, fmtInt);
  return (
    <div class="card-span">
      {u.model && <span class="model ell">{u.model}</span>}
      {tok && <span class="tok">{tok}</span>}
      {u.cost !== undefined && <Cost u={u} />}
      {span.ms !== undefined && <span class="lat">{fmtDuration(span.ms)}</span>}
      <a
        class="span-link"
        href={`#spans.${span.id}`}
        title={`open span ${span.name ?? span.id} in the tree`}
        onClick={(ev) => {
          if (!props.onSpan) return;
          ev.preventDefault();
          props.onSpan(span.id);
        }}
      >
        span ↗
      </a>
    </div>
  );
}

const knownRoles = new Set(['user', 'assistant', 'system', 'tool', 'developer', 'function']);

function prettyArgs(v: unknown): string {
  if (typeof v === 'string') return (looksJSON(v) && prettyJSON(v)?.text) || v;
  return JSON.stringify(v, null, 2) ?? '';
}

/** wholeMark is the class, hover text and ids of the highlights on a whole
 * part of a card (a tool call, an argument object or value): analyzer
 * violations on `messages.N.tool_calls.K` name no text range. The class
 * starts with a blank, to follow the element's own. */
function wholeMark(hs: Highlight[], current: string | null): { class: string; title?: string; 'data-hl'?: string } {
  if (!hs.length) return { class: '' };
  const kinds = [...new Set(hs.map((h) => h.kind))];
  const cur = current !== null && hs.some((h) => h.id === current);
  return {
    class: ` hl ${kinds.map((k) => 'hl-' + k).join(' ')}${cur ? ' hl-current' : ''}`,
    title: hs.map((h) => h.message).join('\n') || undefined,
    'data-hl': hs.map((h) => h.id).join(' '),
  };
}

/** ArgValue shows tool call arguments as an indented tree whose string
 * leaves carry highlights (addresses ...function.arguments.<key>); a
 * highlight on a whole value (an object, a number) marks that value. */
function ArgValue(props: { v: unknown; path: string; hl: HighlightIndex; i: number; current: string | null; depth: number }): ComponentChildren {
  const { v, path, hl, i, current, depth } = props;
  const m = wholeMark(hl.whole(i, path), current);
  if (typeof v === 'string') {
    return (
      <span {...m} class={`arg-str${m.class}`} data-f={`messages.${i}.${path}`}>
        "{piece(v, 0, v.length, { ranges: hl.ranges(i, path), current })}"
      </span>
    );
  }
  if (v === null || typeof v !== 'object')
    return (
      <span {...m} class={`arg-lit tk-num${m.class}`}>
        {JSON.stringify(v)}
      </span>
    );
  if (depth > 8)
    return (
      <span {...m} class={`arg-lit${m.class}`}>
        {JSON.stringify(v)}
      </span>
    );
  const entries = Array.isArray(v) ? v.map((x, k) => [String(k), x] as const) : Object.entries(v);
  if (entries.length === 0)
    return (
      <span {...m} class={`arg-lit${m.class}`}>
        {Array.isArray(v) ? '[]' : '{}'}
      </span>
    );
  return (
    <div {...m} class={`arg-obj${m.class}`}>
      {entries.map(([k, x]) => (
        <div class="arg-row">
          <span class="arg-key tk-key">{Array.isArray(v) ? `[${k}]` : k}</span>: <ArgValue v={x} path={`${path}.${k}`} hl={hl} i={i} current={current} depth={depth + 1} />
        </div>
      ))}
    </div>
  );
}

function Call(props: CardProps & { c: ToolCall; k: number }) {
  const { c, k, i, hl, current } = props;
  const [unfolded, setUnfolded] = useState(false);
  const name = c.function?.name ?? '(no name)';
  const out = c.id ? props.outputIndex.get(c.id) : undefined;
  const args = c.function?.arguments;
  const namePath = `tool_calls.${k}.function.name`;
  // Highlights on the whole call (an analyzer's ToolCall match) or on its
  // function object.
  const whole = [...hl.whole(i, `tool_calls.${k}`), ...hl.whole(i, `tool_calls.${k}.function`)];
  const m = wholeMark(whole, current);
  // Long arguments fold, unless a highlight lies in them: folding never
  // hides a search hit, a violation or an annotation.
  const argPath = `tool_calls.${k}.function.arguments`;
  const argLen = args == null ? 0 : typeof args === 'string' ? args.length : (JSON.stringify(args)?.length ?? 0);
  const marked = argLen > ARGS_FOLD && hl.event(i).some((h) => h.field === argPath || h.field.startsWith(argPath + '.'));
  const long = argLen > ARGS_FOLD && !marked;
  const folded = long && !unfolded;
  return (
    <div {...m} class={`tool-call${m.class}`} id={c.id ? `call-${c.id}` : undefined} data-call={c.id}>
      <div class="tool-call-head">
        <span class="badge tool">tool call</span>{' '}
        <b class="tool-name" data-f={`messages.${i}.${namePath}`}>
          {piece(name, 0, name.length, { ranges: hl.ranges(i, namePath), current })}
        </b>
        {c.id && <code class="muted small">{c.id}</code>}
        {out !== undefined && (
          <a class="jump to-output" href={`#messages.${out}`} onClick={(e) => (e.preventDefault(), props.onJump(out, `messages.${out}`))}>
            output ↓ #{out}
          </a>
        )}
        {whole.length > 0 && <span class={`call-flag flag-${whole[0].kind}`}>{whole[0].kind === 'analyzer' ? '⚠ ' : ''}{whole[0].message}</span>}
      </div>
      {args !== undefined && args !== null && (
        <div class={`tool-args${folded ? ' folded' : ''}`}>
          {typeof args === 'object' ? (
            <ArgValue v={args} path={`tool_calls.${k}.function.arguments`} hl={hl} i={i} current={current} depth={0} />
          ) : (
            <pre {...wholeMark(hl.whole(i, `tool_calls.${k}.function.arguments`), current)} class="md-pre">
              {prettyArgs(args)}
            </pre>
          )}
        </div>
      )}
      {long && (
        <button type="button" class="small fold fold-args" aria-expanded={unfolded} onClick={() => setUnfolded(!unfolded)}>
          {unfolded ? 'show less' : `show all arguments (${fmtInt(argLen)} characters)`}
        </button>
      )}
    </div>
  );
}

function imageURL(p: Part): string | null {
  const u = typeof p.image_url === 'string' ? p.image_url : p.image_url?.url;
  return typeof u === 'string' ? u : null;
}

/** ImageBoxes is an image of an event with the boxes addressed to it
 * (messages.N.content[.K]:bbox-x1,y1,x2,y2, in pixels or fractions). */
function ImageBoxes(props: { src: string; i: number; k: number; field: string; hl: HighlightIndex }) {
  const { src, i, k, field, hl } = props;
  const boxes = hl.event(i).filter((h) => h.field === field && h.addr.sel?.kind === 'bbox');
  return (
    <div class="img-part" data-f={`messages.${i}.${field}`}>
      <img src={src} alt={`image ${k}`} loading="lazy" />
      {boxes.map((b) => {
        const s = b.addr.sel as { x1: number; y1: number; x2: number; y2: number };
        const frac = s.x2 <= 1 && s.y2 <= 1;
        return (
          <span
            class={`bbox hl-${b.kind}`}
            title={b.message}
            style={frac ? { left: `${s.x1 * 100}%`, top: `${s.y1 * 100}%`, width: `${(s.x2 - s.x1) * 100}%`, height: `${(s.y2 - s.y1) * 100}%` } : { left: `${s.x1}px`, top: `${s.y1}px`, width: `${s.x2 - s.x1}px`, height: `${s.y2 - s.y1}px` }}
          />
        );
      })}
    </div>
  );
}

function Parts(props: CardProps & { parts: Part[] }) {
  const { parts, i, hl, current, raw } = props;
  return (
    <>
      {parts.map((p, k) => {
        if (p && typeof p.text === 'string') {
          const f = `content.${k}.text`;
          return <Rich src={p.text} field={`messages.${i}.${f}`} ctx={{ ranges: hl.ranges(i, f), current }} mode={raw ? 'raw' : 'markdown'} />;
        }
        const u = p ? imageURL(p) : null;
        if (u) {
          const src = safeImageSrc(u);
          if (src) return <ImageBoxes src={src} i={i} k={k} field={`content.${k}`} hl={hl} />;
          const href = safeHref(u);
          return href ? (
            <a class="md-remote-img" href={href} target="_blank" rel="noopener noreferrer nofollow">
              🖼 remote image (not loaded): {href.slice(0, 120)}
            </a>
          ) : (
            <span class="muted">🖼 image</span>
          );
        }
        return <pre class="md-pre">{JSON.stringify(p, null, 2)}</pre>;
      })}
    </>
  );
}

/** sameCard tells props that render the same card. Callbacks are left out:
 * the trace page's callbacks read its latest state through refs, so an old
 * one does what a new one would. */
function sameCard(a: CardProps, b: CardProps): boolean {
  for (const k in b) {
    const v = (b as any)[k];
    if (typeof v !== 'function' && (a as any)[k] !== v) return false;
  }
  return true;
}

/** EventCard renders only when its event, highlights or state change:
 * scrolling re-renders the list on every frame, and the cards already on
 * screen need not be built again. */
export class EventCard extends Component<CardProps> {
  shouldComponentUpdate(next: CardProps) {
    return !sameCard(this.props, next);
  }
  render() {
    return <EventCardView {...this.props} />;
  }
}

function EventCardView(props: CardProps) {
  const { i, e, hl, current, raw, notes } = props;
  const role = typeof e.role === 'string' && e.role ? e.role : 'event';
  const roleClass = knownRoles.has(role) ? role : 'other';
  const whole = hl.whole(i, '');
  const callAt = e.tool_call_id ? props.callIndex.get(e.tool_call_id) : undefined;
  const up = notes.filter((a) => (a.extra as any)?.rating === 1).length;
  const down = notes.filter((a) => (a.extra as any)?.rating === -1).length;
  const comments = notes.filter((a) => a.address === `messages.${i}` && (a.extra as any)?.rating === undefined);
  const content = e.content;
  // Invariant's image content shows as the image, its text in the Lines view.
  const img = typeof content === 'string' && !raw ? invariantImage(content) : null;
  return (
    <article
      class={`card role-${roleClass} ${props.focused ? 'focused' : ''} ${whole.length ? 'card-hl card-hl-' + whole[0].kind : ''}`}
      data-event={i}
      id={`event-${i}`}
      title={whole.map((h) => h.message).join('\n') || undefined}
    >
      <header class="card-head">
        <span class={`role r-${roleClass}`}>{role}</span>
        <a class="addr" href={`#messages.${i}`} title="link to this event">
          #{i}
        </a>
        {e.name && typeof e.name === 'string' && <span class="muted small">{e.name}</span>}
        {callAt && (
          <a
            class="jump to-call"
            href={`#messages.${callAt.event}.tool_calls.${callAt.call}`}
            onClick={(ev) => (ev.preventDefault(), props.onJump(callAt.event, `messages.${callAt.event}.tool_calls.${callAt.call}`))}
          >
            ↑ output of call #{callAt.event}
          </a>
        )}
        {e.tool_call_id && !callAt && <span class="muted small">output of {e.tool_call_id}</span>}
        <span class="spacer" />
        {props.canWrite ? (
          <>
            <button type="button" class={`small rate ${up ? 'on' : ''}`} title="thumbs up" aria-label="thumbs up" onClick={() => props.onRate(i, 1)}>
              ▲{up ? ' ' + up : ''}
            </button>
            <button type="button" class={`small rate ${down ? 'on' : ''}`} title="thumbs down" aria-label="thumbs down" onClick={() => props.onRate(i, -1)}>
              ▼{down ? ' ' + down : ''}
            </button>
            <button type="button" class="small comment-event" onClick={() => props.onComment(`messages.${i}`)}>
              Comment
            </button>
          </>
        ) : (
          // Read-only: the ratings others gave, no controls.
          (up > 0 || down > 0) && (
            <span class="muted small ratings">
              {up ? `▲ ${up}` : ''} {down ? `▼ ${down}` : ''}
            </span>
          )
        )}
        <button type="button" class="small toggle-raw" title="raw text with line numbers (click a number to comment on the line)" onClick={() => props.onToggleRaw(i)}>
          {raw ? 'Rendered' : 'Lines'}
        </button>
      </header>
      {props.span && <SpanBadge span={props.span} onSpan={props.onSpan} />}
      <div class="card-body" data-event={i}>
        {img && <ImageBoxes src={img} i={i} k={0} field="content" hl={hl} />}
        {typeof content === 'string' && content !== '' && !img && (
          <Rich src={content} field={`messages.${i}.content`} ctx={{ ranges: hl.ranges(i, 'content'), current }} mode={raw ? 'raw' : 'markdown'} open={props.focused && raw} />
        )}
        {Array.isArray(content) && <Parts {...props} parts={content} />}
        {(e.tool_calls ?? []).map((c, k) => c && <Call {...props} c={c} k={k} />)}
        {content == null && !(e.tool_calls ?? []).length && <span class="muted small">(no content)</span>}
      </div>
      {comments.length > 0 && (
        <div class="card-notes">
          {comments.map((a) => (
            <div class="note">
              <b>{a.author ?? a.source}</b>: {a.content}
            </div>
          ))}
        </div>
      )}
    </article>
  );
}
