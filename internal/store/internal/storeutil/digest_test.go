package storeutil

import (
	"bytes"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lookout-dev/lookout/internal/formats"
	"github.com/lookout-dev/lookout/internal/testcorpus"
	"github.com/lookout-dev/lookout/internal/trace"
)

func TestCutUTF16(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"abc", 2, "ab"},
		{"abc", 5, "abc"},
		{"a😀b", 2, "a"}, // the emoji takes two units: not split
		{"a😀b", 3, "a😀"},
		{"éé", 1, "é"}, // two bytes, one unit
		{"", 3, ""},
	} {
		if got := CutUTF16(c.s, c.n); got != c.want {
			t.Errorf("CutUTF16(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}

// TestDigestMerges: over the corpus, the digest of a trace's first events
// (and all its spans) merged with that of the rest is the whole trace's,
// and a digest stored reads back equal.
func TestDigestMerges(t *testing.T) {
	traces := corpusTraces(t)
	users := 0
	for i, tr := range traces {
		whole := StoredDigestOf(tr)
		if whole.FirstUser != "" {
			users++
		}
		half := len(tr.Events) / 2
		a := StoredDigestOf(&trace.Trace{Events: tr.Events[:half], Spans: tr.Spans})
		merged, err := AppendDigest(EncodeDigest(a), tr.Events[half:], nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeDigest(merged)
		if err != nil {
			t.Fatal(err)
		}
		// Stored, times keep their microseconds.
		back, err := DecodeDigest(EncodeDigest(whole))
		if err != nil || !bytes.Equal(EncodeDigest(back), EncodeDigest(whole)) || back.FirstUser != whole.FirstUser {
			t.Errorf("trace %d: stored %+v read back as %+v (%v)", i, whole, back, err)
		}
		if !reflect.DeepEqual(got, back) {
			t.Errorf("trace %d: merged %+v, whole %+v", i, got, back)
		}
	}
	if users < 200 {
		t.Errorf("%d corpus traces with a user message", users)
	}
}

// tauBench decodes the 200 tau-bench airline traces.
func tauBench(tb testing.TB) []*trace.Trace {
	tb.Helper()
	data, err := os.ReadFile(testcorpus.File(tb, "openai/tau-bench/gpt-4o-airline.json"))
	if err != nil {
		tb.Fatal(err)
	}
	dec, _, err := formats.Open(bytes.NewReader(data), "gpt-4o-airline.json", formats.Auto)
	if err != nil {
		tb.Fatal(err)
	}
	var out []*trace.Trace
	for {
		tr, err := dec.Next()
		if err != nil {
			break
		}
		out = append(out, tr)
	}
	if len(out) != 200 {
		tb.Fatalf("%d tau-bench traces, want 200", len(out))
	}
	return out
}

// BenchmarkDigest measures what the write path spends on each trace's
// digest (computed and encoded, as PrepareTraces does), beside the
// content's encoding for scale, over the 200 tau-bench airline traces:
// go test -run XXX -bench Digest ./internal/store/internal/storeutil
func BenchmarkDigest(b *testing.B) {
	tau := tauBench(b)
	per := func(b *testing.B, fn func(t *trace.Trace)) {
		start := time.Now()
		n := 0
		for b.Loop() {
			for _, t := range tau {
				fn(t)
			}
			n++
		}
		b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(n*len(tau)), "ns/trace")
	}
	var sink int
	b.Run("digest", func(b *testing.B) {
		per(b, func(t *trace.Trace) { sink += len(EncodeDigest(StoredDigestOf(t))) })
	})
	b.Run("digest-corpus", func(b *testing.B) {
		// Every corpus trace, OpenTelemetry ones with spans to read usage from.
		all := corpusTraces(b)
		start := time.Now()
		n := 0
		for b.Loop() {
			for _, t := range all {
				sink += len(EncodeDigest(StoredDigestOf(t)))
			}
			n++
		}
		b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(n*len(all)), "ns/trace")
	})
	b.Run("content", func(b *testing.B) {
		per(b, func(t *trace.Trace) { c, _ := EncodeContent(t); sink += len(c) })
	})
	b.Run("append", func(b *testing.B) {
		stored := EncodeDigest(StoredDigestOf(tau[0]))
		more := []trace.Event{{Role: "assistant", Content: trace.TextContent(strings.Repeat("ok ", 100))}}
		per(b, func(*trace.Trace) {
			s, _ := AppendDigest(stored, more, nil)
			sink += len(s)
		})
	})
	_ = sink
}
