package bedrock

import (
	"encoding/base64"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/lookout-dev/lookout/internal/jsonscan"
	"github.com/lookout-dev/lookout/internal/trace"
)

// optString reads a string, or null as "".
func optString(s *jsonscan.Scanner, what string) (string, error) {
	if s.Peek() == jsonscan.Null {
		return "", s.Null()
	}
	return s.String(what)
}

// optStringPtr reads a string into a new pointer; null leaves it nil.
func optStringPtr(s *jsonscan.Scanner, what string) (*string, error) {
	if s.Peek() == jsonscan.Null {
		return nil, s.Null()
	}
	v, err := s.String(what)
	if err != nil {
		return nil, err
	}
	return &v, nil
}

// object reads an object (null counts as an empty one) member by member.
func object(s *jsonscan.Scanner, what string, fn func(key string) error) error {
	if s.Peek() == jsonscan.Null {
		return s.Null()
	}
	if err := s.Expect(jsonscan.Object, what); err != nil {
		return err
	}
	return s.Object(fn)
}

// array reads an array (null counts as an empty one) element by element.
func array(s *jsonscan.Scanner, what string, fn func(i int) error) error {
	if s.Peek() == jsonscan.Null {
		return s.Null()
	}
	if err := s.Expect(jsonscan.Array, what); err != nil {
		return err
	}
	return s.Array(fn)
}

// tracePayload reads {agentId, ..., eventTime, callerChain, trace: {<phase>: {...}}}.
func tracePayload(s *jsonscan.Scanner, pt *part) error {
	hasTrace := false
	start := s.Offset()
	err := s.Object(func(key string) error {
		var err error
		switch key {
		case "agentId":
			pt.agentID, err = optString(s, key)
		case "agentAliasId":
			pt.aliasID, err = optString(s, key)
		case "agentVersion":
			pt.version, err = optString(s, key)
		case "sessionId":
			pt.sessionID, err = optString(s, key)
		case "collaboratorName":
			pt.collaborator, err = optString(s, key)
		case "eventTime":
			err = eventTime(s, pt)
		case "event_order":
			err = eventOrder(s, pt)
		case "callerChain":
			err = array(s, key, func(int) error {
				pt.chainLen++
				return s.Skip()
			})
		case "trace":
			hasTrace = true
			err = traceUnion(s, pt)
		default:
			err = s.Skip()
		}
		return err
	})
	if err == nil && !hasTrace {
		return s.ErrorAt(start, `a trace event needs a "trace" object`)
	}
	return err
}

func eventOrder(s *jsonscan.Scanner, pt *part) error {
	if s.Peek() == jsonscan.Null {
		return s.Null()
	}
	n, err := s.Int64("event_order")
	if err != nil {
		return err
	}
	pt.order, pt.hasOrder = n, true
	return nil
}

// timeLayouts are the accepted eventTime forms: RFC 3339 (what the service
// sends) and Python's str(datetime) (what json.dumps(default=str) writes).
var timeLayouts = []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999Z07:00"}

func eventTime(s *jsonscan.Scanner, pt *part) error {
	if s.Peek() == jsonscan.Null {
		return s.Null()
	}
	start := s.Offset()
	v, err := s.String("eventTime")
	if err != nil {
		return err
	}
	for _, layout := range timeLayouts {
		t, perr := time.Parse(layout, v)
		if perr != nil {
			continue
		}
		// Canonical JSON writes times as RFC 3339 in UTC, which has
		// four-digit years only.
		if y := t.UTC().Year(); y < 0 || y > 9999 {
			break
		}
		pt.time, pt.hasTime = t, true
		return nil
	}
	return s.ErrorAt(start, "eventTime must be an ISO-8601 time such as 2025-05-21T09:50:19.483305356Z, not %s", quote(v))
}

