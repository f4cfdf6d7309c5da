package invariant

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/lookout-dev/lookout/internal/formats/decoding"
	"github.com/lookout-dev/lookout/internal/testcorpus"
	"github.com/lookout-dev/lookout/internal/trace"
)

// corpusFiles lists the corpus files of the shapes this package reads.
func corpusFiles(t testing.TB) []string {
	t.Helper()
	corpusDir := testcorpus.Dir(t)
	var files []string
	for _, pat := range []string{
		"openai/explorer/*.jsonl",
		"openai/tau-bench/gpt-4o-airline.json",
		"openai/swe-agent/*.traj",
		"seeds/invariant-*.json",
	} {
		m, err := filepath.Glob(filepath.Join(corpusDir, pat))
		if err != nil || len(m) == 0 {
			t.Fatalf("the shared corpus must be at %s: no file matches %s (%v)", corpusDir, pat, err)
		}
		files = append(files, m...)
	}
	sort.Strings(files)
	if len(files) != 25 {
		t.Fatalf("found %d corpus files of the Invariant shapes, want the 25 of MANIFEST.md", len(files))
	}
	return files
}

func readCorpus(t testing.TB, rel string) []byte {
	t.Helper()
	data, err := os.ReadFile(testcorpus.File(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func rel(path string) string {
	corpusDir, _ := testcorpus.Find("corpus") // corpusFiles found it
	r, _ := filepath.Rel(corpusDir, path)
	return filepath.ToSlash(r)
}

// decoded is everything a decoder gave for one input.
type decoded struct {
	traces []*trace.Trace
	errs   []*decoding.Error
	meta   json.RawMessage
}

// decodeAll reads every trace, skipping Recoverable errors.
func decodeAll(t testing.TB, data []byte, file string) decoded {
	t.Helper()
	var out decoded
	dec := NewDecoder(bytes.NewReader(data), file)
	for i := 0; ; i++ {
		if i > len(data)+10 {
			t.Fatalf("decoder does not stop")
		}
		tr, err := dec.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var de *decoding.Error
			if !errors.As(err, &de) {
				t.Fatalf("error %v (%T) is not a *decoding.Error", err, err)
			}
			out.errs = append(out.errs, de)
			if !de.Recoverable {
				if _, err := dec.Next(); !errors.Is(err, io.EOF) {
					t.Fatalf("after a fatal error Next gave %v, want io.EOF", err)
				}
				break
			}
			continue
		}
		if tr == nil {
			t.Fatalf("Next returned neither a trace nor an error")
		}
		out.traces = append(out.traces, tr)
	}
	out.meta = dec.DatasetMetadata()
	return out
}

// ---- the reference: the same shapes read with encoding/json ----

type refTrace struct {
	events, toolCalls, toolOutputs, spans int
	metadata                              any // decoded trace metadata, nil when none
	index                                 any // json.Number or nil
}

type refFile struct {
	traces  []refTrace
	dataset any // dataset metadata, nil when none
}

func jsonValue(t testing.TB, data []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("reference decode: %v", err)
	}
	return v
}

func refEvents(list []any) refTrace {
	var r refTrace
	for _, e := range list {
		m := e.(map[string]any)
		r.events++
		if calls, ok := m["tool_calls"].([]any); ok {
			r.toolCalls += len(calls)
		}
		if m["role"] == "tool" {
			r.toolOutputs++
		}
	}
	return r
}

// refRawList is a raw event list whose first element may be {"metadata": ...}.
func refRawList(list []any) refTrace {
	var meta any
	if len(list) > 0 {
		if m, ok := list[0].(map[string]any); ok && len(m) == 1 && m["metadata"] != nil {
			meta = m["metadata"]
			list = list[1:]
		}
	}
	r := refEvents(list)
	r.metadata = meta
	return r
}

func refTraceObject(m map[string]any) refTrace {
	r := refEvents(m["messages"].([]any))
	r.metadata = m["metadata"]
	r.index = m["index"]
	return r
}

// reference reads a corpus file the simple way: whole-file values with
// encoding/json, lines split on '\n' for JSONL.
func reference(t testing.TB, data []byte) refFile {
	var f refFile
	if json.Valid(data) {
		switch v := jsonValue(t, data).(type) {
		case []any:
			if first, ok := v[0].(map[string]any); ok && first["traj"] != nil {
				for _, run := range v {
					m := run.(map[string]any)
					r := refEvents(m["traj"].([]any))
					meta := map[string]any{}
					for k, x := range m {
						if k != "traj" {
							meta[k] = x
						}
					}
					r.metadata = meta
					f.traces = append(f.traces, r)
				}
				return f
			}
			f.traces = append(f.traces, refRawList(v))
		case map[string]any:
			switch {
			case v["messages"] != nil:
				f.traces = append(f.traces, refTraceObject(v))
			case v["history"] != nil:
				r := refEvents(v["history"].([]any))
				if steps, ok := v["trajectory"].([]any); ok {
					r.spans = len(steps)
				}
				meta := map[string]any{}
				if info, ok := v["info"].(map[string]any); ok {
					for k, x := range info {
						meta[k] = x
					}
				}
				for k, x := range v {
					if k != "history" && k != "trajectory" && k != "info" {
						meta[k] = x
					}
				}
				if len(meta) > 0 {
					r.metadata = meta
				}
				f.traces = append(f.traces, r)
			case v["role"] != nil:
				f.traces = append(f.traces, refEvents([]any{v}))
			}
		}
		return f
	}
	for i, line := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		switch v := jsonValue(t, []byte(line)).(type) {
		case []any:
			f.traces = append(f.traces, refRawList(v))
		case map[string]any:
			if _, ok := v["messages"]; !ok {
				if i != 0 {
					t.Fatalf("reference: metadata row on line %d of a valid file", i+1)
				}
				f.dataset = v["metadata"]
				continue
			}
			f.traces = append(f.traces, refTraceObject(v))
		}
	}
	return f
}

