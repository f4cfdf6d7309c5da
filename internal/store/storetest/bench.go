package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/trace"
)

// benchDataset makes the user "bench" and its dataset "bench".
func benchDataset(b *testing.B, st store.Store) (store.User, store.Dataset) {
	ctx := context.Background()
	u, err := st.CreateUser(ctx, "bench", "x")
	if err != nil {
		b.Fatal(err)
	}
	d, err := st.CreateDataset(ctx, store.Dataset{OwnerID: u.ID, Name: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	return u, d
}

// BenchAddTraces measures AddTraces of the 200 tau-bench traces, in batches
// of 100, into one dataset: traces/s and MB/s of canonical JSON.
func BenchAddTraces(b *testing.B, open func(tb testing.TB) store.Store) {
	tau := TauBench(b)
	st := open(b)
	ctx := context.Background()
	u, d := benchDataset(b, st)
	var bytes int
	batches := make([][]store.NewTrace, 0, 2)
	for i := 0; i < len(tau); i += 100 {
		batch := make([]store.NewTrace, 0, 100)
		for _, t := range tau[i:min(i+100, len(tau))] {
			batch = append(batch, NewTraceOf(t, ""))
			bytes += len(trace.AppendTrace(nil, t))
		}
		batches = append(batches, batch)
	}
	b.SetBytes(int64(bytes))
	start := time.Now()
	for b.Loop() {
		for _, batch := range batches {
			if _, err := st.AddTraces(ctx, u.ID, d.ID, batch); err != nil {
				b.Fatal(err)
			}
		}
	}
	sec := time.Since(start).Seconds()
	b.ReportMetric(float64(len(tau)*b.N)/sec, "traces/s")
}

// BenchReads stores n traces (the tau-bench traces over and over, each with
// metadata of its own) in one dataset, then measures single reads one at a
// time: "get" reads a random trace, "list" a page of 100 summaries at a
// random place; "sorted-first" the first page of 100 sorted by duration,
// tokens, cost, violations or a score (in turn, descending), "sorted-at"
// such a page at a random offset (as an explorer scrolled far down asks).
// All report p50 and p99 latency in milliseconds.
func BenchReads(b *testing.B, open func(tb testing.TB) store.Store, n int) {
	tau := TauBench(b)
	st := open(b)
	ctx := context.Background()
	u, d := benchDataset(b, st)
	ids := make([]string, 0, n)
	start := time.Now()
	const batchSize = 1000
	for len(ids) < n {
		batch := make([]store.NewTrace, min(batchSize, n-len(ids)))
		for i := range batch {
			k := len(ids) + i
			c := *tau[k%len(tau)]
			c.Annotations = nil
			c.Name = fmt.Sprintf("trace %d", k)
			c.Metadata = json.RawMessage(fmt.Sprintf(`{"k":%d,"task":"airline","reward":%d}`, k, k%2))
			batch[i] = store.NewTrace{Trace: &c}
			if k%10 == 0 {
				batch[i].Annotations = []store.Annotation{{Address: "messages[0]", Content: "note", Source: "user"}}
			}
			if k%7 == 0 {
				// A policy's results, for the sort by violations.
				batch[i].Annotations = append(batch[i].Annotations, store.Annotation{Address: "messages[0]", Content: "violation", Source: "analyzer"})
			}
		}
		got, err := st.AddTraces(ctx, u.ID, d.ID, batch)
		if err != nil {
			b.Fatal(err)
		}
		ids = append(ids, got...)
	}
	b.Logf("stored %d traces in %v", n, time.Since(start).Round(time.Millisecond))
	// A score on every trace, for the sort by score.
	start = time.Now()
	for i := 0; i < len(ids); i += batchSize {
		var scores []store.Score
		for k, id := range ids[i:min(i+batchSize, len(ids))] {
			scores = append(scores, store.Score{TraceID: id, Criterion: "quality", Value: json.RawMessage(fmt.Sprint(float64((i+k)*37%101) / 100)), Source: "code"})
		}
		if _, err := st.AddScores(ctx, scores); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("scored %d traces in %v", n, time.Since(start).Round(time.Millisecond))
	// Real cursors: the ones a client walking the list is given.
	cursors := []string{""}
	for c := ""; ; {
		_, next, err := st.ListTraces(ctx, d.ID, store.Page{Cursor: c, Limit: 100})
		if err != nil {
			b.Fatal(err)
		}
		if next == "" {
			break
		}
		cursors = append(cursors, next)
		c = next
	}
	if len(cursors) != (n+99)/100 {
		b.Fatalf("%d pages of 100 for %d traces", len(cursors), n)
	}
	b.Run("get", func(b *testing.B) {
		var lat []time.Duration
		for b.Loop() {
			id := ids[rand.IntN(len(ids))]
			t0 := time.Now()
			st, err := st.Trace(ctx, id)
			lat = append(lat, time.Since(t0))
			if err != nil || len(st.Trace.Events) == 0 {
				b.Fatal(err)
			}
		}
		reportLatency(b, lat)
	})
	b.Run("list", func(b *testing.B) {
		var lat []time.Duration
		for b.Loop() {
			c := cursors[rand.IntN(len(cursors))]
			t0 := time.Now()
			items, _, err := st.ListTraces(ctx, d.ID, store.Page{Cursor: c, Limit: 100})
			lat = append(lat, time.Since(t0))
			if err != nil || len(items) == 0 {
				b.Fatal(err)
			}
		}
		reportLatency(b, lat)
	})
	sorts := []string{store.SortDuration, store.SortTokens, store.SortCost, store.SortViolations, store.SortScore + ":quality"}
	// The first sorted list of a dataset checks once that every trace has
	// its summary row (sqlstore.fillDataset): not what is measured.
	if _, _, err := st.ListTraces(ctx, d.ID, store.Page{Sort: store.SortTokens, Limit: 1}); err != nil {
		b.Fatal(err)
	}
	for _, at := range []bool{false, true} {
		name := "sorted-first"
		if at {
			name = "sorted-at"
		}
		b.Run(name, func(b *testing.B) {
			var lat []time.Duration
			k := 0
			for b.Loop() {
				p := store.Page{Sort: sorts[k%len(sorts)], Desc: true, Limit: 100}
				k++
				if at {
					p.Offset = rand.IntN(n - 100)
				}
				t0 := time.Now()
				items, _, err := st.ListTraces(ctx, d.ID, p)
				lat = append(lat, time.Since(t0))
				if err != nil || len(items) != 100 {
					b.Fatalf("%+v: %d items, %v", p, len(items), err)
				}
			}
			reportLatency(b, lat)
		})
	}
}

func reportLatency(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	q := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))]) / 1e6
	}
	b.ReportMetric(q(0.50), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
}

// BenchIndex measures the search indexer alone: the 200 tau-bench traces,
// repeated to n, are stored with the background indexer off, then each
// round rebuilds the index from them (Reindex: queue every trace, index
// the queue in batches). It reports traces/s and the process's CPU time a
// trace (user + system, so the figure holds on a busy machine).
func BenchIndex(b *testing.B, open func(tb testing.TB) store.Store, n int) {
	b.Setenv("LOOKOUT_INDEXER", "off")
	tau := TauBench(b)
	st := open(b)
	ctx := context.Background()
	u, d := benchDataset(b, st)
	for i := 0; i < n; i += 100 {
		batch := make([]store.NewTrace, 0, 100)
		for j := i; j < min(i+100, n); j++ {
			batch = append(batch, NewTraceOf(tau[j%len(tau)], ""))
		}
		if _, err := st.AddTraces(ctx, u.ID, d.ID, batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	cpu0 := cpuTime()
	for b.Loop() {
		if got, err := st.Reindex(ctx, nil); err != nil || got < int64(n) {
			b.Fatalf("Reindex: %d traces, %v", got, err)
		}
	}
	cpu := cpuTime() - cpu0
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "traces/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(n*b.N), "cpu-µs/trace")
}

// cpuTime is the process's user and system time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
