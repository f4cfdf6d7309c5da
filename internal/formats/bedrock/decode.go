// Package bedrock decodes AWS Bedrock agent (InvokeAgent) response streams
// into canonical traces. One top-level JSON value is one agent invocation is
// one trace; a file may hold several values one after another.
//
// # Inputs
//
// The SDK list, as boto3 yields the events (members beside the event itself,
// such as the "event_order" some code adds, are kept with the part):
//
//	[{"trace": {...}}, {"chunk": {"bytes": ...}}, {"returnControl": {...}}, ...]
//
// Decoded event-stream frames (a frame whose ":message-type" is "exception"
// or "error" is rejected with the exception it carries):
//
//	[{"headers": {":event-type": "trace"|"chunk"|"returnControl", ...}, "payload": {...}}, ...]
//
// The grouped form, keyed by traceId; when every part has an integer
// event_order the parts are put back in stream order by it, otherwise file
// order is kept:
//
//	{"<traceId>": [{"data": <step>, "event_order": n, "type": "<step name>"}, ...], ...}
//
// A fourth kind of SDK event, {"files": ...} (code interpreter output files),
// is accepted and kept on the root span. Any other event is an error.
//
// # Tree
//
// Trace parts are grouped by the traceId of the innermost step object
// (orchestrationTrace.rationale.traceId, guardrailTrace.traceId, ...), in
// stream order. The trace has one root span (id "root", kind "invocation")
// and, under it, one span per group whose id is the traceId (characters other
// than letters, digits, '-' and '_' become '_', and a clash gets a "-2",
// "-3", ... suffix) and whose kind is the phase: "pre-processing",
// "orchestration", "post-processing", "routing", "guardrail", "failure",
// "custom-orchestration", or "collaborator" when the part comes from a
// collaborator agent (it has a collaboratorName or a callerChain longer than
// one; the phase is then in the "phase" attribute). A returnControl event
// becomes a span of kind "return-control" (id "return-control-<invocationId>").
// Parts without a traceId share one group per phase ("<phase>-untraced").
// In the grouped form the phase is read from the prompt type of a
// modelInvocationInput (PRE_PROCESSING, ORCHESTRATION, ...), else from the
// traceId's suffix (-pre-, -post-, -routing-, -guardrail-), else it is
// orchestration.
//
// Span times are the earliest and latest eventTime of their parts (the root's
// over all parts); eventTime is ISO-8601 (RFC 3339, any number of fractional
// digits; a space instead of the 'T', as Python's str(datetime) writes it, is
// accepted too).
//
// Every span keeps its original parts, verbatim (compacted), in stream order,
// under Span.Extra "parts", so nothing is lost; chunk events are kept in the
// root span's Extra "chunks" and files events in "files". Attributes hold
// what rules and views need: on the root agentId, agentAliasId, agentVersion,
// sessionId, sessionIds (when the stream has more than one) and the summed
// inputTokens/outputTokens; on a group span traceId, model (foundationModel),
// inputTokens/outputTokens (metadata.usage summed over the group), and by
// phase: isValid and rationale (pre-processing parsedResponse), response
// (post-processing parsedResponse.text), action (guardrail: "INTERVENED" when
// any part of the group intervened, else the first action), failureReason and
// failureCode (failure; the span status is then "ERROR"), finalResponse (the
// observation's finalResponse.text), and for collaborator spans phase,
// collaboratorName, agentId, agentAliasId, sessionId.
//
// # Events
//
// Events follow stream order and carry the id of the span they come from.
//
//	| Bedrock                                                            | event                                                             |
//	|--------------------------------------------------------------------|-------------------------------------------------------------------|
//	| first top-level orchestration modelInvocationInput whose text is a | user message, placed first: the last "user" message of the        |
//	| JSON request {"messages": [...]}                                   | request, with Bedrock's "[{text=..., type=text}]" wrapping removed |
//	| top-level KB lookup before any top-level orchestration model call  | user message (Bedrock queried the KB with the input text as is)   |
//	| rationale.text                                                     | assistant message                                                 |
//	| invocationInput.actionGroupInvocationInput                         | assistant tool call <actionGroupName>__<apiPath or function>,     |
//	|                                                                    | arguments {name: value} from parameters and requestBody properties |
//	| invocationInput.knowledgeBaseLookupInput                           | tool call knowledge_base__<knowledgeBaseId>, arguments {query}     |
//	| invocationInput.agentCollaboratorInvocationInput                   | tool call collaborator__<agentCollaboratorName>, arguments {input} |
//	| invocationInput.codeInterpreterInvocationInput                     | tool call code_interpreter, arguments {code, files}               |
//	| returnControl invocationInputs (api / function)                    | tool calls <actionGroup>__<apiPath or function>, no output        |
//	| observation.actionGroupInvocationOutput.text                       | tool output                                                       |
//	| observation.knowledgeBaseLookupOutput.retrievedReferences          | tool output, content the JSON text of the references              |
//	| observation.agentCollaboratorInvocationOutput.output.text          | tool output                                                       |
//	| observation.codeInterpreterInvocationOutput                        | tool output: executionOutput, else executionError                  |
//	| top-level finalResponse.text / repromptResponse.text and the chunk | one final assistant message, last (see below)                     |
//	| text                                                               |                                                                   |
//
// Tool calls made right after a rationale (or after another call) of the
// same span join that assistant message, so parallel calls share one
// message; otherwise the message has null content. Tool call ids are
// "<traceId>-call-<n>", n counting from 0 in the group. An output answers
// the oldest unanswered call of the same kind in its group; an output with no
// such call is kept as a tool event without tool_call_id. Parameter values
// are kept as given (Bedrock sends them as strings). When an input was elided
// (no actionGroupName), the tool is named "action_group".
//
// The final message: the chunk text (base64-decoded, see below) is what the
// user received; finalResponse.text is what orchestration produced. When
// both exist and are equal, or only one exists, there is one final assistant
// message with that text in the span of the finalResponse. When they differ
// (post-processing rewrote the answer, a guardrail masked it), the final
// message holds the chunk text and belongs to the post-processing span whose
// response equals it, else to the root; the orchestration's text stays in
// that span's finalResponse attribute. Earlier top-level final responses, if
// a stream has several, become assistant messages where they occur.
// finalResponse observations of collaborators give no event (their answer is
// the collaborator tool output). Pre-processing, post-processing, routing,
// guardrail and failure parts give no events.
//
// Chunk bytes: when every chunk of the invocation is valid base64 and the
// decoded answer is valid UTF-8 (a character may be split between chunks),
// the chunks are decoded; otherwise each chunk is decoded alone when it is
// valid base64 of valid UTF-8 and taken as text when not. A chunk that is
// neither base64 nor text (control characters, invalid UTF-8) is an error.
//
// Trace.Metadata holds agentId, agentAliasId, agentVersion and sessionId of
// the top-level agent (first seen), sessionIds when the stream has several,
// and the attribution of the last chunk that has one. Trace.ID is the UUID
// that starts the first traceId of the top-level agent, when there is one.
package bedrock