// rejected are the Explorer fixtures that must fail, with the rule and line.
var rejected = map[string]struct {
	msg  string
	line int
	// traces still decoded when the rejected line is skipped
	traces int
}{
	"openai/explorer/duplicate_index.jsonl":                 {"duplicate index found: 811", 4, 2},
	"openai/explorer/inconsistent_index_presence.jsonl":     {"has no \"index\", but line 2 has one", 4, 2},
	"openai/explorer/incorrect_index_type.jsonl":            {"index must be an integer", 2, 0},
	"openai/explorer/metadata_not_in_first_row.jsonl":       {"metadata row must be the first row", 2, 1},
	"openai/explorer/mixed_format.jsonl":                    {"cannot contain both raw event lists and trace objects", 3, 1},
	"openai/explorer/trace_with_incorrect_annotation.jsonl": {"failed to parse annotation", 2, 0},
	"openai/explorer/two_metadata_rows.jsonl":               {"metadata row can appear at most once", 3, 1},
}

func TestCorpus(t *testing.T) {
	for _, path := range corpusFiles(t) {
		name := rel(path)
		t.Run(name, func(t *testing.T) {
			data := readCorpus(t, name)
			got := decodeAll(t, data, name)
			if want, ok := rejected[name]; ok {
				if len(got.errs) != 1 {
					t.Fatalf("want exactly one rejected line, got %d errors: %v", len(got.errs), got.errs)
				}
				e := got.errs[0]
				if !strings.Contains(e.Msg, want.msg) || e.Line != want.line || e.File != name || !e.Recoverable {
					t.Fatalf("got %v (line %d, recoverable %v), want %q on line %d, recoverable", e, e.Line, e.Recoverable, want.msg, want.line)
				}
				if e.Col < 1 || e.Path == "" {
					t.Errorf("error %v lacks a column or a JSON path", e)
				}
				if len(got.traces) != want.traces {
					t.Errorf("%d traces decoded around the rejected line, want %d", len(got.traces), want.traces)
				}
				return
			}
			if len(got.errs) > 0 {
				t.Fatalf("valid file rejected: %v", got.errs)
			}
			ref := reference(t, data)
			if len(got.traces) != len(ref.traces) {
				t.Fatalf("%d traces, reference has %d", len(got.traces), len(ref.traces))
			}
			for i, tr := range got.traces {
				r := ref.traces[i]
				st := tr.Stats()
				gotC := [4]int{st.Events, st.ToolCalls, st.ToolOutputs, st.Spans}
				wantC := [4]int{r.events, r.toolCalls, r.toolOutputs, r.spans}
				if gotC != wantC {
					t.Errorf("trace %d: events/tool calls/tool outputs/spans = %v, reference %v", i, gotC, wantC)
				}
				var meta any
				if tr.Metadata != nil {
					meta = jsonValue(t, tr.Metadata)
				}
				if !reflect.DeepEqual(meta, r.metadata) {
					t.Errorf("trace %d: metadata differs from the reference:\n got  %.300s\n want %.300v", i, tr.Metadata, r.metadata)
				}
				switch {
				case r.index == nil && tr.Index != nil:
					t.Errorf("trace %d: index %d, the input has none", i, *tr.Index)
				case r.index != nil && (tr.Index == nil || r.index.(json.Number).String() != itoa(*tr.Index)):
					t.Errorf("trace %d: index %v, want %v", i, tr.Index, r.index)
				}
			}
			var meta any
			if got.meta != nil {
				meta = jsonValue(t, got.meta)
			}
			if !reflect.DeepEqual(meta, ref.dataset) {
				t.Errorf("dataset metadata %s, reference %v", got.meta, ref.dataset)
			}
		})
	}
}

