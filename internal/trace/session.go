package trace

import (
	"encoding/json"
	"strings"
)

// SessionKeys and UserKeys are the top-level metadata keys that name a
// trace's session and its user, in order of precedence: Lookout's own
// (which the OpenTelemetry decoders write), a shorter form, and Langfuse's
// (its export keeps the trace object, sessionId and userId included, as
// the metadata).
var (
	SessionKeys = []string{"session_id", "session", "sessionId"}
	UserKeys    = []string{"user_id", "user", "userId"}
)

// SessionAndUser returns the session and user ids a trace's metadata
// names: for each, the value of the first of its keys whose value is a
// non-empty string or a number (as written); "" when none is.
func SessionAndUser(meta json.RawMessage) (session, user string) {
	if len(meta) == 0 || meta[0] != '{' {
		return "", ""
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(meta, &m) != nil {
		return "", ""
	}
	return firstID(m, SessionKeys), firstID(m, UserKeys)
}

func firstID(m map[string]json.RawMessage, keys []string) string {
	for _, k := range keys {
		if id := IDValue(m[k]); id != "" {
			return id
		}
	}
	return ""
}

// IDValue is the id a JSON value gives: a string's text (blank: none), a
// number as written, else "".
func IDValue(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	switch c := raw[0]; {
	case c == '"':
		var s string
		if json.Unmarshal(raw, &s) != nil || strings.TrimSpace(s) == "" {
			return ""
		}
		return s
	case c == '-' || '0' <= c && c <= '9':
		var n json.Number
		if json.Unmarshal(raw, &n) != nil {
			return ""
		}
		return n.String()
	}
	return ""
}
