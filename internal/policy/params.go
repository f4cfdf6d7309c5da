package policy

import (
	"encoding/json"
	"fmt"
	"strings"
)

// ParseParams reads policy parameters given as "name=value" (the --param
// flags of lookout check). A value that is valid JSON is taken as JSON (3,
// 2.5, true, null, ["a","b"], {"k":1}, "quoted"); anything else is a plain
// string, so --param user=alice needs no quotes. Names must be identifiers,
// since policies read them as input.<name>; a name given twice is an error.
func ParseParams(kvs []string) (map[string]any, error) {
	out := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		name, val, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("parameter %q: want name=value", kv)
		}
		if !isIdent(name) {
			return nil, fmt.Errorf("parameter %q: %q is not a name a policy can read as input.%s", kv, name, name)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("parameter %s given twice", name)
		}
		if json.Valid([]byte(val)) {
			out[name] = json.RawMessage(val)
		} else {
			out[name] = val
		}
	}
	return out, nil
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