// traceUnion reads the "trace" object, which holds exactly one phase.
func traceUnion(s *jsonscan.Scanner, pt *part) error {
	if err := s.Expect(jsonscan.Object, "trace"); err != nil {
		return err
	}
	start := s.Offset()
	n := 0
	var keys []string
	err := s.Object(func(key string) error {
		n++
		keys = append(keys, key)
		if n > 1 {
			return s.Skip()
		}
		phase, ok := phaseKeys[key]
		if !ok {
			phase = key // a trace kind newer than this decoder: kept as its own span
		}
		pt.phase = phase
		return phaseObject(s, key, pt)
	})
	if err != nil {
		return err
	}
	switch {
	case n == 0:
		return s.ErrorAt(start, "trace must hold one trace kind (orchestrationTrace, preProcessingTrace, ...), not none")
	case n > 1:
		return s.ErrorAt(start, "trace must hold one trace kind, not %d (%s)", n, strings.Join(keys, ", "))
	}
	return nil
}

// phaseObject reads e.g. the orchestrationTrace object: either a union of one
// step (modelInvocationInput, rationale, ...) or, for guardrail, failure and
// custom orchestration traces, the step itself.
func phaseObject(s *jsonscan.Scanner, what string, pt *part) error {
	if err := s.Expect(jsonscan.Object, what); err != nil {
		return err
	}
	start := s.Offset()
	var steps []string
	var direct *string
	err := s.Object(func(key string) error {
		if key == "traceId" {
			var err error
			direct, err = optStringPtr(s, key)
			return err
		}
		if stepNames[key] {
			steps = append(steps, key)
			if len(steps) > 1 {
				return s.Skip()
			}
			pt.stepName = key
			return stepObject(s, key, pt)
		}
		return directMember(s, key, pt)
	})
	if err == nil && len(steps) > 1 {
		return s.ErrorAt(start, "%s must hold one step, not %s", what, strings.Join(steps, " and "))
	}
	if direct != nil && !pt.hasTraceID { // the innermost traceId wins
		pt.traceID, pt.hasTraceID = *direct, true
	}
	return err
}

// directMember reads a member of a phase object that is not a step or its
// traceId: the fields of guardrail and failure traces.
func directMember(s *jsonscan.Scanner, key string, pt *part) error {
	var err error
	switch key {
	case "action":
		pt.st.action, err = optString(s, key)
	case "failureReason":
		pt.st.failureReason, err = optStringPtr(s, key)
	case "failureCode":
		pt.st.failureCode, err = trace.DecodeRaw(s)
	default:
		err = s.Skip()
	}
	return err
}

// stepObject reads one step.
func stepObject(s *jsonscan.Scanner, name string, pt *part) error {
	if err := s.Expect(jsonscan.Object, name); err != nil {
		return err
	}
	st := &pt.st
	return s.Object(func(key string) error {
		var err error
		if key == "traceId" {
			var v *string
			v, err = optStringPtr(s, key)
			if v != nil {
				pt.traceID, pt.hasTraceID = *v, true
			}
			return err
		}
		switch name + "." + key {
		case "modelInvocationInput.foundationModel":
			st.model, err = optString(s, key)
		case "modelInvocationInput.text":
			if s.Peek() == jsonscan.Null {
				return s.Null()
			}
			if err := s.Expect(jsonscan.String, key); err != nil {
				return err
			}
			start := s.Offset()
			if err = s.Skip(); err == nil {
				st.textLit, st.hasText = s.Data()[start:s.Offset()], true
			}
		case "modelInvocationInput.type":
			st.promptType, err = optString(s, key)
		case "modelInvocationOutput.metadata":
			err = object(s, key, func(k string) error {
				if k != "usage" {
					return s.Skip()
				}
				return object(s, k, func(k string) error {
					switch k {
					case "inputTokens":
						return tokens(s, k, &st.inTok, &st.hasUsage)
					case "outputTokens":
						return tokens(s, k, &st.outTok, &st.hasUsage)
					}
					return s.Skip()
				})
			})
		case "modelInvocationOutput.parsedResponse":
			err = object(s, key, func(k string) error {
				var err error
				switch k {
				case "isValid":
					if s.Peek() != jsonscan.Bool {
						return s.Errorf("isValid must be a boolean, not %s", kindName(s.Peek()))
					}
					st.isValid, err = trace.DecodeRaw(s)
				case "rationale":
					st.parsedRationale, err = optStringPtr(s, k)
				case "text":
					st.parsedText, err = optStringPtr(s, k)
				default:
					err = s.Skip()
				}
				return err
			})
		case "rationale.text":
			st.rationale, err = optStringPtr(s, key)
		case "invocationInput.actionGroupInvocationInput":
			err = actionGroupInput(s, key, st)
		case "invocationInput.knowledgeBaseLookupInput":
			err = kbInput(s, key, st)
		case "invocationInput.agentCollaboratorInvocationInput":
			err = collaboratorInput(s, key, st)
		case "invocationInput.codeInterpreterInvocationInput":
			err = codeInput(s, key, st)
		case "observation.actionGroupInvocationOutput":
			err = textOutput(s, key, catAction, st)
		case "observation.knowledgeBaseLookupOutput":
			err = kbOutput(s, key, st)
		case "observation.agentCollaboratorInvocationOutput":
			err = collaboratorOutput(s, key, st)
		case "observation.codeInterpreterInvocationOutput":
			err = codeOutput(s, key, st)
		case "observation.finalResponse", "observation.repromptResponse":
			err = object(s, key, func(k string) error {
				if k != "text" {
					return s.Skip()
				}
				v, err := optStringPtr(s, k)
				if v != nil {
					st.final = v
				}
				return err
			})
		default:
			err = s.Skip()
		}
		return err
	})
}

