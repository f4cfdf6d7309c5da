package otlp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lookout-dev/lookout/internal/formats/decoding"
	"github.com/lookout-dev/lookout/internal/search"
	"github.com/lookout-dev/lookout/internal/testcorpus"
	"github.com/lookout-dev/lookout/internal/trace"
)

// corpusSpans reads the spans of every OpenTelemetry corpus file (those
// TestGolden maps) and of this package's examples, grouped by trace, in
// the order the decoder gives Map.
func corpusSpans(t *testing.T) map[string][]Span {
	t.Helper()
	dir := testcorpus.Dir(t)
	files, _ := filepath.Glob(filepath.Join(dir, "otel/*/*.json"))
	out := map[string][]Span{}
	add := func(name string, spans []Span) {
		for _, sp := range spans {
			key := name + " " + sp.TraceID
			out[key] = append(out[key], sp)
		}
	}
	for _, path := range files {
		if strings.HasSuffix(path, ".chatml.json") {
			continue
		}
		name, _ := filepath.Rel(dir, path)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		vr := decoding.NewValueReader(bytes.NewReader(data), name)
		d := &decoder{}
		for i := 0; ; i++ {
			v, err := vr.Next(i)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			shape, err := shapeOf(v.Data)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if shape == "langfuse" {
				lf, err := langfuseSpans(v.Data)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				d.pending = append(d.pending, lf.spans...)
				continue
			}
			d.gather(v, shape)
		}
		var spans []Span
		for _, l := range d.pending {
			spans = append(spans, l.Span)
		}
		add(name, spans)
	}
	spans, err := ParseJSON([]byte(otlpJSON))
	if err != nil {
		t.Fatal(err)
	}
	add("otlp_test", spans)
	if len(out) < 27 {
		t.Fatalf("%d traces in the corpus, want at least one a file", len(out))
	}
	return out
}

// TestAssembleTrace: the spans of every corpus trace, mapped apart in
// several parts, kept in their binary form and assembled, make the trace
// MapTrace makes of them: the same canonical JSON and the same search
// document.
func TestAssembleTrace(t *testing.T) {
	for name, spans := range corpusSpans(t) {
		want, err := MapTrace(spans)
		if err != nil {
			continue // the decoder rejects it; TestAssembleProblems covers failures
		}
		for _, parts := range []int{1, 3} {
			var ms []*Mapped
			for k := range parts {
				part, err := MapSpans(spans[k*len(spans)/parts : (k+1)*len(spans)/parts])
				if err != nil {
					t.Fatalf("%s: MapSpans: %v", name, err)
				}
				for _, m := range part {
					back, err := DecodeMapped(m.AppendBinary(nil))
					if err != nil {
						t.Fatalf("%s: DecodeMapped: %v", name, err)
					}
					if !reflect.DeepEqual(back.m, m.m) && !sameMapped(back, m) {
						t.Errorf("%s: span %s changed in its binary form:\n got %+v\nwant %+v", name, m.SpanID(), back.m, m.m)
					}
					ms = append(ms, back)
				}
			}
			got, err := AssembleTrace(ms)
			if err != nil {
				t.Fatalf("%s: AssembleTrace: %v", name, err)
			}
			if g, w := trace.AppendTrace(nil, got), trace.AppendTrace(nil, want); !bytes.Equal(g, w) {
				t.Errorf("%s in %d parts: assembled trace differs:\n got %s\nwant %s", name, parts, g, w)
			}
			if g, w := search.Index(got), search.Index(want); !reflect.DeepEqual(g, w) {
				t.Errorf("%s in %d parts: search documents differ", name, parts)
			}
		}
	}
}

// sameMapped compares what DeepEqual cannot: empty and nil lists, which
// the binary form does not tell apart and no output does either.
func sameMapped(a, b *Mapped) bool {
	ev := func(es []trace.Event) string { return string(trace.AppendEvents(nil, es)) }
	x, y := &a.m, &b.m
	if x.traceID != y.traceID || x.kind != y.kind || x.structured != y.structured || ev(x.in) != ev(y.in) || ev(x.out) != ev(y.out) ||
		string(trace.AppendSpans(nil, []trace.Span{x.span})) != string(trace.AppendSpans(nil, []trace.Span{y.span})) {
		return false
	}
	if (x.tool == nil) != (y.tool == nil) {
		return false
	}
	if x.tool != nil {
		s, u := *x.tool, *y.tool
		r := func(c trace.Content) string { return ev([]trace.Event{{Content: c}}) }
		return s.id == u.id && s.name == u.name && bytes.Equal(s.args, u.args) && (s.args == nil) == (u.args == nil) &&
			s.hasResult == u.hasResult && r(s.result) == r(u.result)
	}
	return true
}

