package storeutil

import (
	"bytes"
	"compress/flate"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lookout-dev/lookout/internal/formats"
	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/testcorpus"
	"github.com/lookout-dev/lookout/internal/trace"
)

func TestNewID(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := NewID()
		if !ValidID(id) {
			t.Fatalf("NewID gave %q, which ValidID rejects", id)
		}
		if id[14] != '7' || !strings.ContainsRune("89ab", rune(id[19])) {
			t.Fatalf("%q is not a version 7 variant 1 UUID", id)
		}
		// The first 48 bits are the time in milliseconds.
		ms, err := strconv.ParseInt(id[0:8]+id[9:13], 16, 64)
		if err != nil || time.Since(time.UnixMilli(ms)).Abs() > time.Minute {
			t.Fatalf("%q does not start with the time: %v", id, time.UnixMilli(ms))
		}
		if seen[id] {
			t.Fatalf("NewID repeated %q", id)
		}
		seen[id] = true
	}
	for _, bad := range []string{"", "x", "0190a4a3-0e4d-4c1b-9c1e-0a1b2c3d4e5", "0190A4A3-0E4D-4C1B-9C1E-0A1B2C3D4E5F", "0190a4a3x0e4d-4c1b-9c1e-0a1b2c3d4e5f", "0190a4a3-0e4d-4c1b-9c1e-0a1b2c3d4e5g"} {
		if ValidID(bad) {
			t.Errorf("ValidID(%q) = true", bad)
		}
	}
}

func TestCursor(t *testing.T) {
	for _, i := range []int64{0, 1, 99, 1 << 40, -1} {
		c := EncodeCursor(i)
		got, ok, err := DecodeCursor(c)
		if err != nil || !ok || got != i {
			t.Errorf("DecodeCursor(EncodeCursor(%d)) = %d, %v, %v", i, got, ok, err)
		}
	}
	if _, ok, err := DecodeCursor(""); ok || err != nil {
		t.Errorf("empty cursor: ok=%v err=%v", ok, err)
	}
	for _, bad := range []string{"!", "aQ", "eDE", EncodeCursor(1) + "=="} {
		if _, _, err := DecodeCursor(bad); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("DecodeCursor(%q): err = %v, want ErrInvalid", bad, err)
		}
	}
}

func TestLimit(t *testing.T) {
	for _, c := range []struct{ in, want int }{{-5, DefaultLimit}, {0, DefaultLimit}, {1, 1}, {MaxLimit, MaxLimit}, {MaxLimit + 1, MaxLimit}} {
		if got := Limit(c.in); got != c.want {
			t.Errorf("Limit(%d) = %d, want %d", c.in, got, c.want)
		}
	}
}

func TestMergeObject(t *testing.T) {
	cases := []struct{ old, patch, want string }{
		{"", `{"a":1}`, `{"a":1}`},
		{`{}`, `{}`, `{}`},
		{`{"a":1,"b":2}`, `{"b":3,"c":4}`, `{"a":1,"b":3,"c":4}`},
		{`{"b":1,"a":2}`, `{"a":{"x":[1, 2]}}`, `{"b":1,"a":{"x":[1,2]}}`},
		{`{"a":1}`, `{"a":null}`, `{"a":null}`},
		{`{"a":1,"a":2}`, `{"b":"\u00e9\n"}`, `{"a":2,"b":"\u00e9\n"}`}, // values are kept as given
	}
	for _, c := range cases {
		got, err := MergeObject(json.RawMessage(c.old), json.RawMessage(c.patch))
		if err != nil {
			t.Errorf("MergeObject(%s, %s): %v", c.old, c.patch, err)
			continue
		}
		if string(got) != c.want {
			t.Errorf("MergeObject(%s, %s) = %s, want %s", c.old, c.patch, got, c.want)
		}
	}
	for _, bad := range []string{``, `[]`, `1`, `{"a":}`, `{"a":1} x`} {
		if _, err := MergeObject(json.RawMessage(`{}`), json.RawMessage(bad)); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("MergeObject with patch %q: err = %v, want ErrInvalid", bad, err)
		}
	}
}