import (
	"encoding/json"
	"errors"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/lookout-dev/lookout/internal/formats/decoding"
	"github.com/lookout-dev/lookout/internal/jsonscan"
	"github.com/lookout-dev/lookout/internal/trace"
)

// NewDecoder returns a streaming decoder over r; file names r in errors. An
// error inside one value is recoverable (the next value can still be read);
// a broken input is not.
func NewDecoder(r io.Reader, file string) decoding.Decoder {
	return decoding.NewPerValue(r, file, decodeValue, false)
}

// decodeValue decodes one invocation held in data (one JSON value). Errors
// are *jsonscan.Error values with the offset and JSON path; Next places them
// in the file as *decoding.Error.
func decodeValue(data []byte) (*trace.Trace, error) {
	p := &parser{}
	s := jsonscan.NewStrict(data)
	var err error
	switch s.Peek() {
	case jsonscan.Array:
		err = p.list(s)
	case jsonscan.Object:
		err = p.grouped(s)
	case jsonscan.Invalid:
		err = s.Expect(jsonscan.Array, "value")
	default:
		err = s.Errorf("a Bedrock agent event stream must be a JSON array of events or an object of event lists keyed by traceId, not %s", kindName(s.Peek()))
	}
	if err == nil {
		err = s.End()
	}
	if err != nil {
		return nil, err
	}
	if len(p.parts) == 0 {
		return nil, &jsonscan.Error{Offset: 0, Path: "$", Msg: "the event stream holds no events"}
	}
	if p.grouping && p.sortable {
		// Back in stream order before chunks are joined.
		sort.SliceStable(p.parts, func(i, j int) bool { return p.parts[i].order < p.parts[j].order })
	}
	p.decodeChunks()
	return build(p.parts), nil
}