// TestAssembleProblems: AssembleTrace fails as MapTrace does for what
// spans mapped apart break together, and MapSpans where MapTrace fails
// for spans mapped at once.
func TestAssembleProblems(t *testing.T) {
	const tid = "5b8efff798038103d269b633813fc60c"
	sp := func(id, parent string) Span { return Span{TraceID: tid, SpanID: id, ParentID: parent, Name: "s"} }
	cases := []struct {
		name  string
		parts [][]Span
		want  string
	}{
		{"a loop over two requests", [][]Span{{sp("1", "2")}, {sp("2", "1")}}, "loops"},
		{"an id in two requests", [][]Span{{sp("1", "")}, {sp("1", "")}}, "used twice"},
		{"two trace ids", [][]Span{{sp("1", "")}, {{TraceID: "other", SpanID: "2"}}}, "share one trace id"},
	}
	for _, c := range cases {
		var all []Span
		var ms []*Mapped
		for _, part := range c.parts {
			m, err := MapSpans(part)
			if err != nil {
				t.Fatalf("%s: MapSpans: %v", c.name, err)
			}
			ms, all = append(ms, m...), append(all, part...)
		}
		_, got := AssembleTrace(ms)
		_, want := MapTrace(all)
		if got == nil || fmt.Sprint(got) != fmt.Sprint(want) || !strings.Contains(got.Error(), c.want) {
			t.Errorf("%s: AssembleTrace %v, MapTrace %v, want %q", c.name, got, want, c.want)
		}
	}
	bad := []Span{sp("1", ""), {TraceID: tid, SpanID: "2", Attributes: []Attr{{"k", json.RawMessage(`{`)}}}}
	_, got := MapSpans(bad)
	_, want := MapTrace(bad)
	if got == nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("a value that is not JSON: MapSpans %v, MapTrace %v", got, want)
	}
}

// TestDecodeMappedForms: a span kept in Span's binary form (as an earlier
// Lookout kept spans) decodes mapped, like the same span mapped and kept
// in Mapped's; other versions and cut input are errors.
func TestDecodeMappedForms(t *testing.T) {
	at := time.Date(2026, 11, 24, 3, 4, 5, 6, time.UTC)
	sp := Span{TraceID: "5b8efff798038103d269b633813fc60c", SpanID: "eee19b7ec3c1b174", Name: "execute_tool f", Start: at, End: at.Add(time.Second),
		Attributes: []Attr{{"gen_ai.operation.name", json.RawMessage(`"execute_tool"`)}, {"gen_ai.tool.call.result", json.RawMessage(`"done"`)}}}
	ms, err := MapSpans([]Span{sp})
	if err != nil {
		t.Fatal(err)
	}
	old, err := DecodeMapped(AppendBinary(nil, &sp))
	if err != nil {
		t.Fatal(err)
	}
	b := ms[0].AppendBinary(nil)
	now, err := DecodeMapped(b)
	if err != nil {
		t.Fatal(err)
	}
	if !sameMapped(old, ms[0]) || !sameMapped(now, ms[0]) || old.m.tool == nil || !old.m.tool.hasResult {
		t.Errorf("decoded:\n old form %+v\n new form %+v\n want %+v", old.m, now.m, ms[0].m)
	}
	if _, err := DecodeMapped(append([]byte{mappedMark, mappedVersion + 1}, b[2:]...)); err == nil {
		t.Error("a newer version decoded")
	}
	for cut := 1; cut < len(b); cut++ {
		if m, err := DecodeMapped(b[:cut]); err == nil && sameMapped(m, ms[0]) {
			t.Errorf("cut at %d of %d bytes: decoded as the whole", cut, len(b))
		}
	}
}

// FuzzDecodeMapped: any bytes decode or fail without a panic, and what
// decodes writes back to a form that decodes the same.
func FuzzDecodeMapped(f *testing.F) {
	spans, err := ParseJSON([]byte(otlpJSON))
	if err != nil {
		f.Fatal(err)
	}
	ms, err := MapSpans(spans)
	if err != nil {
		f.Fatal(err)
	}
	for _, m := range ms {
		f.Add(m.AppendBinary(nil))
	}
	f.Add([]byte{mappedMark, mappedVersion})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeMapped(b)
		if err != nil {
			return
		}
		again, err := DecodeMapped(m.AppendBinary(nil))
		if err != nil || !sameMapped(again, m) {
			t.Fatalf("re-encoded span differs: %v\n%+v\n%+v", err, again, m)
		}
	})
}