func TestAssignIndexes(t *testing.T) {
	p := func(i int64) *int64 { return &i }
	cases := []struct {
		name     string
		next     int64
		given    []*int64
		want     []int64
		wantNext int64
	}{
		{"empty dataset", 0, []*int64{nil, nil, nil}, []int64{0, 1, 2}, 3},
		{"continues", 7, []*int64{nil, nil}, []int64{7, 8}, 9},
		{"given kept", 0, []*int64{p(5), nil}, []int64{5, 6}, 7},
		{"given between", 0, []*int64{nil, p(1), nil}, []int64{0, 1, 2}, 3},
		{"auto skips an index given later in the batch", 0, []*int64{nil, nil, p(1)}, []int64{0, 2, 1}, 3},
		{"auto skips several", 5, []*int64{nil, nil, nil, p(6), p(5)}, []int64{7, 8, 9, 6, 5}, 10},
		{"given below next", 10, []*int64{p(3), nil}, []int64{3, 10}, 11},
		{"all given", 0, []*int64{p(2), p(0), p(1)}, []int64{2, 0, 1}, 3},
		{"nothing", 4, nil, []int64{}, 4},
	}
	for _, c := range cases {
		got, next := AssignIndexes(c.next, c.given)
		if fmt.Sprint(got) != fmt.Sprint(c.want) || next != c.wantNext {
			t.Errorf("%s: AssignIndexes = %v, %d; want %v, %d", c.name, got, next, c.want, c.wantNext)
		}
	}
}

func TestHierarchy(t *testing.T) {
	for _, h := range [][]string{nil, {"a"}, {"a/b", "c\"d", "é"}} {
		got, err := ParseHierarchy(HierarchyJSON(h))
		if err != nil || fmt.Sprintf("%q", got) != fmt.Sprintf("%q", h) {
			t.Errorf("hierarchy %q came back as %q (%v)", h, got, err)
		}
	}
}

// corpusTraces decodes every trace of the shared corpus the importers read.
func corpusTraces(tb testing.TB) []*trace.Trace {
	tb.Helper()
	var out []*trace.Trace
	root := testcorpus.Dir(tb)
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, ".md") {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		dec, _, err := formats.Open(bytes.NewReader(data), p, formats.Auto)
		if err != nil {
			return nil // a format not read yet
		}
		for {
			tr, err := dec.Next()
			if err == io.EOF {
				return nil
			}
			if err == nil {
				tr.Annotations = nil
				out = append(out, tr)
			}
		}
	})
	if err != nil {
		tb.Fatal(err)
	}
	if len(out) < 200 {
		tb.Fatalf("the corpus gave %d traces; expected over 200", len(out))
	}
	return out
}

func TestContentRoundTrip(t *testing.T) {
	var plain, deflated int
	w, _ := flate.NewWriter(nil, flate.BestSpeed)
	traces := corpusTraces(t)
	type encoded struct {
		data []byte
		enc  int
	}
	var all []encoded
	for i, tr := range traces {
		data, enc := EncodeContent(tr)
		all = append(all, encoded{data, enc})
		if enc == EncZstd {
			deflated++
			// A row written before zstd (deflated) still reads.
			var buf bytes.Buffer
			w.Reset(&buf)
			raw, err := zstdDecoder().DecodeAll(data, nil)
			if err != nil {
				t.Fatalf("trace %d: %v", i, err)
			}
			w.Write(raw)
			w.Close()
			old, err := DecodeContent(buf.Bytes(), EncDeflate, tr.Metadata)
			if err != nil {
				t.Fatalf("trace %d deflated: %v", i, err)
			}
			if a, b := trace.AppendTrace(nil, tr), trace.AppendTrace(nil, old); !bytes.Equal(a, b) {
				t.Fatalf("trace %d deflated changed:\n%s\n%s", i, a, b)
			}
		} else {
			plain++
		}
		got, err := DecodeContent(data, enc, tr.Metadata)
		if err != nil {
			t.Fatalf("trace %d: %v", i, err)
		}
		if a, b := trace.AppendTrace(nil, tr), trace.AppendTrace(nil, got); !bytes.Equal(a, b) {
			t.Fatalf("trace %d changed:\n%s\n%s", i, a, b)
		}
		if bare, err := DecodeContent(data, enc, nil); err != nil || bare.Metadata != nil || bare.Name != tr.Name {
			t.Fatalf("trace %d: the content alone has metadata %s and name %q (%v); want none and %q", i, bare.Metadata, bare.Name, err, tr.Name)
		}
	}
	if plain == 0 || deflated == 0 {
		t.Errorf("expected both plain (%d) and compressed (%d) contents from the corpus", plain, deflated)
	}
	// Read back again once all are encoded: a buffer given back for reuse
	// (Scratch) while a content still held it would have been written over.
	for i, e := range all {
		got, err := DecodeContent(e.data, e.enc, traces[i].Metadata)
		if err != nil {
			t.Fatalf("trace %d, read back after the others: %v", i, err)
		}
		if a, b := trace.AppendTrace(nil, traces[i]), trace.AppendTrace(nil, got); !bytes.Equal(a, b) {
			t.Fatalf("trace %d changed after the others were encoded", i)
		}
	}
	if _, err := DecodeContent([]byte("xx"), EncDeflate, nil); err == nil {
		t.Error("corrupt deflate content decoded without error")
	}
	z, _ := EncodeContent(&trace.Trace{Name: strings.Repeat("n", 2*CompressAbove)})
	for _, bad := range [][]byte{[]byte("xx"), z[:len(z)-3], append(append([]byte(nil), z[:8]...), make([]byte, 8)...)} {
		if _, err := DecodeContent(bad, EncZstd, nil); err == nil {
			t.Errorf("corrupt zstd content %x decoded without error", bad)
		}
	}
	if _, err := DecodeContent([]byte("{}"), 7, nil); err == nil {
		t.Error("unknown encoding decoded without error")
	}
}

