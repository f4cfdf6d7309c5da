// An agent loop with the official @google/genai SDK (generateContent and
// generateContentStream): the model asks for functions, the agent runs them
// and sends the responses back, until the model answers with text. Prints a
// JSON summary (common.mjs).
import { GoogleGenAI } from '@google/genai';
import { config, tools, runTool, summary, newCall, errorInfo, print } from './common.mjs';

const cfg = config('gemini-2.5-flash');
const ai = new GoogleGenAI({
  apiKey: cfg.apiKey,
  httpOptions: { baseUrl: cfg.baseURL, headers: cfg.headers, timeout: 30_000, retryOptions: { attempts: 1 } },
});
const genConfig = {
  systemInstruction: cfg.system,
  tools: [{ functionDeclarations: tools.map((t) => ({ name: t.name, description: t.description, parameters: t.parameters })) }],
};
const contents = [{ role: 'user', parts: [{ text: cfg.prompt }] }];
const out = summary('gemini', cfg);
let call = null;
try {
  for (let turn = 0; turn < cfg.maxTurns; turn++) {
    const params = { model: cfg.model, contents: structuredClone(contents), config: genConfig };
    call = newCall(out, params);
    let parts = [];
    let last;
    if (cfg.stream) {
      const stream = await ai.models.generateContentStream(params);
      for await (const chunk of stream) {
        call.chunks++;
        last = chunk;
        for (const p of chunk.candidates?.[0]?.content?.parts ?? []) {
          if (p.text) call.text_deltas.push(p.text);
          if (p.functionCall) call.tool_call_chunks++;
          parts.push(p);
        }
      }
    } else {
      last = await ai.models.generateContent(params);
      parts = last.candidates?.[0]?.content?.parts ?? [];
    }
    const text = parts.filter((p) => typeof p.text === 'string').map((p) => p.text).join('');
    const fcalls = parts.filter((p) => p.functionCall).map((p) => p.functionCall);
    call.response = {
      id: last?.responseId ?? null,
      model: last?.modelVersion ?? null,
      text,
      tool_calls: fcalls.map((fc) => ({ id: fc.id ?? null, name: fc.name, arguments: JSON.stringify(fc.args ?? {}) })),
      finish_reason: last?.candidates?.[0]?.finishReason ?? null,
      usage: { input_tokens: last?.usageMetadata?.promptTokenCount ?? null, output_tokens: last?.usageMetadata?.candidatesTokenCount ?? null },
    };
    const modelParts = [];
    if (text) modelParts.push({ text });
    for (const fc of fcalls) modelParts.push({ functionCall: fc });
    contents.push({ role: 'model', parts: modelParts });
    if (!fcalls.length) {
      out.final_text = text;
      break;
    }
    const responses = [];
    for (const fc of fcalls) {
      const output = runTool(fc.name, fc.args ?? {});
      out.tool_outputs.push({ id: fc.id ?? null, name: fc.name, output });
      const fr = { name: fc.name, response: JSON.parse(output) };
      if (fc.id) fr.id = fc.id;
      responses.push({ functionResponse: fr });
    }
    contents.push({ role: 'user', parts: responses });
  }
} catch (e) {
  out.error = errorInfo(e, call);
}
print(out);
