// A real MCP client (@modelcontextprotocol/sdk) for cmd/lookout's MCP
// gateway tests. It connects as the spec in argv[2] says, runs its steps in
// order and prints one JSON object: {"results": [...], "server": {...}}.
//
// spec: {"transport": "stdio", "command", "args", "env"?}
//    or {"transport": "http", "url", "headers"?}
//   and "steps": [{"op": "list"} | {"op": "call", "name", "arguments"} |
//                 {"op": "ping"} | {"op": "resources"}]
// Each result is {"ok": <the SDK's answer>} or {"error": {code, message,
// data}}. Sampling requests of the server are answered with "sampled: "
// and the request's first text.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CreateMessageRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const spec = JSON.parse(process.argv[2]);

const client = new Client(
  { name: "lookout-test-client", version: "1.0.0" },
  { capabilities: { sampling: {} } },
);
client.setRequestHandler(CreateMessageRequestSchema, async (req) => ({
  model: "test-model",
  role: "assistant",
  content: { type: "text", text: "sampled: " + req.params.messages[0].content.text },
}));

let transport;
if (spec.transport === "stdio") {
  transport = new StdioClientTransport({
    command: spec.command,
    args: spec.args,
    env: { ...process.env, ...(spec.env || {}) },
    stderr: "inherit",
  });
} else {
  transport = new StreamableHTTPClientTransport(new URL(spec.url), {
    requestInit: { headers: spec.headers || {} },
  });
}

const timeout = { timeout: 30000 };
await client.connect(transport, timeout);
const results = [];
for (const step of spec.steps) {
  try {
    let r;
    switch (step.op) {
      case "list":
        r = await client.listTools(undefined, timeout);
        break;
      case "call":
        r = await client.callTool({ name: step.name, arguments: step.arguments }, undefined, timeout);
        break;
      case "ping":
        r = await client.ping(timeout);
        break;
      case "resources":
        r = await client.listResources(undefined, timeout);
        break;
      default:
        throw new Error("unknown op " + step.op);
    }
    results.push({ ok: r });
  } catch (e) {
    results.push({ error: { code: e.code, message: e.message, data: e.data } });
  }
}
const server = client.getServerVersion();
const sessionId = transport.sessionId;
if (spec.transport !== "stdio") {
  await transport.terminateSession();
}
await client.close();
process.stdout.write(JSON.stringify({ results, server, sessionId }) + "\n");