func tokens(s *jsonscan.Scanner, what string, n *int64, has *bool) error {
	if s.Peek() == jsonscan.Null {
		return s.Null()
	}
	v, err := s.Int64(what)
	*n += v
	*has = true
	return err
}

// args builds a JSON object of tool arguments, keeping the first of
// duplicate names.
type args struct {
	entries []arg
}

type arg struct {
	key string
	raw []byte
}

func (a *args) add(key string, raw []byte) {
	for _, e := range a.entries {
		if e.key == key {
			return
		}
	}
	a.entries = append(a.entries, arg{key, raw})
}

func (a *args) addString(key, v string) { a.add(key, trace.AppendString(nil, v)) }

func (a *args) json() []byte {
	b := []byte{'{'}
	for i, e := range a.entries {
		if i > 0 {
			b = append(b, ',')
		}
		b = trace.AppendString(b, e.key)
		b = append(b, ':')
		b = append(b, e.raw...)
	}
	return append(b, '}')
}

// parameters reads a list of {name, type, value} into a.
func parameters(s *jsonscan.Scanner, what string, a *args) error {
	return array(s, what, func(int) error {
		var name *string
		var value []byte
		err := object(s, "a parameter", func(k string) error {
			var err error
			switch k {
			case "name":
				name, err = optStringPtr(s, k)
			case "value":
				value, err = trace.DecodeRaw(s)
			default:
				err = s.Skip()
			}
			return err
		})
		if err != nil || name == nil {
			return err // a parameter without a name (elided) gives no argument
		}
		if value == nil {
			value = []byte("null")
		}
		a.add(*name, value)
		return nil
	})
}

func toolName(group, op, fallback string) string {
	if group == "" {
		group = fallback
	}
	if op == "" {
		return group
	}
	return group + "__" + op
}

// actionGroupInput reads an ActionGroupInvocationInput.
func actionGroupInput(s *jsonscan.Scanner, what string, st *step) error {
	var group, apiPath, function string
	var a args
	var body args
	err := object(s, what, func(k string) error {
		var err error
		switch k {
		case "actionGroupName":
			group, err = optString(s, k)
		case "apiPath":
			apiPath, err = optString(s, k)
		case "function":
			function, err = optString(s, k)
		case "parameters":
			err = parameters(s, k, &a)
		case "requestBody":
			err = requestBody(s, k, &body)
		default:
			err = s.Skip()
		}
		return err
	})
	if err != nil {
		return err
	}
	mergeArgs(&a, &body)
	st.call = &call{cat: catAction, name: toolName(group, nonEmpty(apiPath, function), "action_group"), args: a.json()}
	return nil
}

// mergeArgs adds the request body's properties after the parameters.
func mergeArgs(a, body *args) {
	for _, e := range body.entries {
		a.add(e.key, e.raw)
	}
}

// requestBody reads {content: {<media type>: {properties: [{name, type, value}]}}}.
func requestBody(s *jsonscan.Scanner, what string, a *args) error {
	return object(s, what, func(k string) error {
		if k != "content" {
			return s.Skip()
		}
		return object(s, k, func(mediaType string) error {
			return object(s, mediaType, func(k string) error {
				if k != "properties" {
					return s.Skip()
				}
				return parameters(s, k, a)
			})
		})
	})
}

