package invariant

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/lookout-dev/lookout/internal/formats/decoding"
	"github.com/lookout-dev/lookout/internal/trace"
)

// wantErr is one expected error. The column is given by a marker: the
// error's column is where at first occurs on its line ("" is column 1,
// "EOL" just past the line's end).
type wantErr struct {
	line        int
	at          string
	path        string
	msg         string
	recoverable bool
	trace       int
}

func (w wantErr) col(t *testing.T, input string) int {
	t.Helper()
	lines := strings.Split(input, "\n")
	if w.line < 1 || w.line > len(lines) {
		t.Fatalf("bad test: line %d", w.line)
	}
	l := lines[w.line-1]
	switch w.at {
	case "":
		return 1
	case "EOL":
		return len(l) + 1
	}
	i := strings.Index(l, w.at)
	if i < 0 {
		t.Fatalf("bad test: %q not on line %d", w.at, w.line)
	}
	return i + 1
}

func TestDecodeShapesAndErrors(t *testing.T) {
	const file = "in.jsonl"
	cases := []struct {
		name   string
		in     string
		events []int // events of each trace, in order
		errs   []wantErr
		meta   string
	}{
		{
			name: "bad JSON on line 3 of a JSONL",
			in: `{"messages": [{"role": "user", "content": "a"}]}
{"messages": [{"role": "user", "content": "b"}]}
{"messages": [{"role": "user", "content": "c",}]}
{"messages": [{"role": "user", "content": "d"}, {"role": "assistant"}]}`,
			events: []int{1, 1, 2},
			errs:   []wantErr{{3, `}]}`, "$.messages[0].content", "invalid character '}', expected an object key", true, 2}},
		},
		{
			name: "unterminated string on line 3: the line is skipped",
			in: `[{"role": "user", "content": "a"}]
[{"role": "user", "content": "b"}]
[{"role": "user", "content": "c}]
[{"role": "user", "content": "d"}]
`,
			events: []int{1, 1, 1},
			errs:   []wantErr{{3, "EOL", "", "unterminated string", true, 2}},
		},
		{
			name: "broken first line of a JSONL",
			in: `{"messages": [{"role": "user", "content": "a}]}
{"messages": []}
{"messages": []}`,
			events: []int{0, 0},
			errs:   []wantErr{{1, "EOL", "", "unterminated string", true, 0}},
		},
		{
			name:   "wrong type deep inside a JSONL line",
			in:     "{\"metadata\": {\"d\": 1}}\n{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}, {\"role\": \"assistant\", \"tool_calls\": [{\"function\": 5}]}]}\n{\"messages\": []}",
			events: []int{0},
			errs:   []wantErr{{2, "5}", "$.messages[1].tool_calls[0].function", "function must be an object, not a number", true, 0}},
			meta:   `{"d":1}`,
		},
		{
			name: "wrong type deep inside a list of runs",
			in: `[
 {"traj": [{"role": "user", "content": "a"}], "task_id": 0},
 {"traj": []},
 {"traj": []},
 {"traj": [{"role": 5}], "task_id": 3},
 {"traj": []}
]`,
			events: []int{1, 0, 0, 0},
			errs:   []wantErr{{5, "5}", "$[3].traj[0].role", "role must be a string, not number", true, 3}},
		},
		{
			name: "a run without events",
			in: `[{"traj": [], "a": 1},
 {"task_id": 1},
 7]`,
			events: []int{0},
			errs: []wantErr{
				{2, `{"task_id"`, "$[1]", `this run has no "traj" or "messages" list of events`, true, 1},
				{3, "7", "$[2]", "must be an object holding", true, 2},
			},
		},
		{
			name: "malformed element ends a list of runs",
			in: `[{"traj": []},
 {"traj": [], "x": tru},
 {"traj": []}]`,
			events: []int{0},
			errs:   []wantErr{{2, "tru", "$[1].x", "expected true or false", false, 1}},
		},
		{
			name:   "a list of runs must be the whole input",
			in:     "[{\"traj\": []}, {\"messages\": [{\"role\": \"user\"}], \"x\": 1}]\n{\"messages\": []}",
			events: []int{0, 1},
			errs:   []wantErr{{2, "", "", "a list of runs must be the only JSON value", false, -1}},
		},
		{
			name: "pretty-printed single trace with an error is fatal",
			in: `{
  "messages": [
    {"role": "user", "content": "x"},
    {"role": "assistant", "content": 5}
  ]
}`,
			errs: []wantErr{{4, "5}", "$.messages[1].content", "content must be null, a string or a list of parts, not number", false, 0}},
		},
		{
			name:   "index must be an integer: fraction",
			in:     "{\"index\": 1.5, \"messages\": []}\n{\"index\": 2, \"messages\": []}",
			events: []int{0},
			errs:   []wantErr{{1, "1.5", "$.index", "index must be an integer, not 1.5", true, 0}},
		},
		{
			name:   "index must be an integer: null, in a single trace",
			in:     `{"messages": [], "index": null}`,
			errs:   []wantErr{{1, "null", "$.index", "index must be an integer, not null", false, 0}},
			events: nil,
		},
		{
			name:   "index missing first, present later",
			in:     "{\"messages\": []}\n{\"messages\": [], \"index\": 3}\n{\"messages\": []}",
			events: []int{0, 0},
			errs:   []wantErr{{2, "3}", "$.index", `"index" is given here but not on line 1`, true, 1}},
		},
		{
			name:   "duplicate index",
			in:     "{\"messages\": [], \"index\": 3}\n{\"messages\": [], \"index\": 4}\n{\"messages\": [], \"index\": 3}",
			events: []int{0, 0},
			errs:   []wantErr{{3, "3}", "$.index", "duplicate index found: 3 (also on line 1)", true, 2}},
		},
		{
			name:   "raw list after trace objects",
			in:     "{\"messages\": []}\n[]\n{\"messages\": []}",
			events: []int{0, 0},
			errs:   []wantErr{{2, "", "$", "this line is a raw event list, but line 1 is a trace object", true, 1}},
		},
		{
			name:   "raw event list with trace metadata first",
			in:     `[{"metadata": {"name": "run 1"}}, {"role": "user", "content": "x"}]`,
			events: []int{1},
		},
		{
			name:   "first element with metadata and more is an event",
			in:     `[{"metadata": {"a": 1}, "role": "user"}, {"role": "user", "content": "x"}]`,
			events: []int{2},
		},
		{
			name: "trace metadata element must hold an object",
			in:   `[{"metadata": 3}, {"role": "user", "content": "x"}]`,
			errs: []wantErr{{1, `{"metadata"`, "$[0]", "must be an object, not a number", false, 0}},
		},
		{
			name: "JSONL of single events",
			in:   "{\"role\": \"user\", \"content\": \"a\"}\n{\"role\": \"assistant\", \"content\": \"b\"}\n[{\"role\": \"user\"}]",
			errs: []wantErr{
				{1, "", "$", "this object is a single event", true, 0},
				{2, "", "$", "this object is a single event", true, 1},
			},
			events: []int{1},
		},
		{
			name:   "metadata row with another member",
			in:     "{\"metadata\": {\"a\": 1}, \"name\": \"ds\"}\n[]",
			events: []int{0},
			errs:   []wantErr{{1, `"ds"`, "$", `a metadata row holds only "metadata", but it has "name" too`, true, -1}},
		},
		{
			name:   "metadata row must hold an object",
			in:     "{\"metadata\": null}\n[]",
			events: []int{0},
			errs:   []wantErr{{1, "null", "$.metadata", "the dataset metadata must be an object", true, -1}},
		},
		{
			name:   "metadata row only: a dataset without traces",
			in:     `{"metadata": {"description": "empty"}}`,
			meta:   `{"description":"empty"}`,
			events: nil,
		},
		{
			name:   "object without messages in JSONL",
			in:     "{\"messages\": []}\n{\"foo\": 1}",
			events: []int{0},
			errs:   []wantErr{{2, "", "$", `this object has no "messages" list`, true, 1}},
		},
		{
			name:   "a scalar line",
			in:     "[]\n42\n[]",
			events: []int{0, 0},
			errs:   []wantErr{{2, "", "$", "this line is a number", true, 1}},
		},
		{
			name: "a scalar input",
			in:   "true",
			errs: []wantErr{{1, "", "$", "the input is a boolean", false, 0}},
		},
		{
			name: "an unknown object",
			in:   `{"foo": 1}`,
			errs: []wantErr{{1, "", "$", `this object has no "messages" list`, false, 0}},
		},
		{
			name: "empty input",
			in:   " \n\t\n",
		},
		{
			name:   "empty event list is one empty trace",
			in:     "[]",
			events: []int{0},
		},
		{
			name:   "nulls for optional trace members",
			in:     `{"messages": [], "name": null, "id": null, "annotations": null, "spans": null, "metadata": null}`,
			events: []int{0},
		},
		{
			name: "name must be a string",
			in:   `{"messages": [], "name": 5}`,
			errs: []wantErr{{1, "5}", "$.name", "name must be a string, not a number", false, 0}},
		},
		{
			name: "messages must be a list",
			in:   `{"messages": "hi"}`,
			errs: []wantErr{{1, `"hi"`, "$.messages", "messages must be an array, not a string", false, 0}},
		},
		{
			name: "SWE-agent trajectory followed by more JSON",
			in:   "{\"history\": [{\"role\": \"user\", \"content\": \"a\"}]}\n{\"messages\": [{\"role\": \"user\"}]}",
			errs: []wantErr{{1, "", "$", "a SWE-agent trajectory (an object with \"history\") must be the whole file", true, 0}},
			// the second line is a trace
			events: []int{1},
		},
		{
			name: "SWE-agent step that is not an object",
			in:   `{"history": [], "trajectory": [{"action": "ls"}, "x"]}`,
			errs: []wantErr{{1, `"x"`, "$.trajectory[1]", "trajectory step must be an object, not a string", false, 0}},
		},
		{
			name: "annotation without content",
			in:   "{\"messages\": [], \"annotations\": [{\"address\": \"messages[0]\"}]}\n{\"messages\": []}",
			errs: []wantErr{{1, `{"address"`, "$.annotations[0]", "failed to parse annotation", true, 0}},
			// the second line still decodes
			events: []int{0},
		},
		{
			name: "span time that canonical JSON cannot write back",
			in:   `{"messages": [], "spans": [{"id": "a", "start_time": "2024-01-01T00:00:00+01:00"}, {"id": "s", "end_time": "0000-01-01T00:00:00+01:00"}]}`,
			errs: []wantErr{{1, `"0000-01-01`, "$.spans[1].end_time", `end_time "0000-01-01T00:00:00+01:00" is outside the years 0000-9999 in UTC`, false, 0}},
		},
		{
			name:   "byte order mark",
			in:     "\xef\xbb\xbf[{\"role\": \"user\", \"content\": \"x\"}]",
			events: []int{1},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := decodeAll(t, []byte(tc.in), file)
			var evs []int
			for _, tr := range got.traces {
				evs = append(evs, len(tr.Events))
			}
			if fmt.Sprint(evs) != fmt.Sprint(tc.events) {
				t.Errorf("events per trace %v, want %v", evs, tc.events)
			}
			if string(got.meta) != tc.meta {
				t.Errorf("dataset metadata %s, want %s", got.meta, tc.meta)
			}
			if len(got.errs) != len(tc.errs) {
				t.Fatalf("errors %v, want %d", got.errs, len(tc.errs))
			}
			for i, w := range tc.errs {
				e := got.errs[i]
				col := w.col(t, tc.in)
				if e.File != file || e.Line != w.line || e.Col != col || e.Path != w.path || !strings.Contains(e.Msg, w.msg) ||
					e.Recoverable != w.recoverable || e.Trace != w.trace {
					t.Errorf("error %d:\n got  %v (recoverable %v, trace %d)\n want %s:%d:%d: %s: %s (recoverable %v, trace %d)",
						i, e, e.Recoverable, e.Trace, file, w.line, col, w.path, w.msg, w.recoverable, w.trace)
				}
				prefix := fmt.Sprintf("%s:%d:%d: ", file, w.line, col)
				if w.path != "" {
					prefix += w.path + ": "
				}
				if !strings.HasPrefix(e.Error(), prefix) {
					t.Errorf("error text %q does not start with %q", e.Error(), prefix)
				}
			}
		})
	}
}

