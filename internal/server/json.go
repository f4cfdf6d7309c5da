package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/lookout-dev/lookout/internal/jsonscan"
	"github.com/lookout-dev/lookout/internal/trace"
)

// Request bodies are read with the jsonscan pull parser rather than
// encoding/json so that every error names its place: line, column and JSON
// path ($.messages[3][0].content). Unknown members are errors, so that a
// typo does not silently do nothing.

// member decodes the value of one known object member.
type member func(s *jsonscan.Scanner) error

// decodeBody reads the request body as one JSON object with the given
// members. Errors are *apiError naming the place.
func decodeBody(r *http.Request, members map[string]member) ([]byte, error) {
	if err := requireJSON(r); err != nil {
		return nil, err
	}
	body, err := readBody(r)
	if err != nil {
		return nil, err
	}
	return body, decodeObject(body, members)
}

func decodeObject(body []byte, members map[string]member) error {
	// Strict: what the body holds meets the rule at the door (jsonscan),
	// members inside metadata and events included.
	s := jsonscan.NewStrict(body)
	if err := s.Expect(jsonscan.Object, "the request body"); err != nil {
		return jsonError(body, err)
	}
	err := s.Object(func(key string) error {
		m, ok := members[key]
		if !ok {
			return s.Errorf("unknown member %q (known: %s)", key, knownKeys(members))
		}
		return m(s)
	})
	if err == nil {
		err = s.End()
	}
	if err != nil {
		return jsonError(body, err)
	}
	return nil
}

func knownKeys(members map[string]member) string {
	keys := make([]string, 0, len(members))
	for k := range members {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return strings.Join(keys, ", ")
}

func str(dst *string, what string) member {
	return func(s *jsonscan.Scanner) error {
		v, err := s.String(what)
		*dst = v
		return err
	}
}

// optStr reads a string or null.
func optStr(dst *string, set *bool, what string) member {
	return func(s *jsonscan.Scanner) error {
		if s.Peek() == jsonscan.Null {
			return s.Null()
		}
		v, err := s.String(what)
		*dst = v
		if set != nil {
			*set = true
		}
		return err
	}
}

func boolean(dst *bool, what string) member {
	return func(s *jsonscan.Scanner) error {
		v, err := s.Bool(what)
		*dst = v
		return err
	}
}

// object reads a JSON object (null gives nil) as compact raw JSON.
func object(dst *json.RawMessage, set *bool, what string) member {
	return func(s *jsonscan.Scanner) error {
		v, err := trace.DecodeObject(s, what)
		*dst = v
		if set != nil {
			*set = true
		}
		return err
	}
}

// eventStream begins a server-sent-events answer (200) and returns send,
// which writes one event ("event: NAME", left out for "", then "data:
// JSON") and flushes it. A value that cannot be encoded goes out as an
// internal error.
func eventStream(w http.ResponseWriter) (send func(name string, v any)) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	return func(name string, v any) {
		b, err := json.Marshal(v)
		if err != nil {
			b, _ = json.Marshal(map[string]any{"error": map[string]string{"code": codeInternal, "message": "cannot encode the event"}})
		}
		if name != "" {
			fmt.Fprintf(w, "event: %s\n", name)
		}
		fmt.Fprintf(w, "data: %s\n\n", b)
		if flusher != nil {
			flusher.Flush()
		}
	}
}
