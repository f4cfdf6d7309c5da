package mlflow

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"

	"github.com/lookout-dev/lookout/internal/formats/internal/golden"
	"github.com/lookout-dev/lookout/internal/jsonscan"
	"github.com/lookout-dev/lookout/internal/trace"
)

// FuzzDecode: no input makes the decoder panic or loop, every error is a
// placed *decoding.Error, and every trace survives the canonical round trip
// with unique span ids that hold no '.', parents before children.
func FuzzDecode(f *testing.F) {
	seed := readCorpus(f, seedFile)
	f.Add(seed)
	f.Add([]byte(mlflow3))
	// Each span alone too: the engine minimizes every input that finds new
	// code, which is slow for the 77 KB seed; small inputs keep it cheap.
	var doc struct{ Spans []json.RawMessage }
	if err := json.Unmarshal(seed, &doc); err != nil || len(doc.Spans) != 5 {
		f.Fatalf("seed: %v", err)
	}
	for _, sp := range doc.Spans {
		f.Add(append(append([]byte(`{"spans": [`), sp...), "]}"...))
	}
	for _, s := range []string{
		`{}`, `[]`, `{"spans": []}`, `{"info": {}, "data": {}}`, `{"spans": [{}]}`,
		`{"spans": [{"span_id": "a", "start_time": 1, "attributes": {"mlflow.spanType": "\"TOOL\"", "mlflow.spanInputs": "[1", "mlflow.spanOutputs": "\"\\ud800\""}}]}`,
		`{"spans": [{"span_id": "a", "parent_id": "b", "start_time": 2}, {"span_id": "b", "parent_id": "a", "start_time": 1}]}`,
		`{"spans": [{"span_id": "a", "start_time": "9223372036854775807", "end_time_unix_nano": 9223372036854775807, "status": {"code": "STATUS_CODE_UNSET", "x": 1}}]}`,
		`{"spans": [{"span_id": "l", "start_time": 1, "attributes": {"mlflow.spanType": "\"LLM\"", "mlflow.spanInputs": "{\"messages\": [{\"role\": \"user\", \"content\": [{\"type\": \"image\"}]}]}", "mlflow.spanOutputs": "{\"choices\": [{\"message\": {\"role\": \"x\", \"tool_calls\": [{\"id\": \"c\", \"function\": {\"name\": \"t\", \"arguments\": \"{\"}}]}}]}"}}, {"span_id": "t", "name": "t", "start_time": 2, "attributes": {"mlflow.spanType": "\"TOOL\""}}]}`,
		`{"spans": [], "name": 1, "events": 2, "data": 3}` + "\n" + `{"info": {"trace_id": 5}, "data": {"spans": [], "x": null}, "spans2": []}`,
		`{"spans": [{"context": {"span_id": "a", "trace_id": "t"}, "start_time": 0, "parent_id": "", "kind": 1, "id": 2, "mlflow_id": 3}]}`,
		`{"spans": [{"span_id": "t", "start_time": 0, "attributes": {"mlflow.spanType": "\"TOOL\"", "mlflow.spanOutputs": {"a": "` + "\xff" + `"}}}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if jsonscan.Valid(data) {
			if a, b := compact(data), trace.Compact(data); !bytes.Equal(a, b) {
				t.Fatalf("compact %q, trace.Compact %q", a, b)
			}
		}
		dec := NewDecoder(bytes.NewReader(data), "fuzz")
		golden.Drain(t, dec.Next, len(data)+2, false, true, func(tr *trace.Trace) {
			golden.SpanTree(t, tr)
			golden.RoundTrip(t, tr)
		})
	})
}

func TestCompact(t *testing.T) {
	for _, in := range []string{
		`{}`, ` [ 1 , "a b" ] `, `"\\"`, `"\\\" x "`, `{"a\"":"\\\\", "b" : [ "\" ", {} ] }`,
		"{\n\t\"k\": \"\\u0022 \\\\\\\" \",\r\n \"x\": null}",
	} {
		if !jsonscan.Valid([]byte(in)) {
			t.Fatalf("%q is not JSON", in)
		}
		if a, b := compact([]byte(in)), trace.Compact([]byte(in)); !bytes.Equal(a, b) {
			t.Errorf("compact(%q) = %q, want %q", in, a, b)
		}
	}
}

func BenchmarkDecode(b *testing.B) {
	data := readCorpus(b, seedFile)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		dec := NewDecoder(bytes.NewReader(data), "bench")
		tr, err := dec.Next()
		if err != nil || len(tr.Spans) != 5 {
			b.Fatal(err)
		}
		if _, err := dec.Next(); !errors.Is(err, io.EOF) {
			b.Fatal(err)
		}
	}
}
