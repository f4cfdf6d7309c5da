package otlp

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lookout-dev/lookout/internal/formats/internal/golden"
	"github.com/lookout-dev/lookout/internal/testcorpus"
	"github.com/lookout-dev/lookout/internal/trace"
)

// FuzzDecode: no input makes the decoder panic or loop; every error is a
// placed *decoding.Error; every trace has unique span ids without '.',
// parents before children, events that name its spans, and survives the
// canonical round trip unchanged. Seeded from the corpus's OpenTelemetry
// files (each Langfuse observation and any-agent span also alone, so that
// the engine has small inputs to work on).
func FuzzDecode(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(testcorpus.Dir(f), "otel/*/*.json"))
	n := 0
	for _, p := range files {
		if strings.HasSuffix(p, ".chatml.json") {
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		n++
		// The engine minimizes every input that finds new code, for up to a
		// minute each; on inputs of hundreds of KB that is all the time
		// there is. So whole files only when small, and small pieces of
		// every file.
		if len(data) <= maxSeed {
			f.Add(data)
		}
		if lf, err := langfuseSpans(data); err == nil {
			for _, l := range lf.spans {
				if one := langfuseOne(data, l.off); len(one) <= maxSeed {
					f.Add(one)
				}
			}
		}
		for _, one := range dumpSpans(data) {
			if len(one) <= maxSeed {
				f.Add(one)
			}
		}
	}
	if n != 27 {
		f.Fatalf("found %d OpenTelemetry corpus files, want 27", n)
	}
	f.Add([]byte(otlpJSON))
	for _, s := range []string{
		``, `{}`, `[]`, `{"resourceSpans": null}`, `{"resourceSpans": [{"scopeSpans": [{"spans": [{}]}]}]}`,
		`{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "` + tid + `", "spanId": "` + chat + `", "parentSpanId": "` + chat + `"}]}]}]}`,
		`{"resourceSpans": [{"resource": {"attributes": [{"key": "k", "value": {"arrayValue": {"values": [{"kvlistValue": {"values": []}}]}}}]}}]}`,
		`{"spans": [{"name": "a", "context": {"trace_id": 1, "span_id": 2}, "parent": {"span_id": 2}}]}`,
		`[{"name": "a", "context": {"trace_id": "0x1", "span_id": "0x2"}, "kind": "SpanKind.INTERNAL"}]`,
		`{"trace": {"id": "t"}, "observations": [{"id": "a", "type": "GENERATION", "input": "[{\"role\": \"user\", \"content\": \"hi\"}]", "output": "\"x\"", "metadata": "{\"attributes\": {\"gen_ai.operation.name\": \"chat\"}}"}, {"id": "b", "parentObservationId": "a", "type": "TOOL", "metadata": {"attributes": {"gen_ai.tool.name": "t"}}}]}`,
		`{"trace": {"id": "t"}, "observations": [{"id": "a", "startTime": "2025-01-01T00:00:01Z", "endTime": "2025-01-01T00:00:00Z"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dec := NewDecoder(bytes.NewReader(data), "fuzz")
		golden.Drain(t, dec.Next, len(data)+2, true, false, func(tr *trace.Trace) { checkTrace(t, tr) })
	})
}

// maxSeed bounds the size of a seed input.
const maxSeed = 4 << 10

// dumpSpans cuts each span of an any-agent dump into a dump of its own.
func dumpSpans(data []byte) [][]byte {
	var doc struct{ Spans []json.RawMessage }
	if json.Unmarshal(data, &doc) != nil {
		return nil
	}
	var out [][]byte
	for _, sp := range doc.Spans {
		out = append(out, append(append([]byte(`{"spans": [`), sp...), "]}"...))
	}
	return out
}

// langfuseOne cuts the observation at off out of a Langfuse export into an
// export of its own.
func langfuseOne(data []byte, off int) []byte {
	depth := 0
	for i := off; i < len(data); i++ {
		switch data[i] {
		case '"':
			for i++; i < len(data) && data[i] != '"'; i++ {
				if data[i] == '\\' {
					i++
				}
			}
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				obs := data[off : i+1]
				return append(append([]byte(`{"trace": {"id": "t"}, "observations": [`), obs...), "]}"...)
			}
		}
	}
	return nil
}

func checkTrace(t *testing.T, tr *trace.Trace) {
	t.Helper()
	golden.SpanTree(t, tr)
	golden.RoundTrip(t, tr)
}
