package trace

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/lookout-dev/lookout/internal/jsonscan"
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
	// The top-level members are scanned, not decoded into a map: agents'
	// metadata nests whole records (a task with its expected actions),
	// which the indexer read for every trace it indexed.
	m := map[string]json.RawMessage{}
	sc := jsonscan.New(meta)
	err := sc.Object(func(key string) error {
		if !slices.Contains(SessionKeys, key) && !slices.Contains(UserKeys, key) {
			return sc.Skip()
		}
		raw, err := sc.Raw()
		m[key] = raw // of a repeated key, the last, as a decoded map keeps it
		return err
	})
	if err != nil || sc.End() != nil {
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
