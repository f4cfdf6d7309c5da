package invariant

import (
	"bytes"
	"os"
	"testing"

	"github.com/lookout-dev/lookout/internal/trace"
)

// FuzzDecode: no input makes the decoder panic or loop; every error is
// placed; every decoded trace survives canonical JSON and the Invariant
// encoder unchanged.
func FuzzDecode(f *testing.F) {
	for _, path := range corpusFiles(f) {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{
		``,
		`[]`,
		`{}`,
		`[{"metadata": {"a": 1}}, {"role": "user", "content": "x"}]`,
		`[{"metadata": 1}]`,
		`{"role": "assistant", "content": null, "tool_calls": [{"function": {"name": "f", "arguments": "{\"a\": 1}"}}]}`,
		`{"messages": [], "index": 1, "name": "n", "id": "i", "annotations": [{"address": "messages[0]", "content": "c"}], "spans": [{"id": "s", "start_time": "2024-01-01T00:00:00Z"}], "x": 1}`,
		"{\"metadata\": {}}\n{\"messages\": [], \"index\": 1}\n{\"messages\": [], \"index\": 1}\n",
		"{\"metadata\": {}}\n[]\n{\"messages\": []}\n{\"metadata\": {}}\n",
		"[{\"role\": \"user\", \"content\": \"a}]\n[]\n",
		`[{"traj": [{"role": "user", "content": [{"type": "text", "text": "x"}, {"type": "image", "image_url": {"url": "u"}}]}], "task_id": 1}, {"messages": []}]`,
		`{"history": [{"role": "tool", "content": "x", "tool_call_ids": ["a"]}], "trajectory": [{"action": "ls -l", "observation": "o", "state": {}}], "info": {"a": 1}, "b": 2}`,
		`{"messages": [{"role": "", "tool_calls": [], "tool_call_id": "", "span_id": 5, "content": [{"type": "", "text": "t"}]}]}`,
		"\xef\xbb\xbf[1]\n\"x\"\n",
		`{"messages": [], "spans": [{"id": "s", "start_time": "0000-01-01T00:30:00+01:00", "end_time": "9999-12-31T23:00:00-00:59"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got := decodeAll(t, data, "fuzz.jsonl")
		for _, e := range got.errs {
			if e.File != "fuzz.jsonl" || e.Line < 1 || e.Col < 1 || e.Msg == "" {
				t.Fatalf("error not placed: %#v", e)
			}
		}
		for i, tr := range got.traces {
			a := trace.AppendTrace(nil, tr)
			var c trace.Trace
			if err := c.UnmarshalJSON(a); err != nil {
				t.Fatalf("trace %d: canonical JSON does not read back: %v\n%s", i, err, a)
			}
			if b := trace.AppendTrace(nil, &c); !bytes.Equal(a, b) {
				t.Fatalf("trace %d: canonical round trip changed it:\n%s\n%s", i, a, b)
			}
		}
		if len(got.traces) > 0 || got.meta != nil {
			roundTrip(t, got.traces, got.meta)
		}
	})
}
