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
	// One pass over each object finds which keys of both lists it names
	// (all end in ".id"): most spans name none, and their attributes are
	// long. A span's resource is most often its predecessor's, looked at
	// once.
	var found []idObject
	var any uint64
	var lastResource json.RawMessage
	for i := range spans {
		if ks := keysNamed(spans[i].Attributes, idKeys); ks != 0 {
			found = append(found, idObject{spans[i].Attributes, ks})
			any |= ks
		}
		res := spans[i].Extra.Get("resource")
		if i > 0 && bytes.Equal(res, lastResource) {
			continue
		}
		lastResource = res
		if ks := keysNamed(res, idKeys); ks != 0 {
			found = append(found, idObject{res, ks})
			any |= ks
		}
	}
	if any == 0 {
		return nil
	}
	var out []trace.Field
	for _, w := range []struct {
		member     string
		first, end int // of the list's keys in idKeys
	}{{"session_id", 0, len(sessionAttrs)}, {"user_id", len(sessionAttrs), len(idKeys)}} {
		if id := firstAttr(found, w.first, w.end); id != "" {
			out = append(out, trace.Field{Key: w.member, Value: trace.AppendString(nil, id)})
		}
	}
	return out
}

// idKeys is sessionAttrs then userAttrs.
var idKeys = append(append([]string(nil), sessionAttrs...), userAttrs...)

// idObject is an object of attributes and the idKeys it names (bit k for
// idKeys[k]).
type idObject struct {
	obj  json.RawMessage
	keys uint64
}

// firstAttr is the first id value, by key precedence (idKeys[first:end])
// then object order, of the objects found naming them.
func firstAttr(found []idObject, first, end int) string {
	for k := first; k < end; k++ {
		for _, f := range found {
			if f.keys&(1<<k) == 0 {
				continue
			}
			var m map[string]json.RawMessage
			if json.Unmarshal(f.obj, &m) == nil {
				if id := trace.IDValue(m[idKeys[k]]); id != "" {
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