// TestRawEventListMetadata checks where the first-element metadata goes.
func TestRawEventListMetadata(t *testing.T) {
	got := decodeAll(t, []byte("[{\"metadata\": {\"name\": \"run 1\"}}, {\"role\": \"user\", \"content\": \"x\"}]\n[{\"role\": \"user\"}]"), "f")
	if len(got.errs) > 0 || len(got.traces) != 2 {
		t.Fatalf("%v %d", got.errs, len(got.traces))
	}
	if string(got.traces[0].Metadata) != `{"name":"run 1"}` || got.traces[0].Name != "" || got.traces[1].Metadata != nil {
		t.Errorf("metadata %s / %s, name %q", got.traces[0].Metadata, got.traces[1].Metadata, got.traces[0].Name)
	}
}

func TestSWEAgentEdgeCases(t *testing.T) {
	in := `{"environment": "main", "history": [
  {"role": "assistant", "content": "", "tool_calls": [{"id": "a", "type": "function", "function": {"name": "x", "arguments": "{}"}}, {"id": "b", "type": "function", "function": {"name": "y", "arguments": "{}"}}]},
  {"role": "tool", "content": "both", "tool_call_ids": ["a", "b"]},
  {"role": "tool", "content": "own id", "tool_call_id": "c", "tool_call_ids": ["a"]},
  {"role": "tool", "content": "one", "tool_call_ids": ["b"]}
 ],
 "trajectory": [{"action": "  \n", "observation": null, "extra": 1}, {"thought": "t"}],
 "info": {"environment": "other", "exit_status": "submitted"}}`
	got := decodeAll(t, []byte(in), "x.traj")
	if len(got.errs) > 0 || len(got.traces) != 1 {
		t.Fatalf("%v", got.errs)
	}
	tr := got.traces[0]
	if ids := []string{tr.Events[1].ToolCallID, tr.Events[2].ToolCallID, tr.Events[3].ToolCallID}; fmt.Sprint(ids) != "[ c b]" {
		t.Errorf("tool call ids %q", ids)
	}
	// "environment" is in info and at the top: info stays nested.
	if string(tr.Metadata) != `{"environment":"main","info":{"environment":"other","exit_status":"submitted"}}` {
		t.Errorf("metadata %s", tr.Metadata)
	}
	s0, s1 := tr.Spans[0], tr.Spans[1]
	if s0.Name != "step 0" || string(s0.Outputs) != "null" || string(s0.Attributes) != `{"extra":1}` || string(s0.Inputs) != `{"action":"  \n"}` {
		t.Errorf("step 0: %q %s %s %s", s0.Name, s0.Outputs, s0.Attributes, s0.Inputs)
	}
	if s1.Name != "step 1" || s1.Outputs != nil || s1.Attributes != nil || string(s1.Inputs) != `{"thought":"t"}` {
		t.Errorf("step 1: %q %s %s %s", s1.Name, s1.Outputs, s1.Attributes, s1.Inputs)
	}
	roundTrip(t, got.traces, got.meta)
}

