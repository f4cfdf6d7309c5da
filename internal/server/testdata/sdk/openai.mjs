// An agent loop with the official openai SDK (Chat Completions): the model
// asks for tools, the agent runs them and sends the outputs back, until the
// model answers with text. Prints a JSON summary (common.mjs).
import OpenAI from 'openai';
import { config, tools, runTool, summary, newCall, errorInfo, print } from './common.mjs';

const cfg = config('gpt-4o-mini');
const client = new OpenAI({
  apiKey: cfg.apiKey,
  baseURL: cfg.baseURL,
  defaultHeaders: cfg.headers,
  maxRetries: 0,
  timeout: 30_000,
});
const toolDefs = tools.map((t) => ({
  type: 'function',
  function: { name: t.name, description: t.description, parameters: t.parameters },
}));
const messages = [
  { role: 'system', content: cfg.system },
  { role: 'user', content: cfg.prompt },
];
const out = summary('openai', cfg);
let call = null;
try {
  for (let turn = 0; turn < cfg.maxTurns; turn++) {
    const params = { model: cfg.model, messages: structuredClone(messages), tools: toolDefs };
    let completion;
    if (cfg.stream) {
      const streamed = { ...params, stream: true, stream_options: { include_usage: true } };
      call = newCall(out, streamed);
      const stream = client.chat.completions.stream(streamed);
      for await (const chunk of stream) {
        call.chunks++;
        const delta = chunk.choices[0]?.delta;
        if (delta?.content) call.text_deltas.push(delta.content);
        if (delta?.tool_calls?.length) call.tool_call_chunks++;
      }
      completion = await stream.finalChatCompletion();
    } else {
      call = newCall(out, params);
      completion = await client.chat.completions.create(params);
    }
    const choice = completion.choices[0];
    const msg = choice.message;
    const toolCalls = msg.tool_calls ?? [];
    call.response = {
      id: completion.id,
      model: completion.model,
      text: msg.content ?? '',
      tool_calls: toolCalls.map((tc) => ({ id: tc.id, name: tc.function.name, arguments: tc.function.arguments })),
      finish_reason: choice.finish_reason,
      usage: { input_tokens: completion.usage?.prompt_tokens ?? null, output_tokens: completion.usage?.completion_tokens ?? null },
    };
    const assistant = { role: 'assistant', content: msg.content ?? null };
    if (toolCalls.length) {
      assistant.tool_calls = toolCalls.map((tc) => ({
        id: tc.id,
        type: 'function',
        function: { name: tc.function.name, arguments: tc.function.arguments },
      }));
    }
    messages.push(assistant);
    if (!toolCalls.length) {
      out.final_text = msg.content ?? '';
      break;
    }
    for (const tc of toolCalls) {
      const output = runTool(tc.function.name, JSON.parse(tc.function.arguments));
      out.tool_outputs.push({ id: tc.id, name: tc.function.name, output });
      messages.push({ role: 'tool', tool_call_id: tc.id, content: output });
    }
  }
} catch (e) {
  out.error = errorInfo(e, call);
}
print(out);
