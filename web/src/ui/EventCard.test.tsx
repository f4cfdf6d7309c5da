import { render } from 'preact-render-to-string';
import { describe, expect, it } from 'vitest';
import { HighlightIndex, resolveHighlights } from '../lib/highlight';
import type { TraceEvent } from '../lib/types';
import { EventCard } from './EventCard';

const card = (e: TraceEvent, marks: { address: string; message: string }[] = [], current: string | null = null) => {
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
