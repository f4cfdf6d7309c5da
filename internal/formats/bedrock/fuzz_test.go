package bedrock

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/lookout-dev/lookout/internal/formats/decoding"
	"github.com/lookout-dev/lookout/internal/trace"
)

// FuzzDecode: no input makes the decoder panic, every error is a placed
// *decoding.Error, and every trace it gives survives the canonical round
// trip with span ids usable in addresses.
func FuzzDecode(f *testing.F) {
	for _, name := range corpusFiles {
		data := readCorpus(f, name)
		f.Add(data)
		// Each event alone too: the engine minimizes every input that finds
		// new code, and small inputs keep that cheap.
		for _, one := range splitEvents(data) {
			f.Add(one)
		}
	}
	for _, s := range []string{
		`[]`, `{}`, `"x"`, `[1]`, `[{}]`, `[{"chunk": {"bytes": "SGk="}}]`, `[{"chunk": {"bytes": "w6k="}}, {"chunk": {"bytes": "ww=="}}]`,
		`[{"chunk": {"bytes": "a\u0000"}}]`,
		`[{"trace": {"eventTime": "2025-05-21T09:50:19.483305356Z", "trace": {"guardrailTrace": {"action": "INTERVENED", "traceId": "g.0"}}}}]`,
		`[{"trace": {"eventTime": "9999-12-31T23:59:59-23:59", "trace": {"failureTrace": {"traceId": "root"}}}}]`,
		`[{"trace": {"trace": {"orchestrationTrace": {"invocationInput": {"traceId": "t", "actionGroupInvocationInput": {"parameters": [{"name": "a", "value": {"x": [1, 2]}}]}}}}}}]`,
		`[{"trace": {"trace": {"orchestrationTrace": {"observation": {"traceId": "t", "actionGroupInvocationOutput": {"text": "x"}}}}}}]`,
		`[{"returnControl": {"invocationId": "i", "invocationInputs": [{"functionInvocationInput": {"function": "f"}}]}}]`,
		`[{"payload": {"bytes": "SGk="}, "headers": {":event-type": "chunk"}}]`,
		`[{"headers": {":event-type": "x", ":message-type": "exception"}, "payload": {"message": "m"}}]`,
		`[{"headers": {":event-type": "chunk"}, "payload": {"bytes": "SGk="}, "headers": {":message-type": "exception"}}]`,
		`{"t-0": [{"data": {"text": "a", "traceId": "t-0"}, "event_order": 1, "type": "rationale"}], "t-1": [{"data": {}, "event_order": 0, "type": "guardrailTrace"}]}`,
		`{"t-0": [{"data": {"bytes": "SGk="}, "type": "chunk"}]}`,
		"[{\"trace\": {\"trace\": {\"orchestrationTrace\": {\"rationale\": {\"text\": \"\u2028\\ud800\"}}}}}]\n[{\"chunk\": {\"bytes\": \"\"}}]",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dec := NewDecoder(bytes.NewReader(data), "fuzz")
		// Every value takes at least one byte: more Next calls than that
		// would be a decoder that does not move on.
		for range len(data) + 1 {
			tr, err := dec.Next()
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				var de *decoding.Error
				if !errors.As(err, &de) {
					t.Fatalf("error %T %v is not a *decoding.Error", err, err)
				}
				if de.File != "fuzz" || de.Line < 1 {
					t.Fatalf("error %q is not placed", de)
				}
				if de.Recoverable && de.Path == "" {
					t.Fatalf("error %q has no JSON path", de)
				}
				if !de.Recoverable {
					if _, err := dec.Next(); !errors.Is(err, io.EOF) {
						t.Fatalf("Next after an unrecoverable error gave %v", err)
					}
					return
				}
				continue
			}
			for _, sp := range tr.Spans {
				if sp.ID == "" || strings.ContainsAny(sp.ID, ".:[]") {
					t.Fatalf("span id %q", sp.ID)
				}
			}
			a := trace.AppendTrace(nil, tr)
			var back trace.Trace
			if err := back.UnmarshalJSON(a); err != nil {
				t.Fatalf("canonical JSON does not read back: %v\n%s", err, a)
			}
			if b := trace.AppendTrace(nil, &back); !bytes.Equal(a, b) {
				t.Fatalf("canonical round trip changed the trace:\n%s\n%s", a, b)
			}
		}
		t.Fatalf("more than %d values from %d bytes", len(data)+1, len(data))
	})
}

// splitEvents returns each element of a JSON list, or each group of an
// object, as a document of its own.
func splitEvents(data []byte) [][]byte {
	var out [][]byte
	var l []json.RawMessage
	if json.Unmarshal(data, &l) == nil {
		for _, e := range l {
			out = append(out, append(append([]byte("["), e...), ']'))
		}
		return out
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(data, &m) == nil {
		for k, v := range m {
			doc, _ := json.Marshal(map[string]json.RawMessage{k: v})
			out = append(out, doc)
		}
	}
	return out
}
