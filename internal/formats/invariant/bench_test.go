package invariant

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"sync"
	"testing"

	"github.com/lookout-dev/lookout/internal/trace"
)

const benchMinSize = 32 << 20

var tau struct {
	once   sync.Once
	traces []*trace.Trace
	jsonl  []byte // the tau-bench traces as Invariant JSONL, repeated to ≥ 32 MB
	events int    // events in jsonl
}

func tauBench(tb testing.TB) {
	tau.once.Do(func() {
		name := "openai/tau-bench/gpt-4o-airline.json"
		got := decodeAll(tb, readCorpus(tb, name), name)
		if len(got.errs) > 0 || len(got.traces) != 200 {
			tb.Fatalf("tau-bench: %v, %d traces", got.errs, len(got.traces))
		}
		tau.traces = got.traces
		var buf bytes.Buffer
		enc := NewEncoder(&buf)
		for buf.Len() < benchMinSize {
			for _, tr := range tau.traces {
				if err := enc.Encode(tr); err != nil {
					tb.Fatal(err)
				}
				tau.events += len(tr.Events)
			}
			if err := enc.Flush(); err != nil {
				tb.Fatal(err)
			}
		}
		tau.jsonl = buf.Bytes()
	})
	if tau.jsonl == nil {
		tb.Fatal("tau-bench data could not be built")
	}
}

func decodeCount(tb testing.TB, data []byte) (traces, events int) {
	dec := NewDecoder(bytes.NewReader(data), "bench.jsonl")
	for {
		tr, err := dec.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			tb.Fatal(err)
		}
		traces++
		events += len(tr.Events)
	}
}

// BenchmarkDecodeJSONL decodes ≥ 32 MB of Invariant JSONL built from the
// tau-bench traces.
func BenchmarkDecodeJSONL(b *testing.B) {
	tauBench(b)
	b.SetBytes(int64(len(tau.jsonl)))
	b.ReportAllocs()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	n := 0
	for b.Loop() {
		_, ev := decodeCount(b, tau.jsonl)
		if ev != tau.events {
			b.Fatalf("%d events, want %d", ev, tau.events)
		}
		n++
	}
	runtime.ReadMemStats(&m1)
	b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/float64(n*tau.events), "allocs/event")
}

// BenchmarkEncodeJSONL encodes the same traces.
func BenchmarkEncodeJSONL(b *testing.B) {
	tauBench(b)
	reps := 0
	for size := 0; size < benchMinSize; reps++ {
		var buf bytes.Buffer
		enc := NewEncoder(&buf)
		for _, tr := range tau.traces {
			_ = enc.Encode(tr)
		}
		_ = enc.Flush()
		size += buf.Len()
	}
	b.SetBytes(int64(len(tau.jsonl)))
	b.ReportAllocs()
	for b.Loop() {
		enc := NewEncoder(io.Discard)
		for range reps {
			for _, tr := range tau.traces {
				if err := enc.Encode(tr); err != nil {
					b.Fatal(err)
				}
			}
		}
		if err := enc.Flush(); err != nil {
			b.Fatal(err)
		}
	}
}

// regrouped is JSONL holding the first 4000 tau-bench events (without
// metadata), three times over, cut into traces of perTrace events (a divisor
// of 4000): the same events whatever the length.
func regrouped(tb testing.TB, perTrace int) (data []byte, events int) {
	tauBench(tb)
	var all []trace.Event
	for _, tr := range tau.traces {
		all = append(all, tr.Events...)
	}
	all = all[:4000]
	var buf bytes.Buffer
	enc := NewEncoder(&buf)
	for range 3 {
		for i := 0; i < len(all); i += perTrace {
			if err := enc.Encode(&trace.Trace{Events: all[i : i+perTrace]}); err != nil {
				tb.Fatal(err)
			}
			events += perTrace
		}
	}
	if err := enc.Flush(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes(), events
}

// BenchmarkDecodeTraceLength reports allocations per event for short and
// long traces made of the same events.
func BenchmarkDecodeTraceLength(b *testing.B) {
	for _, tc := range []struct {
		name string
		n    int
	}{{"events=4", 4}, {"events=40", 40}, {"events=400", 400}, {"events=4000", 4000}} {
		b.Run(tc.name, func(b *testing.B) {
			data, events := regrouped(b, tc.n)
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			n := 0
			for b.Loop() {
				decodeCount(b, data)
				n++
			}
			runtime.ReadMemStats(&m1)
			b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/float64(n*events), "allocs/event")
		})
	}
}

// TestAllocsPerEventFlat: allocations per event do not grow with the
// length of a trace.
func TestAllocsPerEventFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 4 MB inputs; run without -short")
	}
	per := map[int]float64{}
	for _, n := range []int{4, 40, 400, 4000} {
		data, events := regrouped(t, n)
		allocs := testing.AllocsPerRun(2, func() { decodeCount(t, data) })
		per[n] = allocs / float64(events)
		t.Logf("%4d events per trace: %.3f allocs/event", n, per[n])
	}
	// Per-trace costs (the Trace, its event slice) spread over more events;
	// nothing may grow with the length.
	if per[4000] > per[40] || per[400] > per[4] || per[4000] > per[400]*1.01 {
		t.Errorf("allocations per event grow with trace length: %v", per)
	}
}

// BenchmarkDecodeRunList decodes the tau-bench file as it is: a pretty-printed
// list of 200 runs, the input of the `lookout check` goal.
func BenchmarkDecodeRunList(b *testing.B) {
	data := readCorpus(b, "openai/tau-bench/gpt-4o-airline.json")
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		traces, _ := decodeCount(b, data)
		if traces != 200 {
			b.Fatalf("%d traces, want 200", traces)
		}
	}
}
