// Package gateway puts Lookout between an agent and its model provider or
// MCP server: every call is recorded as a trace of the canonical model and
// checked by the dataset's guardrails before it goes through.
//
// The parts, each with one job:
//
//   - Provider (openai.go, anthropic.go, gemini.go) speaks one LLM API: it
//     reads a request's conversation and a response's answer as canonical
//     events, assembles streamed answers event by event, and writes errors
//     in the API's own format. Providers are pure: no I/O.
//   - Guard (guard.go) checks events against a dataset's guardrails, each in
//     mode block or log, under one deadline: a policy that fails or runs out
//     of time fails closed when it blocks and open when it logs, and says so.
//   - Heads (heads.go) are hashes of a conversation's events so far, by which
//     the next call of the same conversation finds the trace it extends.
//   - Recorder (recorder.go) writes calls to the store off the request path,
//     in order per conversation.
//   - Proxy (proxy.go) is the HTTP flow: check the request, forward it,
//     stream or read the answer, check it, answer or block, record.
//
// The server (internal/server/gateway.go) resolves who calls and into which
// dataset, and hands the request to the proxy.
package gateway
