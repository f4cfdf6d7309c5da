import { render } from 'preact-render-to-string';
import { describe, expect, it } from 'vitest';
import { HighlightIndex, resolveHighlights } from '../lib/highlight';
import type { TraceEvent } from '../lib/types';
import { EventCard } from './EventCard';

const card = (e: TraceEvent, marks: { address: string; message: string }[] = [], current: string | null = null, canWrite = true) => {
  const t = { id: 't', events: [e] };
  const hl = new HighlightIndex(resolveHighlights(t, marks.map((m, k) => ({ id: 'h' + k, kind: 'analyzer' as const, ...m }))));
  return render(
    <EventCard
      i={0}
      e={e}
      hl={hl}
      current={current}
      focused={false}
      raw={false}
      callIndex={new Map()}
      outputIndex={new Map()}
      notes={[]}
      me="me"
      canWrite={canWrite}
      onJump={() => {}}
      onToggleRaw={() => {}}
      onComment={() => {}}
      onRate={() => {}}
    />,
  );
};

const call: TraceEvent = {
  role: 'assistant',
  content: null,
  tool_calls: [
    { id: 'a', type: 'function', function: { name: 'get_user', arguments: { id: 'u1' } } },
    { id: 'b', type: 'function', function: { name: 'cancel_reservation', arguments: { reservation_id: 'GV1N64', flags: { refund: true } } } },
  ],
};

describe('tool calls', () => {
  it('marks a whole tool call that a violation names', () => {
    const out = card(call, [{ address: 'messages.0.tool_calls.1', message: 'violation: cancel called' }], 'h0');
    expect(out).toContain('<div class="tool-call hl hl-analyzer hl-current" title="violation: cancel called" data-hl="h0" id="call-b"');
    expect(out).toContain('<div class="tool-call" id="call-a"');
    expect(out).toContain('class="call-flag flag-analyzer"');
  });
  it('marks an arguments object and a value inside it', () => {
    const out = card(call, [
      { address: 'messages.0.tool_calls.1.function.arguments', message: 'args' },
      { address: 'messages.0.tool_calls.1.function.arguments.flags', message: 'flags' },
      { address: 'messages.0.tool_calls.1.function.arguments.flags.refund', message: 'refund' },
    ]);
    expect(out).toContain('<div class="arg-obj hl hl-analyzer" title="args" data-hl="h0">');
    expect(out).toContain('<div class="arg-obj hl hl-analyzer" title="flags" data-hl="h1">');
    expect(out).toContain('<span class="arg-lit tk-num hl hl-analyzer" title="refund" data-hl="h2">true</span>');
  });
});

describe('images', () => {
  it("shows Invariant's local_base64_img content as the image, with its boxes", () => {
    const e = { role: 'tool', content: 'local_base64_img: iVBORw0KGgoAAAANSUhEUg==' };
    const out = card(e, [{ address: 'messages.0.content:bbox-0.1,0.2,0.5,0.6', message: 'box' }]);
    expect(out).toContain('<div class="img-part" data-f="messages.0.content"><img src="data:image/png;base64,iVBORw0KGgoAAAANSUhEUg=="');
    expect(out).toContain('class="bbox hl-analyzer" title="box" style="left:10%;top:20%;width:40%;height:40%;"');
    expect(out).not.toContain('iVBORw0KGgoAAAANSUhEUg==</');
  });
});

describe('read-only', () => {
  it('has no comment or rating controls for a reader who may not write', () => {
    const e = { role: 'user', content: 'hello' };
    expect(card(e)).toContain('class="small comment-event"');
    const ro = card(e, [], null, false);
    expect(ro).not.toMatch(/comment-event|class="small rate/);
    expect(ro).toContain('toggle-raw');
  });
});