func kbInput(s *jsonscan.Scanner, what string, st *step) error {
	var id string
	var text *string
	err := object(s, what, func(k string) error {
		var err error
		switch k {
		case "knowledgeBaseId":
			id, err = optString(s, k)
		case "text":
			text, err = optStringPtr(s, k)
		default:
			err = s.Skip()
		}
		return err
	})
	if err != nil {
		return err
	}
	var a args
	if text != nil {
		a.addString("query", *text)
	}
	st.call = &call{cat: catKB, name: toolName("knowledge_base", id, ""), args: a.json()}
	if text != nil {
		st.text, st.hasText = *text, true
	}
	return nil
}

func collaboratorInput(s *jsonscan.Scanner, what string, st *step) error {
	var name string
	var text *string
	err := object(s, what, func(k string) error {
		var err error
		switch k {
		case "agentCollaboratorName":
			name, err = optString(s, k)
		case "input":
			err = object(s, k, func(k string) error {
				if k != "text" {
					return s.Skip()
				}
				var err error
				text, err = optStringPtr(s, k)
				return err
			})
		default:
			err = s.Skip()
		}
		return err
	})
	if err != nil {
		return err
	}
	var a args
	if text != nil {
		a.addString("input", *text)
	}
	st.call = &call{cat: catCollaborator, name: toolName("collaborator", name, ""), args: a.json()}
	return nil
}

func codeInput(s *jsonscan.Scanner, what string, st *step) error {
	var a args
	err := object(s, what, func(k string) error {
		switch k {
		case "code":
			v, err := optStringPtr(s, k)
			if v != nil {
				a.addString("code", *v)
			}
			return err
		case "files":
			raw, err := trace.DecodeRaw(s)
			if err == nil {
				a.add("files", raw)
			}
			return err
		}
		return s.Skip()
	})
	if err != nil {
		return err
	}
	st.call = &call{cat: catCode, name: "code_interpreter", args: a.json()}
	return nil
}

// textOutput reads an output whose content is its "text" member.
func textOutput(s *jsonscan.Scanner, what string, cat category, st *step) error {
	out := &output{cat: cat, content: trace.Content{Kind: trace.ContentNull}}
	err := object(s, what, func(k string) error {
		if k != "text" {
			return s.Skip()
		}
		v, err := optStringPtr(s, k)
		if v != nil {
			out.content = trace.TextContent(*v)
		}
		return err
	})
	st.out = out
	return err
}

func kbOutput(s *jsonscan.Scanner, what string, st *step) error {
	out := &output{cat: catKB, content: trace.Content{Kind: trace.ContentNull}}
	err := object(s, what, func(k string) error {
		if k != "retrievedReferences" {
			return s.Skip()
		}
		if s.Peek() == jsonscan.Null {
			return s.Null()
		}
		if err := s.Expect(jsonscan.Array, k); err != nil {
			return err
		}
		raw, err := trace.DecodeRaw(s)
		if err == nil {
			// Raw JSON may hold invalid UTF-8; content is text.
			out.content = trace.TextContent(jsonscan.ValidUTF8(raw))
		}
		return err
	})
	st.out = out
	return err
}

func collaboratorOutput(s *jsonscan.Scanner, what string, st *step) error {
	out := &output{cat: catCollaborator, content: trace.Content{Kind: trace.ContentNull}}
	err := object(s, what, func(k string) error {
		if k != "output" {
			return s.Skip()
		}
		return object(s, k, func(k string) error {
			if k != "text" {
				return s.Skip()
			}
			v, err := optStringPtr(s, k)
			if v != nil {
				out.content = trace.TextContent(*v)
			}
			return err
		})
	})
	st.out = out
	return err
}

func codeOutput(s *jsonscan.Scanner, what string, st *step) error {
	var stdout, stderr *string
	err := object(s, what, func(k string) error {
		var err error
		switch k {
		case "executionOutput":
			stdout, err = optStringPtr(s, k)
		case "executionError":
			stderr, err = optStringPtr(s, k)
		default:
			err = s.Skip()
		}
		return err
	})
	out := &output{cat: catCode, content: trace.Content{Kind: trace.ContentNull}}
	switch {
	case stdout != nil:
		out.content = trace.TextContent(*stdout)
	case stderr != nil:
		out.content = trace.TextContent(*stderr)
	}
	st.out = out
	return err
}

