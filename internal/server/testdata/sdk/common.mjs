// Shared by the agent scripts: configuration from the environment, the
// local tools the agent runs, and the JSON summary printed on stdout.
//
// Environment:
//   LOOKOUT_SDK_BASE_URL   the SDK's base URL (required)
//   LOOKOUT_SDK_API_KEY    the provider key as the SDK sends it (required)
//   LOOKOUT_SDK_MODEL      the model (default per provider)
//   LOOKOUT_SDK_STREAM     "1": stream every call
//   LOOKOUT_SDK_HEADERS    a JSON object of extra headers on every request
//   LOOKOUT_SDK_PROMPT     the user's message
//   LOOKOUT_SDK_SYSTEM     the system prompt
//   LOOKOUT_SDK_MAX_TURNS  model calls at most (default 4)

export function config(defaultModel) {
  const e = process.env;
  for (const name of ['LOOKOUT_SDK_BASE_URL', 'LOOKOUT_SDK_API_KEY']) {
    if (!e[name]) {
      process.stderr.write(`${name} is required\n`);
      process.exit(2);
    }
  }
  let headers = {};
  if (e.LOOKOUT_SDK_HEADERS) {
    headers = JSON.parse(e.LOOKOUT_SDK_HEADERS);
  }
  return {
    baseURL: e.LOOKOUT_SDK_BASE_URL,
    apiKey: e.LOOKOUT_SDK_API_KEY,
    model: e.LOOKOUT_SDK_MODEL || defaultModel,
    stream: e.LOOKOUT_SDK_STREAM === '1',
    headers,
    prompt: e.LOOKOUT_SDK_PROMPT || "What's the weather in Paris?",
    system: e.LOOKOUT_SDK_SYSTEM || 'You are a helpful assistant. Use the tools when they help.',
    maxTurns: Number(e.LOOKOUT_SDK_MAX_TURNS || 4),
  };
}

// The tools the agent offers, as JSON Schema.
export const tools = [
  {
    name: 'get_weather',
    description: 'The current weather in a city.',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string', description: 'The city, e.g. Paris' } },
      required: ['city'],
    },
  },
  {
    name: 'get_time',
    description: 'The current local time in an IANA time zone.',
    parameters: {
      type: 'object',
      properties: { timezone: { type: 'string', description: 'e.g. Europe/Paris' } },
      required: ['timezone'],
    },
  },
];

// runTool runs a tool locally; its output is deterministic and repeats the
// arguments, so a test can see they arrived intact.
export function runTool(name, args) {
  switch (name) {
    case 'get_weather':
      return JSON.stringify({ city: args.city, temperature_c: 18, conditions: 'cloudy' });
    case 'get_time':
      return JSON.stringify({ timezone: args.timezone, time: '14:05' });
    default:
      return JSON.stringify({ error: `unknown tool ${name}` });
  }
}

// summary is what a script prints: every model call with the request the
// SDK was given and the answer it returned, the tool outputs the agent
// sent back, the final text, and the error that ended the run, if any.
export function summary(provider, cfg) {
  return { provider, stream: cfg.stream, calls: [], tool_outputs: [], final_text: null, error: null };
}

// newCall records one model call; chunks counts streamed events,
// text_deltas are the streamed text pieces in order, tool_call_chunks the
// streamed events that carried part of a tool call.
export function newCall(out, request) {
  const call = { request, response: null, chunks: 0, text_deltas: [], tool_call_chunks: 0 };
  out.calls.push(call);
  return call;
}

// errorInfo describes an error the SDK raised: its class, HTTP status and
// message, and whether it came while a stream was being read.
export function errorInfo(e, call) {
  return {
    name: e?.constructor?.name ?? 'Error',
    status: typeof e?.status === 'number' ? e.status : null,
    message: String(e?.message ?? e),
    during_stream: !!call && call.chunks > 0,
  };
}

export function print(out) {
  process.stdout.write(JSON.stringify(out) + '\n');
}