// TestRunListWithMessages: a run may hold its events under "messages";
// everything else is metadata.
func TestRunListWithMessages(t *testing.T) {
	in := `[{"id": 1, "messages": [{"role": "user", "content": "a"}], "reward": 1.0, "traj": "not a list"},
 {"messages": [], "traj": [{"role": "user", "content": "b"}]}]`
	got := decodeAll(t, []byte(in), "runs.json")
	if len(got.errs) > 0 || len(got.traces) != 2 {
		t.Fatalf("%v %d", got.errs, len(got.traces))
	}
	if m := string(got.traces[0].Metadata); m != `{"id":1,"reward":1.0,"traj":"not a list"}` || got.traces[0].Events[0].Content.Text != "a" {
		t.Errorf("run 0: metadata %s", m)
	}
	if m := string(got.traces[1].Metadata); m != `{"messages":[]}` || got.traces[1].Events[0].Content.Text != "b" {
		t.Errorf("run 1: metadata %s", m)
	}
	roundTrip(t, got.traces, got.meta)
}

// TestMetadataRowDetection: a metadata row is told from a trace by
// structure, even when its metadata holds event-like keys.
func TestMetadataRowDetection(t *testing.T) {
	in := "{\"metadata\": {\"role\": \"user\", \"messages\": [], \"tool_calls\": [1]}}\n{\"messages\": [{\"role\": \"user\"}], \"metadata\": {\"tool_calls\": []}}"
	got := decodeAll(t, []byte(in), "f")
	if len(got.errs) > 0 || len(got.traces) != 1 {
		t.Fatalf("%v", got.errs)
	}
	if string(got.meta) != `{"role":"user","messages":[],"tool_calls":[1]}` || string(got.traces[0].Metadata) != `{"tool_calls":[]}` {
		t.Errorf("dataset %s, trace %s", got.meta, got.traces[0].Metadata)
	}
}