func TestPrepareTraces(t *testing.T) {
	now := Now()
	ok := &trace.Trace{Name: "n", Metadata: json.RawMessage(`{"a":1}`), Events: []trace.Event{{Role: "user", Content: trace.TextContent("hi")}}}
	bad := []struct {
		name string
		nt   store.NewTrace
	}{
		{"nil trace", store.NewTrace{}},
		{"annotations inside", store.NewTrace{Trace: &trace.Trace{Annotations: []trace.Annotation{{Address: "x"}}}}},
		{"metadata not an object", store.NewTrace{Trace: &trace.Trace{Metadata: json.RawMessage(`[1]`)}}},
		{"metadata not JSON", store.NewTrace{Trace: &trace.Trace{Metadata: json.RawMessage(`{`)}}},
		{"annotation without source", store.NewTrace{Trace: ok, Annotations: []store.Annotation{{Address: "messages[0]"}}}},
		{"annotation extra not an object", store.NewTrace{Trace: ok, Annotations: []store.Annotation{{Source: "user", Extra: json.RawMessage(`"x"`)}}}},
	}
	for _, c := range bad {
		if _, err := PrepareTraces([]store.NewTrace{{Trace: ok}, c.nt}, now); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", c.name, err)
		}
	}
	batch := make([]store.NewTrace, 100)
	for i := range batch {
		batch[i] = store.NewTrace{Trace: ok, Hierarchy: []string{"h"}, Annotations: []store.Annotation{{Source: "user", Content: "c"}}}
	}
	rows, err := PrepareTraces(batch, now)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rows {
		if r.Content == nil || r.EventCount != 1 || string(r.Metadata) != `{"a":1}` || string(r.Hierarchy) != `["h"]` || len(r.Anns) != 1 || r.Anns[0].TraceID != r.ID || !ValidID(r.Anns[0].ID) || !r.Anns[0].CreatedAt.Equal(now) {
			t.Fatalf("row %d: %+v", i, r)
		}
	}
}