// chunkPayload reads {bytes, attribution}.
func chunkPayload(s *jsonscan.Scanner, pt *part) error {
	start := s.Offset()
	hasBytes := false
	err := s.Object(func(key string) error {
		switch key {
		case "bytes":
			hasBytes = true
			return chunkBytes(s, &pt.chunk)
		case "attribution":
			if s.Peek() == jsonscan.Null {
				return s.Null()
			}
			if err := s.Expect(jsonscan.Object, key); err != nil {
				return err
			}
			var err error
			pt.chunk.attribution, err = trace.DecodeRaw(s)
			return err
		}
		return s.Skip()
	})
	if err == nil && !hasBytes {
		return s.ErrorAt(start, `a chunk needs "bytes"`)
	}
	return err
}

// chunkBytes reads the answer text: base64 of UTF-8, or the text itself.
func chunkBytes(s *jsonscan.Scanner, c *chunk) error {
	start := s.Offset()
	v, err := s.String("chunk bytes")
	if err != nil {
		return err
	}
	c.text = v
	if dec, err := base64.StdEncoding.DecodeString(v); err == nil {
		c.decoded, c.b64 = dec, true
		return nil
	}
	if !utf8.Valid(s.Data()[start:s.Offset()]) {
		return s.ErrorAt(start, "chunk bytes are neither base64 nor text: invalid UTF-8")
	}
	for i, r := range v {
		if r < 0x20 && r != '\t' && r != '\n' && r != '\r' {
			return s.ErrorAt(start, "chunk bytes are neither base64 (%s) nor text (control character U+%04X at byte %d)", base64Problem(v), r, i)
		}
	}
	return nil
}

func base64Problem(v string) string {
	_, err := base64.StdEncoding.DecodeString(v)
	if err == nil {
		return "valid"
	}
	return err.Error()
}

// decodeChunks chooses, for the whole stream, between base64 and text.
func (p *parser) decodeChunks() {
	all := true
	var joined []byte
	n := 0
	for i := range p.parts {
		if p.parts[i].kind != kindChunk {
			continue
		}
		n++
		c := &p.parts[i].chunk
		if !c.b64 {
			all = false
			break
		}
		joined = append(joined, c.decoded...)
	}
	if n == 0 {
		return
	}
	whole := all && utf8.Valid(joined)
	for i := range p.parts {
		if p.parts[i].kind != kindChunk {
			continue
		}
		c := &p.parts[i].chunk
		if c.b64 && (whole || utf8.Valid(c.decoded)) {
			c.text = string(c.decoded)
		}
		c.decoded = nil
	}
}

// returnControl reads {invocationId, invocationInputs: [{apiInvocationInput | functionInvocationInput}]}.
func returnControl(s *jsonscan.Scanner, pt *part) error {
	return s.Object(func(key string) error {
		var err error
		switch key {
		case "invocationId":
			pt.invocationID, err = optString(s, key)
		case "invocationInputs":
			err = array(s, key, func(int) error {
				return object(s, "an invocation input", func(k string) error {
					switch k {
					case "apiInvocationInput", "functionInvocationInput":
					default:
						return s.Skip()
					}
					var group, op string
					var a, body args
					err := object(s, k, func(k2 string) error {
						var err error
						switch k2 {
						case "actionGroup":
							group, err = optString(s, k2)
						case "apiPath":
							op, err = optString(s, k2)
						case "function":
							op, err = optString(s, k2)
						case "parameters":
							err = parameters(s, k2, &a)
						case "requestBody":
							err = requestBody(s, k2, &body)
						default:
							err = s.Skip()
						}
						return err
					})
					if err != nil {
						return err
					}
					mergeArgs(&a, &body)
					pt.calls = append(pt.calls, call{cat: catAction, name: toolName(group, op, "action_group"), args: a.json()})
					return nil
				})
			})
		default:
			err = s.Skip()
		}
		return err
	})
}

