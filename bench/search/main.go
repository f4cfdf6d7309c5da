// Command search measures Lookout's search: it generates a dataset from the
// shared corpus (every trace the importers read, repeated, each copy with
// its own name, metadata and a ticket number in its first message), stores
// it, and times queries through the HTTP API (p50/p99 over many runs) for a
// rare word, a common word, a tool filter, a metadata range and a
// combination; it reports the index's size per trace.
//
//	go run ./bench/search                          # 100,000 traces, both backends
//	go run ./bench/search -backend sqlite -traces 1000000
//	go run ./bench/search -traces 1000000 -o /tmp/1m.jsonl   # only write the dataset (lookout push it)
//
// The ingest slowdown that indexing causes is measured by bench/ingest at
// this commit and at the one before the index (see bench/README.md).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"time"

	"github.com/lookout-dev/lookout/bench/benchstore"
	"github.com/lookout-dev/lookout/bench/corpusdata"
	"github.com/lookout-dev/lookout/client"
	"github.com/lookout-dev/lookout/internal/formats/invariant"
	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/sqlite"
	"github.com/lookout-dev/lookout/internal/trace"
)

func main() {
	backend := flag.String("backend", "both", "sqlite, postgres or both")
	n := flag.Int("traces", 100000, "traces in the dataset")
	runs := flag.Int("runs", 200, "runs of each query")
	corpus := flag.String("corpus", "../shared/corpus", "the shared corpus directory")
	out := flag.String("o", "", "write the generated dataset to FILE as Invariant JSONL and stop")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the ingest to FILE")
	keep := flag.String("sqlite-db", "", "SQLite: use (and keep) this database file; a file that holds the dataset already is measured without storing it again")
	pgURL := flag.String("pg", os.Getenv("LOOKOUT_TEST_POSTGRES"), "PostgreSQL URL (default: a throwaway cluster)")
	flag.Parse()

	ctx := context.Background()
	gen, err := newGenerator(*corpus)
	if err != nil {
		fail(err)
	}
	if *out != "" {
		if err := gen.write(*out, *n); err != nil {
			fail(err)
		}
		return
	}
	fmt.Printf("machine: %s/%s, %d CPUs, %s; %s\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version(), time.Now().UTC().Format("2006-01-02"))
	fmt.Printf("dataset: %d traces generated from the %d corpus traces\n\n", *n, len(gen.base))
	backends, err := benchstore.Backends(*backend)
	if err != nil {
		fail(err)
	}
	stopProfile, err := benchstore.StartCPUProfile(*cpuprofile)
	if err != nil {
		fail(err)
	}
	defer stopProfile()
	for _, b := range backends {
		var st store.Store
		var cleanup func()
		if b == "sqlite" && *keep != "" {
			st, err = sqlite.Open(ctx, *keep)
			cleanup = func() { st.Close() }
		} else {
			st, cleanup, err = benchstore.Open(ctx, b, *pgURL)
		}
		if err != nil {
			fail(fmt.Errorf("%s: %w", b, err))
		}
		if err := measure(ctx, b, st, gen, *n, *runs); err != nil {
			cleanup()
			fail(fmt.Errorf("%s: %w", b, err))
		}
		cleanup()
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "search:", err)
	os.Exit(1)
}

// generator makes trace k of a dataset: corpus trace k mod len, renamed,
// with metadata of its own and a ticket number (a rare word) in its first
// user message (or a new one). Copies of one corpus trace share every
// other text, as traces of one agent share their system prompt and much of
// their tool output; the index keeps each distinct text once.
type generator struct {
	base []*trace.Trace
}

var models = []string{"gpt-4o", "gpt-4o-mini", "claude-sonnet", "llama-3-70b"}

func newGenerator(corpus string) (*generator, error) {
	files, err := corpusdata.All(corpus)
	if err != nil {
		return nil, err
	}
	var base []*trace.Trace
	for _, f := range files {
		base = append(base, f...)
	}
	return &generator{base: base}, nil
}

// ticket is trace k's rare word.
func ticket(k int) string { return fmt.Sprintf("tkt%07dq", k*7919%10000019) }

func (g *generator) trace(k int) *trace.Trace {
	b := g.base[k%len(g.base)]
	t := *b
	t.Index, t.Annotations, t.ID = nil, nil, ""
	name := b.Name
	if name == "" {
		name = "trace"
	}
	t.Name = fmt.Sprintf("%s #%d", name, k)
	r := rand.New(rand.NewPCG(uint64(k), 7))
	meta := map[string]any{
		"reward":    float64(r.IntN(101)) / 100,
		"model":     models[r.IntN(len(models))],
		"user_cost": float64(r.IntN(1000)) / 10000,
		"run":       k / 1000,
		"ticket":    ticket(k),
	}
	t.Metadata, _ = json.Marshal(meta)
	t.Events = slices.Clone(b.Events)
	note := " (ticket " + ticket(k) + ")"
	for i := range t.Events {
		e := &t.Events[i]
		if e.Role == "user" && e.Content.Kind == trace.ContentText {
			e.Content = trace.TextContent(e.Content.Text + note)
			return &t
		}
	}
	t.Events = append([]trace.Event{{Role: "user", Content: trace.TextContent(note)}}, t.Events...)
	return &t
}

func (g *generator) write(path string, n int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	enc := invariant.NewEncoder(w)
	for k := range n {
		if err := enc.Encode(g.trace(k)); err != nil {
			f.Close()
			return err
		}
	}
	if err := enc.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	st, _ := f.Stat()
	fmt.Printf("%s: %d traces, %.1f MB\n", path, n, float64(st.Size())/1e6)
	return f.Close()
}

func measure(ctx context.Context, name string, st store.Store, g *generator, n, runs int) error {
	u, err := st.LocalUser(ctx) // the server runs in local mode: its user reads everything

	if err != nil {
		return err
	}
	dsName := fmt.Sprintf("search-%d", n)
	d, err := st.DatasetByName(ctx, u.ID, dsName)
	if err == nil && d.TraceCount == int64(n) {
		fmt.Printf("%s: the dataset is stored already (%d traces)\n", name, n)
	} else if err := ingest(ctx, name, st, g, u.ID, dsName, n, &d); err != nil {
		return err
	}
	return queries(ctx, name, st, d, n, runs)
}

func ingest(ctx context.Context, name string, st store.Store, g *generator, owner, dsName string, n int, d *store.Dataset) error {
	var err error
	if *d, err = st.CreateDataset(ctx, store.Dataset{OwnerID: owner, Name: dsName}); err != nil {
		return err
	}
	u := store.User{ID: owner}
	start := time.Now()
	const batch = 500
	for k := 0; k < n; k += batch {
		nts := make([]store.NewTrace, 0, batch)
		for j := k; j < min(n, k+batch); j++ {
			nts = append(nts, store.NewTrace{Trace: g.trace(j)})
		}
		if _, err := st.AddTraces(ctx, u.ID, d.ID, nts); err != nil {
			return err
		}
		if (k/batch)%40 == 39 {
			fmt.Fprintf(os.Stderr, "%s: %d traces stored\r", name, k+batch)
		}
	}
	took := time.Since(start)
	fmt.Printf("%s: stored %d traces in %.1f s (%.0f traces/s)\n", name, n, took.Seconds(), float64(n)/took.Seconds())
	// The index is written apart: wait until every trace is indexed.
	if _, err := st.SearchIndexStats(ctx); err != nil {
		return err
	}
	took = time.Since(start)
	fmt.Printf("%s: indexed them all %.1f s after the first was stored (%.0f traces/s end to end)\n", name, took.Seconds(), float64(n)/took.Seconds())
	return nil
}

func queries(ctx context.Context, name string, st store.Store, d store.Dataset, n, runs int) error {
	is, err := st.SearchIndexStats(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("%s: search index %.1f MB, %.1f KB a trace (%d pieces, %d distinct texts)\n",
		name, float64(is.Bytes)/1e6, float64(is.Bytes)/float64(n)/1e3, is.Pieces, is.Texts)
	url, stop, err := benchstore.Serve(st)
	if err != nil {
		return err
	}
	defer stop()
	c, err := client.New(url)
	if err != nil {
		return err
	}
	r := rand.New(rand.NewPCG(3, 4))
	kinds := []struct {
		name  string
		query func() string
	}{
		{"rare word", func() string { return ticket(r.IntN(n)) }},
		{"common word", func() string { return "reservation" }},
		{"tool filter", func() string { return "tool:cancel_reservation" }},
		{"metadata range", func() string { return fmt.Sprintf("meta:reward>%.2f", 0.5+float64(r.IntN(50))/100) }},
		{"combination", func() string { return "tool:cancel_reservation refund meta:reward>0.5 -role:user2" }},
		{"rare metadata value", func() string { return "meta:ticket=" + ticket(r.IntN(n)) }},
		{"no match", func() string { return "zqxwvut" }},
	}
	for _, k := range kinds {
		var lat []time.Duration
		var total int64
		est := false
		for range runs {
			q := k.query()
			t0 := time.Now()
			page, err := c.Search(ctx, d.ID, q, "", 50)
			if err != nil {
				return fmt.Errorf("%s %q: %w", k.name, q, err)
			}
			lat = append(lat, time.Since(t0))
			total, est = page.Total, page.TotalIsEstimate
			if k.name == "rare word" && (len(page.Traces) != 1 || len(page.Traces[0].Hits) == 0) {
				return fmt.Errorf("rare word %q: %d traces; want 1 with hits", q, len(page.Traces))
			}
		}
		about := ""
		if est {
			about = "≥"
		}
		fmt.Printf("%s %-20s p50 %8s  p99 %8s   (first page of 50; %s%d matches)\n", name, k.name, pct(lat, 50), pct(lat, 99), about, total)
	}
	fmt.Println()
	return nil
}

func pct(d []time.Duration, p int) string {
	s := slices.Clone(d)
	slices.Sort(s)
	v := s[min(len(s)-1, len(s)*p/100)]
	return strconv.FormatFloat(float64(v.Microseconds())/1000, 'f', 2, 64) + " ms"
}
