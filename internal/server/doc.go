// Package server is Lookout's HTTP API over any store.Store: datasets,
// traces, annotations, search, the Invariant-compatible push and guardrails
// endpoints, OTLP/HTTP, policies, evaluation, benchmarks, the gateway, API
// keys and login sessions, and the embedded explorer UI. See DESIGN.md,
// "HTTP API", and the README for each route's details. JSON in and out.
//
// The routes, as registered in routes (server.go); TestDocListsEveryRoute
// keeps this list equal to them ("*" is any method). The explorer's pages
// and assets (uiPages, ui.go) are served beside them.
//
//	POST   /api/v1/login                               {name, password} → session cookie (HttpOnly, SameSite=Strict)
//	POST   /api/v1/logout                              end the session
//	GET    /api/v1/me                                  who the caller is, and whether the server is in local mode
//	GET    /api/v1/backlog                             work accepted and not finished: traces queued for the search index
//	                                                   (queued, lag_seconds, catch_up_seconds), traces pending from spans
//	GET    /healthz                                    {status: "ok"} while the process serves (no authentication)
//	GET    /readyz                                     {status: "ready"} when the database answers, else 503 with Retry-After
//	                                                   (no authentication; for load balancers' readiness probes)
//	POST   /api/v1/keys                                {name?} → a new API key, shown this once
//	GET    /api/v1/keys                                the caller's keys (last four characters only)
//	DELETE /api/v1/keys/{id}                           revoke a key
//	POST   /api/v1/push/trace                          Invariant's push API: {messages, annotations?, dataset?, metadata?} → {id: [...], dataset?}
//	                                                   (or {traces: [canonical...], dataset?}, which Lookout's client sends)
//	POST   /v1/traces                                  OTLP/HTTP spans (protobuf or JSON), built into traces after the answer
//	POST   /api/v1/datasets                            {name, public?, metadata?} → the dataset
//	GET    /api/v1/datasets                            the caller's datasets and every public one (?name= ?owner= ?mine=true)
//	GET    /api/v1/datasets/{id}                       one dataset
//	PATCH  /api/v1/datasets/{id}                       {public} shares it read-only or makes it private (owner only)
//	DELETE /api/v1/datasets/{id}                       delete it with its traces, annotations and policies
//	GET    /api/v1/datasets/{id}/metadata              its metadata object
//	PUT    /api/v1/datasets/{id}/metadata              merge an object into it (?mode=replace to replace)
//	POST   /api/v1/datasets/{id}/upload                import a file in any readable format (raw body or multipart "file";
//	                                                   ?mode=all-or-nothing|skip-invalid ?format= ?filename=; SSE progress
//	                                                   with Accept: text/event-stream)
//	GET    /api/v1/datasets/{id}/traces                its traces by index, a page at a time (?limit= ?cursor=)
//	GET    /api/v1/datasets/{id}/export                the dataset as JSONL (?format=invariant|canonical)
//	GET    /api/v1/datasets/{id}/dashboard             its figures over ?from= ?to= (RFC 3339, empty: its first or last
//	                                                   trace): traces, tokens and cost by time bucket and by model,
//	                                                   duration and model-call latency percentiles, violations by
//	                                                   policy, pass rate by criterion, tool calls and errors by tool
//	GET    /api/v1/datasets/{id}/totals                its traces, tokens in and out and cost (?from= ?to= as above)
//	GET    /api/v1/datasets/{id}/search                search its traces (?q= ?cursor= ?limit= ?count_cap=)
//	GET    /api/v1/traces/{id}/hits                    where a query matches in one trace (?q=)
//	GET    /api/v1/traces/{id}                         one trace as canonical JSON (?format=invariant; ?usage=1 adds
//	                                                   its tokens, cost, duration and each span's usage: usage.go)
//	GET    /api/v1/traces/{id}/download                the same as a file to save
//	GET    /api/v1/traces/{id}/events                  a slice of its events (?offset= ?limit=)
//	GET    /api/v1/traces/{id}/live                    server-sent events when the trace changes
//	POST   /api/v1/traces/{id}/events                  append events to a live trace
//	DELETE /api/v1/traces/{id}                         delete a trace
//	GET    /api/v1/traces/{id}/annotations             its annotations
//	POST   /api/v1/traces/{id}/annotations             {address, content, source?, extra?} → the annotation
//	PUT    /api/v1/traces/{id}/annotations             replace every annotation of ?source= at once: {annotations: [...]}
//	PUT    /api/v1/traces/{id}/annotations/{aid}       {content?, extra?} → the annotation
//	DELETE /api/v1/traces/{id}/annotations/{aid}       delete an annotation
//	POST   /api/v1/policy/check                        Invariant's guardrails API: {policy, messages, parameters?} → {errors}
//	POST   /api/v1/policy/check/batch                  {messages, policies, parameters?} → {result: [{errors}...]}, one per policy
//	POST   /api/v1/policy/load                         {policy} → {success, rules}, or 422 with the diagnostics
//	GET    /api/v1/datasets/{id}/policies              the dataset's saved policies
//	POST   /api/v1/datasets/{id}/policies              save {name, source, mode?}
//	GET    /api/v1/datasets/{id}/policies/{pid}        one saved policy
//	PUT    /api/v1/datasets/{id}/policies/{pid}        change {name?, source?, mode?}
//	DELETE /api/v1/datasets/{id}/policies/{pid}        delete it
//	POST   /api/v1/datasets/{id}/policies/{pid}/check  check every trace of the dataset, streaming server-sent events
//	GET    /api/v1/traces/{id}/scores                  its scores (?criterion= ?history=true)
//	POST   /api/v1/traces/{id}/scores                  {criterion, value, address?, comment?, source?, extra?} → the score
//	DELETE /api/v1/traces/{id}/scores/{sid}            delete a score (the version before becomes current)
//	GET    /api/v1/datasets/{id}/scores                a dataset's scores (?criterion= ?history=true)
//	GET    /api/v1/datasets/{id}/criteria              its saved criteria
//	POST   /api/v1/datasets/{id}/criteria              save a criterion
//	DELETE /api/v1/datasets/{id}/criteria/{cid}        delete a criterion
//	GET    /api/v1/datasets/{id}/eval/status           each trace's status per criterion, and the runs going on
//	POST   /api/v1/datasets/{id}/eval/runs             start an evaluation run {name?, criteria?}
//	GET    /api/v1/datasets/{id}/eval/runs             the dataset's runs, newest first
//	GET    /api/v1/eval/runs/{rid}                     a run with its progress and summary
//	GET    /api/v1/eval/runs/{rid}/events              server-sent progress events, then done with the run
//	POST   /api/v1/eval/runs/{rid}/cancel              cancel a run
//	GET    /api/v1/eval/runs/{rid}/compare/{other}     the scores that changed between two runs
//	*      /api/v1/gateway/                            the gateway: LLM providers' APIs and MCP steps behind Lookout,
//	                                                   under /api/v1/gateway/{dataset}/...
//	POST   /api/v1/benchmarks                          a new version of a benchmark, with its tasks
//	GET    /api/v1/benchmarks                          the caller's benchmarks and the public ones, newest first
//	GET    /api/v1/benchmarks/{id}                     one version with its criteria and tasks
//	DELETE /api/v1/benchmarks/{id}                     delete it with its results (owner only)
//	POST   /api/v1/benchmarks/{id}/runs                score a dataset against it (server-sent progress with Accept: text/event-stream)
//	GET    /api/v1/benchmarks/{id}/leaderboard         its results, best first
//
// A trace list's rows (GET /datasets/{id}/traces, and /search's with
// "hits" and "snippet") carry no trace content: {"id", "index", "name"?,
// "metadata"?, "event_count", "annotation_count", "violation_count"
// (annotations with source "analyzer": policy results), "tool_call_count",
// "first_user"? (the first user message's text, at most 200 UTF-16 code
// units), "input_tokens"?, "output_tokens"?, "total_tokens"?, "cost"?
// (US dollars: recorded by the source, or priced from the server's table,
// then "cost_estimated": true), "unpriced_spans"? (spans with tokens and no
// price), "duration_ms"? (first span start to last span end, else first to
// last event timestamp), "created_at"}. The counts of annotations and
// violations are counted when read; the rest is computed when the trace is
// written and kept up to date by appends. A search row's "snippet" is
// {"before", "match", "after"}: its first hit with up to 40 code points of
// text before and 60 after, when the hit is in a string.
//
// Errors are {"error": {"code", "message", "details"}}: 400 invalid_json
// (details: line, col, path) or bad_request, 401 unauthorized, 403
// forbidden, 404 not_found (also for another user's private data), 405,
// 409 conflict, 413 body_too_large, 415, 422 invalid (details.errors lists
// every problem of a rejected upload), 500 internal.
package server
