// Command eval measures an evaluation run end to end: three non-LLM criteria
// (a guardrail rule, a code expression over the metadata, a code expression
// over the tool calls) over 10,000 tau-bench traces stored in SQLite, started
// and followed over HTTP the way `lookout eval` does, until every trace has
// its statuses and scores committed.
//
//	go run ./bench/eval                     # 10,000 traces, concurrency 4
//	go run ./bench/eval -traces 2000 -concurrency 2
//
// Figures go in bench/README.md.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/lookout-dev/lookout/bench/benchstore"
	"github.com/lookout-dev/lookout/bench/corpusdata"
	"github.com/lookout-dev/lookout/client"
	"github.com/lookout-dev/lookout/internal/server"
	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/sqlite"
)

// criteria are the three criteria of the benchmark (the README's example
// plus a bound on tool calls).
const criteria = `[
  {"name": "no-cancel", "evaluator": "rule", "policy": "raise \"cancel\" if:\n    (call: ToolCall)\n    call is tool:cancel_reservation\n"},
  {"name": "solved", "evaluator": "code", "expr": "metadata.reward == 1", "required": true, "threshold": 0.5},
  {"name": "few-calls", "evaluator": "code", "expr": "len(tool_calls) <= 10"}
]`

func main() {
	n := flag.Int("traces", 10000, "traces to evaluate")
	conc := flag.Int("concurrency", 4, "traces evaluated at once (lookout serve --eval-concurrency)")
	corpus := flag.String("corpus", "../shared/corpus", "the shared corpus directory")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the run to FILE")
	flag.Parse()
	ctx := context.Background()

	tau, err := corpusdata.Traces(*corpus, corpusdata.TauBench)
	if err != nil {
		fail(err)
	}
	dir, err := os.MkdirTemp("", "lookout-bench-eval")
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(dir)
	st, err := sqlite.Open(ctx, filepath.Join(dir, "lookout.db"))
	if err != nil {
		fail(err)
	}
	defer st.Close()
	u, err := st.LocalUser(ctx)
	if err != nil {
		fail(err)
	}
	d, err := st.CreateDataset(ctx, store.Dataset{OwnerID: u.ID, Name: "tau"})
	if err != nil {
		fail(err)
	}
	for i := 0; i < *n; i += 1000 {
		var batch []store.NewTrace
		for j := i; j < min(i+1000, *n); j++ {
			t := *tau[j%len(tau)]
			t.Annotations, t.Index = nil, nil
			batch = append(batch, store.NewTrace{Trace: &t})
		}
		if _, err := st.AddTraces(ctx, u.ID, d.ID, batch); err != nil {
			fail(err)
		}
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fail(err)
	}
	srv := server.New(server.Config{Store: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), EvalConcurrency: *conc})
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(ln)
	defer hs.Close()
	c, err := client.New("http://" + ln.Addr().String())
	if err != nil {
		fail(err)
	}

	fmt.Printf("machine: %s/%s, %d CPUs, %s; %s\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version(), time.Now().UTC().Format("2006-01-02 15:04"))
	fmt.Printf("input: %d tau-bench traces in SQLite; criteria: rule no-cancel, code solved, code few-calls; concurrency %d\n", *n, *conc)
	stopProfile, err := benchstore.StartCPUProfile(*cpuprofile)
	if err != nil {
		fail(err)
	}
	defer stopProfile()
	start := time.Now()
	run, err := c.StartEvalRun(ctx, d.ID, "bench", json.RawMessage(criteria))
	if err != nil {
		fail(err)
	}
	var lastProgress time.Time
	run, err = c.WaitEvalRun(ctx, run.ID, func(p client.EvalProgress) {
		if p.Done == int64(*n) {
			lastProgress = time.Now()
		}
	})
	if err != nil {
		fail(err)
	}
	took := time.Since(start)
	if run.State != "done" || run.Progress.Done != int64(*n) {
		fail(fmt.Errorf("run ended %s with %d of %d traces: %s", run.State, run.Progress.Done, *n, run.Error))
	}
	fmt.Printf("evaluated %d traces (%d scores) in %s: %.0f traces/s\n", *n, 3**n, took.Round(time.Millisecond), float64(*n)/took.Seconds())
	if !lastProgress.IsZero() {
		fmt.Printf("  (all stored after %s; the summary took the rest)\n", lastProgress.Sub(start).Round(time.Millisecond))
	}
	for _, s := range run.Summary {
		fmt.Printf("  %s: %d passed, %d failed, %d errors\n", s.Criterion, s.Passed, s.Failed, s.Errors)
	}
	srv.StopRuns()
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench/eval:", err)
	os.Exit(1)
}