func kindName(k jsonscan.Kind) string {
	switch k {
	case jsonscan.Array, jsonscan.Object:
		return "an " + k.String()
	case jsonscan.Null:
		return "null"
	}
	return "a " + k.String()
}

// partKind is the kind of one stream event.
type partKind uint8

const (
	kindTrace partKind = iota + 1
	kindChunk
	kindReturnControl
	kindFiles
)

// part is one event of the stream, parsed.
type part struct {
	kind partKind
	raw  []byte // the element verbatim; aliases the input until build copies it

	order    int64 // event_order, when hasOrder
	hasOrder bool

	// trace events
	agentID, aliasID, version, sessionID, collaborator string
	chainLen                                           int
	time                                               time.Time
	hasTime                                            bool
	phase                                              string // pre-processing, orchestration, ...
	stepName                                           string // modelInvocationInput, rationale, ... ("" for guardrail etc.)
	traceID                                            string
	hasTraceID                                         bool
	st                                                 step

	// chunk events
	chunk chunk

	// returnControl events
	invocationID string
	calls        []call
}

// topLevel reports whether the part comes from the invoked agent itself and
// not from a collaborator.
func (p *part) topLevel() bool { return p.collaborator == "" && p.chainLen <= 1 }

type chunk struct {
	text        string // the string as given
	decoded     []byte // base64 decoding of text, when b64
	b64         bool
	attribution json.RawMessage
}

// category is the kind of a tool call, used to pair calls with outputs.
type category uint8

const (
	catNone category = iota
	catAction
	catKB
	catCollaborator
	catCode
	numCategories
)

type call struct {
	cat  category
	name string
	args json.RawMessage
}

type output struct {
	cat     category
	content trace.Content
}

// step is what the decoder needs from one step object.
type step struct {
	// modelInvocationInput (textLit is the JSON string literal, aliasing the
	// input: prompts are large and only one is ever read) and KB lookups
	model, text, promptType string
	textLit                 []byte
	hasText                 bool
	// modelInvocationOutput
	inTok, outTok   int64
	hasUsage        bool
	isValid         json.RawMessage
	parsedRationale *string
	parsedText      *string
	// rationale
	rationale *string
	// invocationInput
	call *call
	// observation
	out   *output
	final *string // finalResponse.text or repromptResponse.text
	// guardrail, failure
	action        string
	failureReason *string
	failureCode   json.RawMessage
}

// parser collects the parts of one value.
type parser struct {
	parts    []part
	grouping bool // grouped form
	sortable bool // every part has an integer event_order
}

var phaseKeys = map[string]string{
	"preProcessingTrace":       "pre-processing",
	"orchestrationTrace":       "orchestration",
	"postProcessingTrace":      "post-processing",
	"routingClassifierTrace":   "routing",
	"guardrailTrace":           "guardrail",
	"failureTrace":             "failure",
	"customOrchestrationTrace": "custom-orchestration",
}

var stepNames = map[string]bool{
	"modelInvocationInput":  true,
	"modelInvocationOutput": true,
	"rationale":             true,
	"invocationInput":       true,
	"observation":           true,
}

// list reads the SDK list or the frame list.
func (p *parser) list(s *jsonscan.Scanner) error {
	return s.Array(func(int) error {
		if err := s.Expect(jsonscan.Object, "an event"); err != nil {
			return err
		}
		return p.element(s)
	})
}

