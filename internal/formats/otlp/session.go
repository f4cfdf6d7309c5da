package otlp

import (
	"bytes"
	"encoding/json"

	"github.com/lookout-dev/lookout/internal/trace"
)

// sessionAttrs and userAttrs are the span and resource attributes that name
// a trace's session and its user, in order of precedence: OpenTelemetry's
// semantic conventions (session.id, user.id; a GenAI conversation is a
// session), then the Langfuse SDK's own.
var (
	sessionAttrs = []string{"session.id", "gen_ai.conversation.id", "langfuse.session.id"}
	userAttrs    = []string{"user.id", "langfuse.user.id"}
)

// sessionFields are the metadata members session_id and user_id that the
// spans name (see sessionAttrs): for each, the first attribute key by
// precedence found on any span, spans in tree order, a span's own
// attributes before its resource's. None when the spans name neither.
func sessionFields(spans []trace.Span) []trace.Field {
	var out []trace.Field
	for _, w := range []struct {
		member string
		keys   []string
	}{{"session_id", sessionAttrs}, {"user_id", userAttrs}} {
		if id := firstAttr(spans, w.keys); id != "" {
			out = append(out, trace.Field{Key: w.member, Value: trace.AppendString(nil, id)})
		}
	}
	return out
}

func firstAttr(spans []trace.Span, keys []string) string {
	// One pass over each object finds which keys it names (all end in
	// ".id"): most spans name none, and their attributes are long.
	type named struct {
		obj  json.RawMessage
		keys uint64
	}
	var found []named
	var any uint64
	for i := range spans {
		for _, obj := range [...]json.RawMessage{spans[i].Attributes, spans[i].Extra.Get("resource")} {
			ks := keysNamed(obj, keys)
			found = append(found, named{obj, ks})
			any |= ks
		}
	}
	if any == 0 {
		return ""
	}
	for k, key := range keys {
		for _, f := range found {
			if f.keys&(1<<k) == 0 {
				continue
			}
			var m map[string]json.RawMessage
			if json.Unmarshal(f.obj, &m) == nil {
				if id := trace.IDValue(m[key]); id != "" {
					return id
				}
			}
		}
	}
	return ""
}

// keysNamed is the set (bit k for keys[k]) of keys, each ending in ".id",
// whose quoted text is in obj.
func keysNamed(obj []byte, keys []string) uint64 {
	var set uint64
	for rest, at := obj, 0; ; {
		i := bytes.Index(rest, []byte(`.id"`))
		if i < 0 {
			return set
		}
		end := at + i + len(`.id"`)
		for k, key := range keys {
			start := end - len(key) - 2
			if start >= 0 && obj[start] == '"' && string(obj[start+1:end-1]) == key {
				set |= 1 << k
			}
		}
		rest, at = obj[end:], end
	}
}

// withSessionFields is the metadata fields with the session and user of
// the assembled trace t (its metadata, from sessionFields) added, each
// unless fields name one already (trace.SessionKeys, trace.UserKeys).
func withSessionFields(fields []trace.Field, t *trace.Trace) []trace.Field {
	s, u := trace.SessionAndUser(t.Metadata)
	if s == "" && u == "" {
		return fields
	}
	hasS, hasU := trace.SessionAndUser(trace.Fields(fields).Object())
	if s != "" && hasS == "" {
		fields = append(fields, trace.Field{Key: "session_id", Value: trace.AppendString(nil, s)})
	}
	if u != "" && hasU == "" {
		fields = append(fields, trace.Field{Key: "user_id", Value: trace.AppendString(nil, u)})
	}
	return fields
}
