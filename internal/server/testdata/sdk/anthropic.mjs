// An agent loop with the official @anthropic-ai/sdk (Messages): the model
// asks for tools, the agent runs them and sends the results back, until the
// model answers with text. Prints a JSON summary (common.mjs).
import Anthropic from '@anthropic-ai/sdk';
import { config, tools, runTool, summary, newCall, errorInfo, print } from './common.mjs';

const cfg = config('claude-sonnet-4-5');
const client = new Anthropic({
  apiKey: cfg.apiKey,
  baseURL: cfg.baseURL,
  defaultHeaders: cfg.headers,
  maxRetries: 0,
  timeout: 30_000,
});
const toolDefs = tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.parameters }));
const messages = [{ role: 'user', content: cfg.prompt }];
const out = summary('anthropic', cfg);
let call = null;
try {
  for (let turn = 0; turn < cfg.maxTurns; turn++) {
    const params = { model: cfg.model, max_tokens: 1024, system: cfg.system, messages: structuredClone(messages), tools: toolDefs };
    let message;
    if (cfg.stream) {
      call = newCall(out, { ...params, stream: true });
      const stream = client.messages.stream(params);
      for await (const event of stream) {
        call.chunks++;
        if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') call.text_deltas.push(event.delta.text);
        if (event.type === 'content_block_delta' && event.delta.type === 'input_json_delta') call.tool_call_chunks++;
        if (event.type === 'content_block_start' && event.content_block.type === 'tool_use') call.tool_call_chunks++;
      }
      message = await stream.finalMessage();
    } else {
      call = newCall(out, params);
      message = await client.messages.create(params);
    }
    const text = message.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
    const uses = message.content.filter((b) => b.type === 'tool_use');
    call.response = {
      id: message.id,
      model: message.model,
      text,
      tool_calls: uses.map((b) => ({ id: b.id, name: b.name, arguments: JSON.stringify(b.input) })),
      finish_reason: message.stop_reason,
      usage: { input_tokens: message.usage.input_tokens, output_tokens: message.usage.output_tokens },
    };
    messages.push({
      role: 'assistant',
      content: message.content.map((b) =>
        b.type === 'tool_use' ? { type: 'tool_use', id: b.id, name: b.name, input: b.input } : { type: 'text', text: b.text },
      ),
    });
    if (!uses.length) {
      out.final_text = text;
      break;
    }
    const results = [];
    for (const b of uses) {
      const output = runTool(b.name, b.input);
      out.tool_outputs.push({ id: b.id, name: b.name, output });
      results.push({ type: 'tool_result', tool_use_id: b.id, content: output });
    }
    messages.push({ role: 'user', content: results });
  }
} catch (e) {
  out.error = errorInfo(e, call);
}
print(out);
