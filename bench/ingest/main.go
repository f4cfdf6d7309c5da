// Command ingest measures Lookout's store and server: traces pushed over
// HTTP per second into SQLite and PostgreSQL, the way `lookout push` sends
// them (decode the file, canonical JSON, batches of 500 through the client's
// Pusher, one request in flight), and the p50/p99 latency of a trace get and
// of a trace-list page once the store holds 100,000 traces.
//
//	go run ./bench/ingest                      # both backends
//	go run ./bench/ingest -backend sqlite -stored 0
//
// PostgreSQL: -pg URL, else $LOOKOUT_TEST_POSTGRES, else a throwaway cluster
// (initdb + pg_ctl) in a temporary directory. Figures go in bench/README.md.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"time"

	"github.com/lookout-dev/lookout/bench/benchstore"
	"github.com/lookout-dev/lookout/bench/corpusdata"
	"github.com/lookout-dev/lookout/client"
	"github.com/lookout-dev/lookout/internal/formats"
	"github.com/lookout-dev/lookout/internal/formats/invariant"
	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/trace"
)

func main() {
	backend := flag.String("backend", "both", "sqlite, postgres or both")
	n := flag.Int("traces", 10000, "traces in the ingest run")
	stored := flag.Int("stored", 100000, "traces stored before measuring get and list latency (0: skip)")
	batch := flag.Int("batch", 500, "traces per push request")
	corpus := flag.String("corpus", "../shared/corpus", "the shared corpus directory")
	pgURL := flag.String("pg", os.Getenv("LOOKOUT_TEST_POSTGRES"), "PostgreSQL URL (default: a throwaway cluster)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the ingest runs to FILE")
	flag.Parse()

	ctx := context.Background()
	file, size, err := makeFile(*corpus, *n)
	if err != nil {
		fail(err)
	}
	fmt.Printf("machine: %s/%s, %d CPUs, %s; %s\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version(), time.Now().UTC().Format("2006-01-02"))
	fmt.Printf("input: %d tau-bench traces (the corpus's 200, repeated), %.1f MB of Invariant JSONL, %.1f KB a trace\n\n",
		*n, float64(size)/1e6, float64(size)/float64(*n)/1e3)

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
		st, cleanup, err := benchstore.Open(ctx, b, *pgURL)
		if err != nil {
			fail(fmt.Errorf("%s: %w", b, err))
		}
		if err := measure(ctx, b, st, file, size, *n, *stored, *batch); err != nil {
			cleanup()
			fail(fmt.Errorf("%s: %w", b, err))
		}
		cleanup()
	}
}

// indexerEnv keeps the store's indexer off (LOOKOUT_INDEXER=off): the
// baseline of an ingest with no index written.
const indexerEnv = "LOOKOUT_INDEXER"

func fail(err error) {
	fmt.Fprintln(os.Stderr, "ingest:", err)
	os.Exit(1)
}

// makeFile writes n tau-bench traces as Invariant JSONL, in memory.
func makeFile(corpus string, n int) ([]byte, int64, error) {
	traces, err := corpusdata.Traces(corpus, corpusdata.TauBench)
	if err != nil {
		return nil, 0, err
	}
	var buf bytes.Buffer
	enc := invariant.NewEncoder(&buf)
	for i := range n {
		if err := enc.Encode(traces[i%len(traces)]); err != nil {
			return nil, 0, err
		}
	}
	if err := enc.Flush(); err != nil {
		return nil, 0, err
	}
	return buf.Bytes(), int64(buf.Len()), nil
}

// push sends the file's traces as `lookout push` does and returns the ids.
func push(ctx context.Context, c *client.Client, dataset string, file []byte, batch int) ([]string, error) {
	dec, _, err := formats.Open(bytes.NewReader(file), "bench.jsonl", formats.Auto)
	if err != nil {
		return nil, err
	}
	p := c.NewPusher(ctx, dataset, client.PusherOptions{BatchTraces: batch})
	for {
		t, err := dec.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			p.Close()
			return nil, err
		}
		if err := p.Add(trace.AppendTrace(nil, t)); err != nil {
			p.Close()
			return nil, err
		}
	}
	if err := p.Close(); err != nil {
		return nil, err
	}
	return p.IDs(), nil
}