// BenchmarkContent measures the content encoding over the corpus at several
// deflate levels; it is how CompressAbove and the level were chosen.
func BenchmarkContent(b *testing.B) {
	traces := corpusTraces(b)
	raws := make([][]byte, len(traces))
	var total int
	for i, tr := range traces {
		c := *tr
		c.Metadata = nil
		raws[i] = trace.AppendTrace(nil, &c)
		total += len(raws[i])
	}
	for _, level := range []int{flate.BestSpeed, 2, 4, flate.DefaultCompression} {
		b.Run(fmt.Sprintf("deflate-%d", level), func(b *testing.B) {
			w, _ := flate.NewWriter(nil, level)
			var out int
			var buf bytes.Buffer
			start := time.Now()
			for b.Loop() {
				out = 0
				for _, raw := range raws {
					buf.Reset()
					w.Reset(&buf)
					w.Write(raw)
					w.Close()
					out += buf.Len()
				}
			}
			b.ReportMetric(float64(total)*float64(b.N)/time.Since(start).Seconds()/1e6, "MB/s")
			b.ReportMetric(float64(out)/float64(total), "ratio")
		})
	}
	b.Run("zstd-fastest", func(b *testing.B) {
		var out int
		var buf []byte
		start := time.Now()
		for b.Loop() {
			out = 0
			for _, raw := range raws {
				buf = zstdEncoder().EncodeAll(raw, buf[:0])
				out += len(buf)
			}
		}
		b.ReportMetric(float64(total)*float64(b.N)/time.Since(start).Seconds()/1e6, "MB/s")
		b.ReportMetric(float64(out)/float64(total), "ratio")
	})
	for _, above := range []int{0, 1 << 10, 4 << 10, 16 << 10} {
		b.Run(fmt.Sprintf("BestSpeed-above-%d", above), func(b *testing.B) {
			w, _ := flate.NewWriter(nil, flate.BestSpeed)
			var out, rows int
			var buf bytes.Buffer
			start := time.Now()
			for b.Loop() {
				out, rows = 0, 0
				for _, raw := range raws {
					if len(raw) < above {
						out += len(raw)
						continue
					}
					rows++
					buf.Reset()
					w.Reset(&buf)
					w.Write(raw)
					w.Close()
					out += buf.Len()
				}
			}
			b.ReportMetric(float64(total)*float64(b.N)/time.Since(start).Seconds()/1e6, "MB/s")
			b.ReportMetric(float64(out)/float64(total), "ratio")
			b.ReportMetric(float64(rows), "deflated")
		})
	}
	b.Run("encode", func(b *testing.B) {
		start := time.Now()
		for b.Loop() {
			for _, tr := range traces {
				EncodeContent(tr)
			}
		}
		b.ReportMetric(float64(total)*float64(b.N)/time.Since(start).Seconds()/1e6, "MB/s")
	})
	b.Run("decode", func(b *testing.B) {
		data := make([][]byte, len(traces))
		encs := make([]int, len(traces))
		for i, tr := range traces {
			data[i], encs[i] = EncodeContent(tr)
		}
		start := time.Now()
		for b.Loop() {
			for i := range data {
				if _, err := DecodeContent(data[i], encs[i], nil); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(total)*float64(b.N)/time.Since(start).Seconds()/1e6, "MB/s")
	})
}

func TestText(t *testing.T) {
	for _, c := range []struct {
		s  string
		ok bool
	}{{"", true}, {"plain", true}, {"é ü 日本", true}, {"a\x00b", false}, {"bad \xff", false}} {
		err := CheckText("x", c.s)
		if (err == nil) != c.ok || err != nil && !errors.Is(err, store.ErrInvalid) {
			t.Errorf("CheckText(%q) = %v", c.s, err)
		}
	}
	for in, want := range map[string]string{"plain": "plain", "a\x00b": "ab", "x\xffy": "x\uFFFDy"} {
		if got := ListName(in); got != want {
			t.Errorf("ListName(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{`{"a":"é"}`: `{"a":"é"}`, "{\"a\":\"\xff\xfe\"}": "{\"a\":\"\uFFFD\uFFFD\"}"} {
		if got := string(FixUTF8([]byte(in))); got != want {
			t.Errorf("FixUTF8(%q) = %q, want %q", in, got, want)
		}
	}
	if FixUTF8(nil) != nil {
		t.Error("FixUTF8(nil) is not nil")
	}
}

// allocated is the bytes fn allocates (one goroutine at a time: the
// package's tests do not run in parallel).
func allocated(fn func()) uint64 {
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	fn()
	runtime.ReadMemStats(&m1)
	return m1.TotalAlloc - m0.TotalAlloc
}

// TestEncodeContentMemory: a large trace is encoded into a buffer sized for
// it, not one grown by doubling (which allocated about five times the
// trace, the most of a large push's memory).
func TestEncodeContentMemory(t *testing.T) {
	text := strings.Repeat("line of a long tool output, with \"quotes\"\n", 200_000) // 8.4 MB
	tr := &trace.Trace{Name: "big", Events: []trace.Event{{Role: "tool", Content: trace.TextContent(text)}}}
	raw := len(trace.AppendTrace(nil, tr))
	var content []byte
	got := allocated(func() { content, _ = EncodeContent(tr) })
	// The buffer for the trace, and the one for it compressed (a quarter),
	// plus the compressor's state (about 1 MB: pooled, but the race
	// detector's pool drops what it is given at random).
	if limit := uint64(raw)*7/4 + 1<<20; got > limit {
		t.Errorf("EncodeContent of a %d-byte trace allocated %d bytes (%.1f per byte), want at most %d", raw, got, float64(got)/float64(raw), limit)
	}
	back, err := DecodeContent(content, EncZstd, nil)
	if err != nil || back.Events[0].Content.Text != text {
		t.Fatalf("the trace does not read back: %v", err)
	}
}

// TestAppendContent grows corpus traces a few events (and spans) at a
// time with AppendContent and wants each stored form to decode to the
// trace as encoded whole; the appends must go through parts, deflated
// parts and whole re-encodings.
func TestAppendContent(t *testing.T) {
	var parts, compactions, deflatedParts int
	for i, tr := range corpusTraces(t) {
		if len(tr.Events) < 4 || i%3 != 0 {
			continue
		}
		cut := len(tr.Events) / 4
		grown := *tr
		grown.Events = append([]trace.Event(nil), tr.Events[:cut]...)
		grown.Spans = nil
		data, enc := EncodeContent(&grown)
		for k := cut; k < len(tr.Events); {
			n := min(len(tr.Events)-k, 1+k%3)
			if k%5 == 0 { // now and then a large step, deflated
				n = len(tr.Events) - k
			}
			var spans []trace.Span
			if k%2 == 0 {
				spans = []trace.Span{{ID: fmt.Sprintf("s%d", k), Name: "call", Start: time.Unix(int64(k), 0).UTC()}}
			}
			var err error
			data, enc, err = AppendContent(data, enc, tr.Events[k:k+n], spans)
			if err != nil {
				t.Fatalf("trace %d: append at %d: %v", i, k, err)
			}
			if enc == EncAppended {
				parts++
				if _, penc, _, _ := lastPart(data); penc == EncZstd {
					deflatedParts++
				}
			} else {
				compactions++
			}
			grown.Events = append(grown.Events, tr.Events[k:k+n]...)
			grown.Spans = append(grown.Spans, spans...)
			k += n
			got, err := DecodeContent(data, enc, tr.Metadata)
			if err != nil {
				t.Fatalf("trace %d: decode after %d: %v", i, k, err)
			}
			if a, b := trace.AppendTrace(nil, &grown), trace.AppendTrace(nil, got); !bytes.Equal(a, b) {
				t.Fatalf("trace %d after %d events: decoded\n%s\nwant\n%s", i, k, b, a)
			}
		}
	}
	if parts == 0 || compactions == 0 || deflatedParts == 0 {
		t.Errorf("appends: %d as parts (%d deflated), %d whole again; want some of each", parts, deflatedParts, compactions)
	}
	good, enc, err := AppendContent([]byte(`{"events":[]}`), EncPlain, []trace.Event{{Role: "user", Content: trace.TextContent("hi")}}, nil)
	if err != nil || enc != EncAppended {
		t.Fatal(enc, err)
	}
	for _, bad := range [][]byte{good[:len(good)-1], append([]byte{0x05, 9}, good...), {0x80}} {
		if _, err := DecodeContent(bad, EncAppended, nil); err == nil {
			t.Errorf("corrupt appended content %q decoded without error", bad)
		}
	}
	if _, _, err := AppendContent([]byte{0x80}, EncAppended, nil, nil); err == nil {
		t.Error("appended to corrupt content without error")
	}
}

// lastPart is the last part of appended content.
func lastPart(data []byte) ([]byte, int, []byte, error) {
	var part []byte
	var enc int
	var err error
	for len(data) > 0 {
		if part, enc, data, err = nextPart(data); err != nil {
			return nil, 0, nil, err
		}
	}
	return part, enc, nil, nil
}