// element reads one SDK event or one frame.
func (p *parser) element(s *jsonscan.Scanner) error {
	start := s.Offset()
	var pt part
	var seen []string
	var payStart, payEnd int
	hasPayload, hasHeaders, payloadRead := false, false, false
	var evType, msgType, excType, errCode, errMsg string
	err := s.Object(func(key string) error {
		switch key {
		case "trace", "chunk", "returnControl", "files":
			seen = append(seen, key)
			return p.payload(s, key, &pt)
		case "headers":
			hasHeaders = true
			if err := s.Expect(jsonscan.Object, "headers"); err != nil {
				return err
			}
			return s.Object(func(h string) error {
				var v *string
				switch h {
				case ":event-type":
					v = &evType
				case ":message-type":
					v = &msgType
				case ":exception-type":
					v = &excType
				case ":error-code":
					v = &errCode
				case ":error-message":
					v = &errMsg
				default:
					return s.Skip()
				}
				str, err := s.String("header " + h)
				*v = str
				return err
			})
		case "payload":
			hasPayload = true
			if err := s.Expect(jsonscan.Object, "payload"); err != nil {
				return err
			}
			payStart = s.Offset()
			if hasHeaders && frameKind(evType) && (msgType == "" || msgType == "event") {
				// Headers first, as the service writes them: read it now.
				payloadRead = true
				err := p.payload(s, evType, &pt)
				payEnd = s.Offset()
				return err
			}
			if err := s.Skip(); err != nil {
				return err
			}
			payEnd = s.Offset()
			return nil
		}
		return s.Skip()
	})
	if err != nil {
		return err
	}
	end := s.Offset()
	path := s.Path() // the element's: the scanner is back at its level
	switch {
	case len(seen) > 1:
		return &jsonscan.Error{Offset: start, Path: path, Msg: "an event must hold one of trace, chunk, returnControl or files, not " + strings.Join(seen, " and ")}
	case len(seen) == 1:
		if hasHeaders || hasPayload {
			return &jsonscan.Error{Offset: start, Path: path, Msg: "an event holds both a " + seen[0] + " member and a headers/payload frame"}
		}
	case hasHeaders || hasPayload:
		switch {
		case msgType == "exception":
			return &jsonscan.Error{Offset: start, Path: path, Msg: "the stream holds an exception event (" + nonEmpty(excType, evType, "unknown exception") + ")" + exceptionMessage(s.Data()[payStart:payEnd], hasPayload)}
		case msgType == "error":
			return &jsonscan.Error{Offset: start, Path: path, Msg: "the stream holds an error event (" + nonEmpty(errCode, "unknown error") + ")" + colonMsg(errMsg)}
		case !hasHeaders:
			return &jsonscan.Error{Offset: start, Path: path, Msg: `a frame with a "payload" needs "headers" with an ":event-type"`}
		case evType == "":
			return &jsonscan.Error{Offset: start, Path: path + ".headers", Msg: `frame headers have no ":event-type"`}
		case !hasPayload:
			return &jsonscan.Error{Offset: start, Path: path, Msg: `a frame needs a "payload" object`}
		}
		if !frameKind(evType) {
			return &jsonscan.Error{Offset: start, Path: path + `.headers[":event-type"]`, Msg: "a frame must be a trace, chunk, returnControl or files event, not " + quote(evType)}
		}
		if payloadRead {
			break
		}
		err := subScan(s.Data(), payStart, payEnd, path+".payload", func(sub *jsonscan.Scanner) error {
			return p.payload(sub, evType, &pt)
		})
		if err != nil {
			return err
		}
	default:
		return &jsonscan.Error{Offset: start, Path: path, Msg: "an event must hold a trace, chunk, returnControl or files member, or be a frame with headers and payload"}
	}
	pt.raw = s.Data()[start:end]
	p.parts = append(p.parts, pt)
	return nil
}

func frameKind(evType string) bool {
	switch evType {
	case "trace", "chunk", "returnControl", "files":
		return true
	}
	return false
}

func exceptionMessage(payload []byte, ok bool) string {
	if !ok {
		return ""
	}
	var m struct {
		Message  string `json:"message"`
		Message2 string `json:"Message"`
	}
	if json.Unmarshal(payload, &m) != nil {
		return ""
	}
	return colonMsg(nonEmpty(m.Message, m.Message2))
}

func colonMsg(s string) string {
	if s == "" {
		return ""
	}
	return ": " + s
}

func nonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// payload reads the value of a trace, chunk, returnControl or files event.
func (p *parser) payload(s *jsonscan.Scanner, kind string, pt *part) error {
	if err := s.Expect(jsonscan.Object, kind); err != nil {
		return err
	}
	switch kind {
	case "trace":
		pt.kind = kindTrace
		return tracePayload(s, pt)
	case "chunk":
		pt.kind = kindChunk
		return chunkPayload(s, pt)
	case "returnControl":
		pt.kind = kindReturnControl
		return returnControl(s, pt)
	}
	pt.kind = kindFiles
	return s.Skip()
}

// subScan parses data[start:end] (a value already validated by s) with fn,
// reporting errors at their place in the whole value under root.
func subScan(data []byte, start, end int, root string, fn func(*jsonscan.Scanner) error) error {
	sub := jsonscan.NewStrict(data[start:end])
	sub.SetRoot(root)
	err := fn(sub)
	var se *jsonscan.Error
	if errors.As(err, &se) {
		se.Offset += start
	}
	return err
}