// TestFatalThenEOF: after a fatal error the decoder gives io.EOF only.
func TestFatalThenEOF(t *testing.T) {
	dec := NewDecoder(strings.NewReader("{\n \"messages\": 1\n}\n"), "f")
	_, err := dec.Next()
	var de *decoding.Error
	if !errors.As(err, &de) || de.Recoverable || de.Line != 2 {
		t.Fatalf("got %v", err)
	}
	for range 3 {
		if _, err := dec.Next(); err != io.EOF {
			t.Fatalf("after a fatal error: %v", err)
		}
	}
}

// TestStreaming: a JSONL input is read one line at a time: the decoder
// hands out the first trace before the reader has given the rest.
func TestStreaming(t *testing.T) {
	line := []byte(`{"messages": [{"role": "user", "content": "` + strings.Repeat("x", 1000) + `"}]}` + "\n")
	r := &countingReader{line: line, lines: 100000}
	dec := NewDecoder(r, "big.jsonl")
	for i := 0; i < 3; i++ {
		if _, err := dec.Next(); err != nil {
			t.Fatal(err)
		}
	}
	if r.read > 1<<20 {
		t.Errorf("read %d bytes to give 3 traces of a %d-byte input", r.read, len(line)*r.lines)
	}
	n := 3
	for {
		_, err := dec.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != r.lines {
		t.Errorf("%d traces, want %d", n, r.lines)
	}
}

type countingReader struct {
	line  []byte
	lines int
	done  int
	off   int
	read  int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) && c.done < c.lines {
		k := copy(p[n:], c.line[c.off:])
		n += k
		c.off += k
		if c.off == len(c.line) {
			c.off = 0
			c.done++
		}
	}
	c.read += n
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

// TestEventsNotAliased: decoded traces own their memory; the reader's buffer
// is reused for the next lines.
func TestEventsNotAliased(t *testing.T) {
	var in bytes.Buffer
	for i := range 2000 {
		fmt.Fprintf(&in, `{"messages": [{"role": "user", "content": "line %d", "x": {"n": %d}}], "metadata": {"i": %d}, "k": [%d]}`+"\n", i, i, i, i)
	}
	got := decodeAll(t, in.Bytes(), "f")
	if len(got.errs) > 0 || len(got.traces) != 2000 {
		t.Fatal(got.errs)
	}
	for i, tr := range got.traces {
		want := fmt.Sprintf(`{"metadata":{"i":%d},"events":[{"role":"user","content":"line %d","x":{"n":%d}}],"k":[%d]}`, i, i, i, i)
		if got := string(trace.AppendTrace(nil, tr)); got != want {
			t.Fatalf("trace %d: %s, want %s", i, got, want)
		}
	}
}

// TestManyRejectedRunsIsLinear: placing each rejected element of a list of
// runs costs its own bytes, not all those before it (200,000 errors in a
// 1.2 MB list take well under a second; counting lines from the start of
// the list each time would take minutes).
func TestManyRejectedRunsIsLinear(t *testing.T) {
	const n = 200000
	in := []byte(`[{"traj": []}` + strings.Repeat(",\n 1", n) + "]")
	start := time.Now()
	got := decodeAll(t, in, "runs.json")
	if len(got.traces) != 1 || len(got.errs) != n {
		t.Fatalf("%d traces, %d errors", len(got.traces), len(got.errs))
	}
	last := got.errs[n-1]
	if last.Line != n+1 || last.Col != 2 || last.Path != fmt.Sprintf("$[%d]", n) || last.Trace != n {
		t.Errorf("last error %v (trace %d)", last, last.Trace)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("took %v", d)
	}
}

func TestScanKeys(t *testing.T) {
	for _, tc := range []struct {
		in   string
		keys string // key=first byte of value, ...
		ok   bool
	}{
		{`{"a": 1, "b": [1, {"c": 2}], "d": "x}]\"", "e\u0041": null, "f":{"g":[]}}`, `a=1 b=[ d=" eA=n f={`, true},
		{` { } `, ``, true},
		{`{"a\"b" :true}`, `a"b=t`, true},
		{`{"a\\": "b\\\\", "c": "\"", "d": 1}`, `a\=" c=" d=1`, true},
		{`{"a" 1}`, ``, false},
		{`{"a": "unterminated}`, `a="`, false},
		{`{"a": [1, 2}`, `a=[`, false},
		{`{"a": 1 "b": 2}`, `a=1`, false},
		{`[{"a": 1}]`, ``, false},
		{`{"a": 1,`, `a=1`, false},
	} {
		var got []string
		ok := scanKeys([]byte(tc.in), skipSpace([]byte(tc.in), 0), func(k []byte, v byte) {
			got = append(got, string(k)+"="+string(v))
		})
		if strings.Join(got, " ") != tc.keys || ok != tc.ok {
			t.Errorf("%s: keys %q ok %v, want %q %v", tc.in, strings.Join(got, " "), ok, tc.keys, tc.ok)
		}
	}
}

// TestRunListInPlace: elements of a list of runs decoded in place from the
// reader's buffer (runInPlace) equal the same elements decoded alone by the
// structural path, whatever the reader's read sizes, for runs larger than
// the first read-ahead and larger than the largest, and errors after them
// are placed as before.
func TestRunListInPlace(t *testing.T) {
	var elems []json.RawMessage
	if err := json.Unmarshal(readCorpus(t, "openai/tau-bench/gpt-4o-airline.json"), &elems); err != nil {
		t.Fatal(err)
	}
	elems = elems[:20]
	big := func(n int) json.RawMessage {
		return json.RawMessage(`{"traj": [{"role": "user", "content": "` + strings.Repeat(`a\"b `, n/5) + `"}], "task_id": "big"}`)
	}
	elems = append(elems, big(minInPlace*3), elems[0], big(maxInPlace+1), elems[1])
	var in bytes.Buffer
	in.WriteString("[\n")
	for i, e := range elems {
		if i > 0 {
			in.WriteString(",\n")
		}
		in.Write(e)
	}
	in.WriteString(",\n")
	brokenLine := bytes.Count(in.Bytes(), []byte("\n")) + 1
	in.WriteString("{\"traj\": [{\"role\": 5}]}\n]")
	var want [][]byte
	for i, e := range elems {
		got := decodeAll(t, append(append([]byte("["), e...), ']'), "one.json")
		if len(got.errs) > 0 || len(got.traces) != 1 {
			t.Fatalf("element %d alone: %v", i, got.errs)
		}
		want = append(want, trace.AppendTrace(nil, got.traces[0]))
	}
	readers := map[string]func([]byte) io.Reader{
		"whole":    func(b []byte) io.Reader { return bytes.NewReader(b) },
		"one byte": func(b []byte) io.Reader { return iotest.OneByteReader(bytes.NewReader(b)) },
		"halves":   func(b []byte) io.Reader { return iotest.HalfReader(bytes.NewReader(b)) },
	}
	for name, r := range readers {
		t.Run(name, func(t *testing.T) {
			dec := NewDecoder(r(in.Bytes()), "runs.json")
			for i := range want {
				tr, err := dec.Next()
				if err != nil {
					t.Fatalf("run %d: %v", i, err)
				}
				if got := trace.AppendTrace(nil, tr); !bytes.Equal(got, want[i]) {
					t.Fatalf("run %d differs from the element decoded alone:\n%.300s\n%.300s", i, got, want[i])
				}
			}
			_, err := dec.Next()
			var de *decoding.Error
			if !errors.As(err, &de) || de.Trace != len(want) || de.Path != fmt.Sprintf("$[%d].traj[0].role", len(want)) || !de.Recoverable || de.Line != brokenLine || de.Col != 20 {
				t.Fatalf("broken last run: %#v", err)
			}
			if _, err := dec.Next(); !errors.Is(err, io.EOF) {
				t.Fatalf("after the last run: %v, want io.EOF", err)
			}
		})
	}
}