func measure(ctx context.Context, name string, st store.Store, file []byte, size int64, n, stored, batch int) error {
	url, stop, err := benchstore.Serve(st)
	if err != nil {
		return err
	}
	defer stop()
	c, err := client.New(url)
	if err != nil {
		return err
	}
	start := time.Now()
	ids, err := push(ctx, c, "ingest", file, batch)
	if err != nil {
		return err
	}
	took := time.Since(start)
	if len(ids) != n {
		return fmt.Errorf("pushed %d of %d traces", len(ids), n)
	}
	fmt.Printf("%s ingest: %d traces in %.2f s: %.0f traces/s, %.1f MB/s\n", name, n, took.Seconds(), float64(n)/took.Seconds(), float64(size)/1e6/took.Seconds())
	if os.Getenv(indexerEnv) != "off" {
		// End to end: until a search sees every trace (it waits for the
		// indexer to index what was queued before it).
		ds, err := c.Datasets(ctx, client.DatasetFilter{Name: "ingest", Mine: true})
		if err != nil || len(ds) != 1 {
			return fmt.Errorf("finding the dataset: %v", err)
		}
		res, err := c.Search(ctx, ds[0].ID, "airline", "", 1)
		if err != nil {
			return err
		}
		e2e := time.Since(start)
		if len(res.Traces) != 1 {
			return fmt.Errorf("a search for airline found %d traces", len(res.Traces))
		}
		fmt.Printf("%s searchable: all %d traces in %.2f s: %.0f traces/s end to end\n", name, n, e2e.Seconds(), float64(n)/e2e.Seconds())
	}
	if stored <= 0 {
		return nil
	}

	// Fill the dataset up to stored traces, then time reads.
	fillStart := time.Now()
	for len(ids) < stored {
		more, err := push(ctx, c, "ingest", file, batch)
		if err != nil {
			return err
		}
		ids = append(ids, more...)
	}
	fmt.Printf("%s fill: %d traces stored (%.0f traces/s)\n", name, len(ids), float64(len(ids)-n)/time.Since(fillStart).Seconds())
	ds, err := c.Datasets(ctx, client.DatasetFilter{Name: "ingest", Mine: true})
	if err != nil || len(ds) != 1 {
		return fmt.Errorf("finding the dataset: %v", err)
	}
	datasetID := ds[0].ID

	rng := rand.New(rand.NewPCG(1, 2))
	var gets []time.Duration
	for range 2000 {
		id := ids[rng.IntN(len(ids))]
		t0 := time.Now()
		if _, err := c.Trace(ctx, id); err != nil {
			return err
		}
		gets = append(gets, time.Since(t0))
	}
	// Cursors spread over the whole list, then pages fetched at random.
	var cursors []string
	cursor := ""
	for {
		page, err := c.Traces(ctx, datasetID, cursor, 1000)
		if err != nil {
			return err
		}
		if page.Next == "" {
			break
		}
		cursors = append(cursors, page.Next)
		cursor = page.Next
	}
	cursors = append(cursors, "")
	var lists []time.Duration
	for range 1000 {
		cur := cursors[rng.IntN(len(cursors))]
		t0 := time.Now()
		page, err := c.Traces(ctx, datasetID, cur, 100)
		if err != nil {
			return err
		}
		if len(page.Traces) == 0 {
			return fmt.Errorf("empty page")
		}
		lists = append(lists, time.Since(t0))
	}
	fmt.Printf("%s at %d traces: trace get p50 %s p99 %s; list page (100 traces) p50 %s p99 %s\n\n",
		name, len(ids), pct(gets, 50), pct(gets, 99), pct(lists, 50), pct(lists, 99))
	return nil
}

func pct(d []time.Duration, p int) string {
	s := slices.Clone(d)
	slices.Sort(s)
	v := s[min(len(s)-1, len(s)*p/100)]
	return strconv.FormatFloat(float64(v.Microseconds())/1000, 'f', 2, 64) + " ms"
}
