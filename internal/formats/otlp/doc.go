// Package otlp maps OpenTelemetry spans to canonical traces, and reads the
// files that hold such spans.
//
// # The core: Map
//
// Whatever the source, spans are first made neutral Span values, then Map
// (or MapTrace for one trace) groups them by trace id and maps each group
// to one canonical trace. The sources:
//
//	OTLP protobuf (receivers)        FromResourceSpans(req.ResourceSpans) → []Span
//	OTLP/JSON (receivers, files)     ParseJSON(body) → []Span
//	files                            NewDecoder(r, file): OTLP/JSON export files, SDK span
//	                                 dumps, Langfuse trace exports (format "otel")
//
// Map is pure: a receiver that assembles a trace from spans arriving in
// several requests maps each span once on its own (MapSpans: its kind,
// canonical form and chat view), keeps it in Mapped's binary form
// (deduplicated by span id), and makes the trace of all of them again
// (AssembleTrace: the tree and the events); the result is Map's, and does
// not depend on the order the spans came in, except for spans with equal
// start times, which keep their input order.
//
// # Spans
//
//	| canonical span   | OTLP (protobuf and JSON)           | SDK dump (any-agent, console exporter)  | Langfuse observation         |
//	|------------------|------------------------------------|-----------------------------------------|------------------------------|
//	| id               | spanId: 16 hex digits, lower case  | context.span_id: an integer (math/big,  | id                           |
//	|                  | (JSON: hex, not base64)            | exact) or "0x" hex → 16 hex digits      |                              |
//	| parent_id        | parentSpanId ("" = root)           | parent.span_id or parent_id (null=root) | parentObservationId          |
//	| trace id         | traceId: 32 hex digits             | context.trace_id: 128-bit integer or    | trace.id (observations'      |
//	|                  |                                    | hex → 32 hex digits                     | traceId must agree)          |
//	| name             | name                               | name                                    | name                         |
//	| kind             | the semantic kind (below)          | the same                                | the same                     |
//	| start/end_time   | start/endTimeUnixNano (0 = none)   | start/end_time: ns integer or ISO text  | startTime, endTime           |
//	| status           | status.code: OK, ERROR; unset = "" | status.status_code ("ok", "unset", ...) | ERROR when level is ERROR    |
//	| status_message   | status.message                     | status.description                      | statusMessage (when ERROR)   |
//	| attributes       | attributes, verbatim, as a JSON    | attributes, verbatim                    | metadata.attributes (the     |
//	|                  | object (AnyValue → plain JSON;     |                                         | metadata string decoded)     |
//	|                  | bytes as base64; a repeated key    |                                         |                              |
//	|                  | keeps its first place, last value) |                                         |                              |
//	| inputs, outputs  | —                                  | —                                       | input, output (decoded one   |
//	|                  |                                    |                                         | level when JSON text)        |
//	| Extra span_kind  | kind: internal, server, client,    | kind ("SpanKind.INTERNAL", "internal")  | —                            |
//	|                  | producer, consumer                 |                                         |                              |
//	| Extra resource   | resource.attributes (object)       | resource.attributes                     | metadata.resourceAttributes  |
//	| Extra scope      | {name, version, attributes}        | instrumentation_scope                   | metadata.scope               |
//	| Extra events     | [{name, time, attributes}]         | events                                  | —                            |
//	| Extra links      | [{trace_id, span_id, attributes}]  | links                                   | —                            |
//	| Extra (others)   | trace_state                        | unknown members, as they are            | type, metadata (its other    |
//	|                  |                                    |                                         | members), level, model,      |
//	|                  |                                    |                                         | usageDetails, ... as they are|
//
// Resource and scope are kept on every span (not in trace metadata): a
// trace may span services, and a receiver can add spans without rewriting
// the trace. Tokens (gen_ai.usage.*, llm.token_count.*), model and cost stay
// in the span's attributes (and a Langfuse observation's usageDetails,
// costDetails and model in its Extra). Spans are ordered parents before
// children, siblings by start time then input order; a span whose parent is
// absent is an orphan root that keeps its parent_id.
//
// The trace: id = the trace id; name = the first root's name (Langfuse:
// trace.name); metadata = for a Langfuse export the trace object without its
// copy of the observations, for an SDK dump the members beside "spans"
// (any-agent's final_output), otherwise none; with session_id and user_id
// added when the spans name them and the metadata does not
// (trace.SessionKeys, trace.UserKeys): the first of the attributes
// session.id, gen_ai.conversation.id, langfuse.session.id (the session) and
// user.id, langfuse.user.id (the user) found on a span, spans in tree order,
// a span's attributes before its resource's.
//
// # Semantic kind
//
// The span's kind is the first of:
//
//	| attribute                       | kind                                                              |
//	|---------------------------------|-------------------------------------------------------------------|
//	| openinference.span.kind         | its value in upper case (LLM, TOOL, AGENT, CHAIN, RETRIEVER, ...) |
//	| gen_ai.operation.name           | chat, text_completion, generate_content, completion, call_llm:    |
//	|                                 | LLM; execute_tool: TOOL; invoke_agent, create_agent: AGENT;       |
//	|                                 | embeddings: EMBEDDING; chain: CHAIN                               |
//	| mlflow.spanType                 | CHAT_MODEL and LLM: LLM; others as written                        |
//	| langsmith.span.kind             | in upper case                                                     |
//	| traceloop.span.kind             | tool: TOOL; agent: AGENT; workflow, task: CHAIN                   |
//	| llm.request.type                | chat, completion: LLM; embedding: EMBEDDING                       |
//	| ai.operationId (Vercel AI SDK)  | ai.toolCall: TOOL; ai.embed*: EMBEDDING; ai.generate*, ai.stream*:|
//	|                                 | LLM                                                               |
//	| the source's type (Langfuse)    | GENERATION: LLM; TOOL, AGENT, CHAIN, ... as written               |
//	| message attributes present      | LLM (gen_ai.input/output.messages, gen_ai.prompt.N.*,             |
//	|                                 | gen_ai.completion.N.*, llm.input_messages.N.*)                    |
//	| gen_ai.tool.name with a call id | TOOL                                                              |
//	|   or arguments                  |                                                                   |
//
// # Chat view of a span
//
// Every span has a chat view: its input and output as messages. The input
// is read from the first source present, in this order:
//
//	gen_ai.input.messages (GenAI messages: {role, parts: [{type: text, content} | {type: tool_call, id,
//	    name, arguments} | {type: tool_call_response, id, response}]}, or OpenAI-shaped messages)
//	llm.input_messages.<i>.message.{role, content, contents.<j>.message_content.{type, text, image},
//	    tool_calls.<k>.tool_call.{id, function.name, function.arguments}, tool_call_id, name}  (OpenInference)
//	gen_ai.prompt.<i>.{role, content, tool_calls.<k>.{id, name, arguments}, tool_call_id}  (older GenAI, OpenLLMetry)
//	gen_ai.prompt, mlflow.spanInputs, ai.prompt.messages, ai.prompt (JSON text holding messages)
//	span events gen_ai.system.message, gen_ai.user.message, gen_ai.assistant.message, gen_ai.tool.message
//	the "events" attribute (pydantic-ai: those events' bodies as one JSON list)
//	input.value, else the source's input (Langfuse): messages when a message shape fits
//
// and the output likewise from gen_ai.output.messages, llm.output_messages.*,
// gen_ai.completion.<i>.*, gen_ai.completion, mlflow.spanOutputs,
// ai.response.text + ai.response.toolCalls, gen_ai.choice span events, the
// choices in "events", any-agent's gen_ai.output (with gen_ai.output.type
// "json", a list of {tool.name, tool.args} is the model's tool calls, any
// other value its answer as text), pydantic_ai.all_messages or
// all_messages_events, then output.value, else the source's output.
// gen_ai.system_instructions (a list of parts, or text) is put first as a
// system message unless the input has a system or developer message.
//
// Message shapes read from a payload (JSON, or JSON text in a string):
//
//	| shape                                                   | messages                                                 |
//	|---------------------------------------------------------|----------------------------------------------------------|
//	| a list of messages {role, content, tool_calls,          | one each (content: text, or a list of parts kept as      |
//	|   tool_call_id, name}                                   | parts; tool_calls in the OpenAI shape, or flat {id, name,|
//	|                                                         | arguments}, or LangChain {id, name, args})               |
//	| {role, parts} (GenAI, Gemini)                           | text parts: one becomes the content, several stay parts; |
//	|                                                         | tool_call and Gemini function_call parts: tool calls;    |
//	|                                                         | tool_call_response and function_response parts: a tool   |
//	|                                                         | message each (tool_call_id = the part's id; a list of    |
//	|                                                         | ids, as Microsoft's Agent Framework writes, gives its    |
//	|                                                         | last); other parts kept as they are                      |
//	| Anthropic content blocks; Vercel AI SDK parts           | text blocks stay parts; tool_use and tool-call: a tool   |
//	|                                                         | call; tool_result and tool-result: a tool message        |
//	| LangChain {type: human|ai|system|tool, content,         | role from type (human: user, ai: assistant); tool calls  |
//	|   additional_kwargs.tool_calls, tool_calls}, and the    | from tool_calls or additional_kwargs.tool_calls          |
//	|   serialized {lc, type: constructor, id, kwargs}        |                                                          |
//	| OpenAI Responses items (message, function_call,         | messages; consecutive function_calls join one assistant  |
//	|   function_call_output), {object: response, output}     | message; outputs are tool messages                       |
//	| {messages: [...]} (+ system: Vercel)                    | the messages                                             |
//	| Gemini {contents, config.system_instruction},           | system instruction first, then the contents (a string is |
//	|   {candidates: [{content}]}; ADK {new_message},         | a user message)                                          |
//	|   {content: {parts}}                                    |                                                          |
//	| {choices: [{message}]} (chat completion)                | the choices' messages                                    |
//	| {index, message} (gen_ai.choice)                        | the message                                              |
//	| {prompt, system?} (Vercel)                              | system and user messages                                 |
//	| [{toolCallId, toolName, input}] (Vercel)                | one assistant message with those tool calls              |
//	| {role: tool, content: {type: function, function}}       | dropped: a tool definition (Langfuse's LangChain handler)|
//
// Roles are normalised: model, ai → assistant; human → user; other roles
// stay as written. Tool-call arguments given as JSON text holding an object
// become the object; absent arguments are {}; other text stays text. A list
// with an element that is not a message is not messages. Plain text is
// messages only for an LLM span: its input text is a user message, its
// output text an assistant message.
//
// A TOOL span's view: input = an assistant tool call {id, name, arguments},
// output = the tool message {tool_call_id, content: the result as text}.
// name: gen_ai.tool.name, tool.name, ai.toolCall.name,
// mlflow.spanFunctionName, else the span name less "execute_tool "; id:
// gen_ai.tool.call.id, ai.toolCall.id, tool_call.id; arguments:
// gen_ai.tool.call.arguments, gen_ai.tool.args, ai.toolCall.args,
// tool_arguments, gcp.vertex.agent.tool_call_args, mlflow.spanInputs,
// input.value, the source's input ({"input": {...}} unwrapped), else
// tool.parameters; result: gen_ai.tool.call.result, gen_ai.output,
// ai.toolCall.result, tool_response, gcp.vertex.agent.tool_response,
// mlflow.spanOutputs, output.value, else the source's output. A result that
// is text stays that text; an MCP result {content: [blocks]} becomes its
// blocks; anything else its compact JSON.
//
// # Events
//
// The trace's events come from the views of model calls (LLM spans) and
// tool spans, in start-time order; every event carries the id of its span.
//
//   - A model call gives its input then its output, or its output alone
//     when the output repeats the input (the whole conversation). A
//     conversation prefix already emitted by an earlier model call is not
//     emitted again (agents resend the history on every call): messages are
//     compared by role, content, tool calls and tool_call_id, a tool message
//     with an id by role and id alone.
//   - A tool message of a prompt that repeats an output already emitted is
//     not emitted again: the same tool_call_id; without ids, a tool span's
//     output for a tool of the same name, or with the same text.
//   - A tool span answers the oldest unanswered tool call with its call id,
//     else with its name (unless both ids are given and differ): it emits
//     the tool output (none when the span has no result). A call the model
//     made without an id takes the tool span's call id (else its span id).
//     A tool span that answers no call emits an assistant tool call and its
//     output, or nothing when it has neither arguments nor a result.
//   - Nested model calls (an SDK wrapper around the provider call, one call
//     instrumented twice): the innermost ones whose view came from message
//     shapes give the events; a model call whose view is plain text gives
//     events only when no model call is around or inside it with messages.
//   - A trace without model calls takes its events from the outermost spans
//     whose views have messages, and from tool spans.
//
// # Files
//
// NewDecoder reads, one top-level JSON value after another (JSONL works):
//
//   - OTLP/JSON export requests {"resourceSpans": [...]} (also the proto's
//     snake_case names, and instrumentationLibrarySpans): ids are hex
//     strings (base64 ids are an error, not guessed), 64-bit integers
//     decimal strings or numbers, enums integers or names. A file's
//     requests are read whole before mapping, since spans of one trace may
//     sit in several requests; traces come out in the order their ids first
//     appear.
//   - SDK span dumps: {"spans": [...], ...} (any-agent; the other members
//     become the trace's metadata), a list of span objects, or span objects
//     one after another (the Python console exporter).
//   - Langfuse trace exports {"trace": {...}, "observations": [...]}, one
//     trace each. input, output and metadata may be JSON text or JSON;
//     trace.observations, a copy without input and output, is not read.
//
// A span or trace that breaks a rule is rejected with a recoverable
// *decoding.Error naming file, line, column and JSON path, and the rest of
// the file is read: an id of the wrong length or all zeros; a value of the
// wrong type; a missing trace or span id; and, from Map, a span id used
// twice in a trace, a parent chain that loops, an end before the start.
// All spans of a trace with a rejected span are rejected with it. JSON that
// does not parse is fatal.
//
// # Where the chat view differs from Langfuse's
//
// The corpus holds, for each Langfuse export, the chat view Langfuse's own
// converter made (*.chatml.json). TestLangfuseChatML compares every side
// (input, output) Langfuse could convert with this package's view, by role,
// content text and tool calls (id, name, arguments as JSON; Langfuse's
// "model" role read as assistant). 78 of 114 sides match; the others differ
// on purpose, for these reasons:
//
//	| reason               | sides | difference                                                                   |
//	|----------------------|-------|------------------------------------------------------------------------------|
//	| json                 | 10    | the payload is not a chat message (a crew result, a LangGraph node's state): |
//	|                      |       | Langfuse shows it as a role-less JSON entry, Lookout gives no message        |
//	| tool-output          | 10    | a tool span's result: Langfuse shows a role-less JSON entry, Lookout a tool  |
//	|                      |       | message (role tool, tool_call_id, the result as text)                        |
//	| beeai-text           | 4     | BeeAI messages {role, text}: Lookout reads text as the content, Langfuse     |
//	|                      |       | leaves it out of the content                                                 |
//	| system-instructions  | 3     | gen_ai.system_instructions: Lookout puts them first as a system message;     |
//	|                      |       | Langfuse shows the input messages alone                                      |
//	| agno-repr            | 2     | agno's input.value is Python repr text, of which Langfuse finds only the     |
//	|                      |       | tool list; Lookout reads llm.input_messages (where agno's instrumentation    |
//	|                      |       | leaves out the assistant's tool-call message)                                |
//	| anthropic-tool-use   | 2     | Anthropic tool_use blocks: Lookout makes them tool calls (rules see them),   |
//	|                      |       | Langfuse keeps them as content blocks                                        |
//	| openinference-system | 2     | OpenInference's llm.input_messages holds the agent's instructions as a       |
//	|                      |       | system message; Langfuse shows input.value, which does not                   |
//	| choice               | 2     | pydantic-ai's gen_ai.choice event {index, message}: Lookout reads the        |
//	|                      |       | message, Langfuse shows the event as JSON                                    |
//	| function-response    | 1     | Gemini function_response parts: Lookout makes them tool messages, Langfuse   |
//	|                      |       | user text                                                                    |
package otlp
