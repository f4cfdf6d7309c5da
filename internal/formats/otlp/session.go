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
	for _, k := range keys {
		quoted := trace.AppendString(nil, k)
		for i := range spans {
			for _, obj := range [...]json.RawMessage{spans[i].Attributes, spans[i].Extra.Get("resource")} {
				// Most spans name none: a look for the key's text spares
				// decoding their attributes.
				if !bytes.Contains(obj, quoted) {
					continue
				}
				var m map[string]json.RawMessage
				if json.Unmarshal(obj, &m) == nil {
					if id := trace.IDValue(m[k]); id != "" {
						return id
					}
				}
			}
		}
	}
	return ""
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