// TestCorpusTotals pins the reference itself to MANIFEST.md, so that a bug
// shared by the reference and the decoder cannot hide.
func TestCorpusTotals(t *testing.T) {
	for _, tc := range []struct {
		file           string
		traces, events int
	}{
		{"openai/tau-bench/gpt-4o-airline.json", 200, 5308},
		{"openai/explorer/sample_data.jsonl", 3, 17},
		{"openai/explorer/webarena.jsonl", 2, 29},
		{"openai/explorer/code.jsonl", 1, 14},
		{"openai/swe-agent/marshmallow-1867__function_calling_replace_from_source.traj", 1, 28},
		{"seeds/invariant-inbox.json", 1, 4},
		{"seeds/invariant-email-toolcall.json", 1, 1},
	} {
		got := decodeAll(t, readCorpus(t, tc.file), tc.file)
		n := 0
		for _, tr := range got.traces {
			n += len(tr.Events)
		}
		if len(got.traces) != tc.traces || n != tc.events || len(got.errs) > 0 {
			t.Errorf("%s: %d traces, %d events, errors %v; manifest says %d, %d", tc.file, len(got.traces), n, got.errs, tc.traces, tc.events)
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestCorpusRoundTrip: decode → encode → decode gives identical canonical
// JSON for every valid corpus file, and canonical JSON reads back itself.
func TestCorpusRoundTrip(t *testing.T) {
	for _, path := range corpusFiles(t) {
		name := rel(path)
		if _, bad := rejected[name]; bad {
			continue
		}
		t.Run(name, func(t *testing.T) {
			got := decodeAll(t, readCorpus(t, name), name)
			if len(got.errs) > 0 || len(got.traces) == 0 {
				t.Fatalf("errors %v, %d traces", got.errs, len(got.traces))
			}
			roundTrip(t, got.traces, got.meta)
		})
	}
}

// roundTrip encodes traces (with dataset metadata meta) and decodes them
// again, requiring identical canonical JSON, and checks that canonical JSON
// reads back to itself.
func roundTrip(t *testing.T, traces []*trace.Trace, meta json.RawMessage) {
	t.Helper()
	var buf bytes.Buffer
	enc := NewEncoder(&buf)
	if err := enc.WriteDatasetMetadata(meta); err != nil {
		t.Fatalf("WriteDatasetMetadata: %v", err)
	}
	for i, tr := range traces {
		if err := enc.Encode(tr); err != nil {
			t.Fatalf("Encode trace %d: %v", i, err)
		}
	}
	if err := enc.Flush(); err != nil {
		t.Fatal(err)
	}
	back := decodeAll(t, buf.Bytes(), "encoded.jsonl")
	if len(back.errs) > 0 {
		t.Fatalf("the encoder's output does not decode: %v\n%.2000s", back.errs, buf.Bytes())
	}
	if !bytes.Equal(meta, back.meta) {
		t.Fatalf("dataset metadata changed: %s → %s", meta, back.meta)
	}
	if len(back.traces) != len(traces) {
		t.Fatalf("%d traces written, %d read back", len(traces), len(back.traces))
	}
	for i := range traces {
		a := trace.AppendTrace(nil, traces[i])
		b := trace.AppendTrace(nil, back.traces[i])
		if !bytes.Equal(a, b) {
			t.Fatalf("trace %d changed in the round trip:\n before %.3000s\n after  %.3000s", i, a, b)
		}
		var c trace.Trace
		if err := c.UnmarshalJSON(a); err != nil {
			t.Fatalf("trace %d: canonical JSON does not read back: %v\n%.2000s", i, err, a)
		}
		if d := trace.AppendTrace(nil, &c); !bytes.Equal(a, d) {
			t.Fatalf("trace %d: canonical JSON changed when read back:\n before %.3000s\n after  %.3000s", i, a, d)
		}
	}
}
