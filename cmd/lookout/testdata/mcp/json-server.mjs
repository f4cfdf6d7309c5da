// A stateless Streamable HTTP MCP server that answers in JSON (no event
// streams, no sessions), made with @modelcontextprotocol/sdk, for the MCP
// proxy's tests. Tools: "add" {a, b} and "note" {text}, which appends the
// text to the file NOTES_FILE (a side effect a test can see). It listens on
// 127.0.0.1:PORT at /mcp and prints "listening" to stderr when ready.
import { createServer } from "node:http";
import { appendFileSync } from "node:fs";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const tools = [
  {
    name: "add",
    description: "Adds two numbers",
    inputSchema: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } }, required: ["a", "b"] },
  },
  {
    name: "note",
    description: "Appends a note to the notes file",
    inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
  },
];

function mcpServer() {
  const server = new Server({ name: "json-test-server", version: "1.0.0" }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
  server.setRequestHandler(CallToolRequestSchema, async (req) => {
    const args = req.params.arguments || {};
    switch (req.params.name) {
      case "add":
        return { content: [{ type: "text", text: String(args.a + args.b) }], structuredContent: { sum: args.a + args.b } };
      case "note":
        appendFileSync(process.env.NOTES_FILE, args.text + "\n");
        return { content: [{ type: "text", text: "noted" }] };
    }
    return { content: [{ type: "text", text: "unknown tool " + req.params.name }], isError: true };
  });
  return server;
}

const http = createServer(async (req, res) => {
  if (req.url !== "/mcp" && req.url !== "/mcp/") {
    res.writeHead(404).end();
    return;
  }
  if (req.method !== "POST") {
    res.writeHead(405, { Allow: "POST" }).end();
    return;
  }
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
  // Stateless: a server and a transport per request.
  const server = mcpServer();
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  res.on("close", () => {
    transport.close();
    server.close();
  });
  await server.connect(transport);
  await transport.handleRequest(req, res, body);
});
http.listen(Number(process.env.PORT), "127.0.0.1", () => console.error("listening"));
