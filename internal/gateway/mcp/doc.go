// Package mcp puts Lookout between an MCP client and an MCP server: it
// relays JSON-RPC messages both ways, records tool calls and their results
// as trace events, and refuses what the dataset's guardrails block.
//
// The parts:
//
//   - jsonrpc.go reads one JSON-RPC message or batch (a stdio line or an
//     HTTP body) strictly enough that what Lookout checks is what the other
//     side will read: exact keys, the last of duplicate keys, ids compared
//     by value.
//   - events.go maps MCP to the canonical model: a tools/call request is an
//     assistant event with one tool call, its result a tool event, a
//     tools/list result an Invariant tools event {"tools": [...]}.
//   - session.go is one client session: it sends each mapped event to a
//     Stepper (Lookout's POST /api/v1/gateway/{dataset}/steps, or the same
//     logic in process) before the message goes on, and answers a JSON-RPC
//     error instead when the step is blocked.
//   - stdio.go relays newline-delimited messages between a client and a
//     server process (`lookout mcp`); http.go proxies Streamable HTTP
//     servers (the server's /api/v1/gateway/mcp route), JSON and SSE.
package mcp