// grouped reads {"<traceId>": [{data, event_order, type}, ...], ...}.
func (p *parser) grouped(s *jsonscan.Scanner) error {
	p.grouping, p.sortable = true, true
	return s.Object(func(key string) error {
		if err := s.Expect(jsonscan.Array, "a traceId group"); err != nil {
			return err
		}
		first := len(p.parts)
		err := s.Array(func(int) error {
			if err := s.Expect(jsonscan.Object, "a grouped event"); err != nil {
				return err
			}
			return p.groupedItem(s, key)
		})
		groupPhase(p.parts[first:])
		return err
	})
}

// groupPhase gives the parts of one group of the grouped form, which does
// not name phases, one phase: that of a modelInvocationInput's prompt type
// (PRE_PROCESSING, ...), else that of the traceId's suffix, else
// orchestration. Parts read from a phase object or a whole trace event keep
// theirs.
func groupPhase(parts []part) {
	phase := ""
	for i := range parts {
		if ph, ok := promptPhases[parts[i].st.promptType]; ok && parts[i].phase == "" {
			phase = ph
			break
		}
	}
	for i := range parts {
		if parts[i].kind != kindTrace || parts[i].phase != "" {
			continue
		}
		if phase == "" {
			phase = suffixPhase(parts[i].traceID)
		}
		parts[i].phase = phase
	}
}

func (p *parser) groupedItem(s *jsonscan.Scanner, groupKey string) error {
	start := s.Offset()
	path := s.Path()
	var typ string
	hasType, hasData := false, false
	var dataStart, dataEnd int
	var pt part
	err := s.Object(func(key string) error {
		var err error
		switch key {
		case "type":
			hasType = true
			typ, err = s.String("type")
		case "data":
			hasData = true
			if err := s.Expect(jsonscan.Object, "data"); err != nil {
				return err
			}
			dataStart = s.Offset()
			err = s.Skip()
			dataEnd = s.Offset()
		case "event_order":
			err = eventOrder(s, &pt)
		default:
			err = s.Skip()
		}
		return err
	})
	if err != nil {
		return err
	}
	end := s.Offset()
	if !hasType || !hasData {
		return &jsonscan.Error{Offset: start, Path: path, Msg: `a grouped event needs "data" (an object) and "type" (a string)`}
	}
	err = subScan(s.Data(), dataStart, dataEnd, path+".data", func(sub *jsonscan.Scanner) error {
		switch {
		case typ == "chunk":
			pt.kind = kindChunk
			return chunkPayload(sub, &pt)
		case typ == "returnControl":
			pt.kind = kindReturnControl
			return returnControl(sub, &pt)
		case typ == "trace":
			pt.kind = kindTrace
			return tracePayload(sub, &pt)
		}
		pt.kind = kindTrace
		if ph, ok := phaseKeys[typ]; ok {
			pt.phase = ph
			return phaseObject(sub, typ, &pt)
		}
		pt.stepName = typ
		return stepObject(sub, typ, &pt)
	})
	if err != nil {
		return err
	}
	if pt.kind == kindTrace {
		if !pt.hasTraceID {
			pt.traceID, pt.hasTraceID = groupKey, true
		} else if pt.traceID != groupKey {
			return &jsonscan.Error{Offset: dataStart, Path: path + ".data.traceId", Msg: "traceId " + quote(pt.traceID) + " differs from its group key " + quote(groupKey)}
		}
	}
	if !pt.hasOrder {
		p.sortable = false
	}
	pt.raw = s.Data()[start:end]
	p.parts = append(p.parts, pt)
	return nil
}

// promptPhases maps a modelInvocationInput's prompt type to its phase.
var promptPhases = map[string]string{
	"PRE_PROCESSING":                     "pre-processing",
	"ORCHESTRATION":                      "orchestration",
	"KNOWLEDGE_BASE_RESPONSE_GENERATION": "orchestration",
	"POST_PROCESSING":                    "post-processing",
	"ROUTING_CLASSIFIER":                 "routing",
}

// suffixPhase names the phase a traceId's suffix tells.
func suffixPhase(id string) string {
	switch {
	case strings.Contains(id, "-guardrail-"):
		return "guardrail"
	case strings.Contains(id, "-pre-"):
		return "pre-processing"
	case strings.Contains(id, "-post-"):
		return "post-processing"
	case strings.Contains(id, "-routing-"):
		return "routing"
	}
	return "orchestration"
}

func quote(s string) string {
	if len(s) > 80 {
		s = s[:80] + "..."
	}
	return strconv.Quote(s)
}
