// Command replicas measures Lookout scaled out: 1, 2 and 3 `lookout serve`
// replicas on one PostgreSQL, the load sent to them in turn (round robin,
// as a balancer without affinity), for OpenTelemetry spans (OTLP/HTTP) and
// for pushed traces (POST /api/v1/push/trace).
//
//	go run ./bench/replicas                                # 1, 2 and 3 replicas, 20 s a load
//	go run ./bench/replicas -replicas 1,3 -duration 10s -lookout ./lookout
//
// For each replica count: a fresh database, the replicas started together
// (they migrate it once), then
//   - OTLP: -clients exporters for -duration, each sending its next batch
//     of 512 spans (20-span GenAI agent traces in two batches, bench/otelgen)
//     to the next replica, so a trace's two parts reach different replicas;
//     accepted spans/s (answered 200), and end to end until every trace is
//     built and counted by a search (no pending trace, the dataset's count
//     and a search for the run's token equal to the traces sent);
//   - push: -clients pushers for -duration, each sending batches of
//     -batch tau-bench traces (the shared corpus) to the next replica;
//     acknowledged traces/s, and end to end until a search through one
//     replica (which indexes its dataset's queue first) counts them all.
//
// With each figure, the CPU time a span (a trace for push) of the lookout
// processes and of PostgreSQL (its postmaster and backends, from /proc)
// over the load and its drain: the split that says where the ceiling is
// on more machines (bench/README.md, "Replicas").
//
// PostgreSQL: -pg URL, else $LOOKOUT_TEST_POSTGRES, else a throwaway
// cluster; its CPU is read when it runs on this machine (a shared server's
// includes everyone's work). Linux only (/proc). Figures go in
// bench/README.md.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lookout-dev/lookout/bench/benchproc"
	"github.com/lookout-dev/lookout/bench/benchstore"
	"github.com/lookout-dev/lookout/bench/corpusdata"
	"github.com/lookout-dev/lookout/bench/otelgen"
	"github.com/lookout-dev/lookout/client"
	"github.com/lookout-dev/lookout/internal/trace"
)

func main() {
	bin := flag.String("lookout", "", "a lookout binary (default: build this checkout's)")
	counts := flag.String("replicas", "1,2,3", "replica counts to measure, in order")
	duration := flag.Duration("duration", 20*time.Second, "how long each load (OTLP, push) runs")
	clients := flag.Int("clients", 4, "OTLP exporters, and pushers, sending at once")
	batch := flag.Int("batch", 500, "traces per push request")
	pool := flag.Int("pool", 0, "pool_max_conns of each replica (0: the server's default, max(8, 4 × GOMAXPROCS))")
	corpus := flag.String("corpus", "../shared/corpus", "the shared corpus directory")
	pgURL := flag.String("pg", os.Getenv("LOOKOUT_TEST_POSTGRES"), "PostgreSQL URL the bench may create databases in (default: a throwaway cluster)")
	drainMax := flag.Duration("drain-timeout", 15*time.Minute, "longest wait, after a load, for everything to be built and searchable")
	flag.Parse()

	var ns []int
	for _, s := range strings.Split(*counts, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			fail(fmt.Errorf("-replicas: %q is not a replica count", s))
		}
		ns = append(ns, n)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	b := &bench{clients: *clients, batch: *batch, pool: *pool, d: *duration, drainMax: *drainMax}
	err := b.run(ctx, *bin, *corpus, *pgURL, ns)
	b.close()
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "replicas bench:", err)
	os.Exit(1)
}

type bench struct {
	clients, batch, pool int
	d, drainMax          time.Duration
	bin, tmp             string
	traces               []json.RawMessage // canonical tau-bench traces, pushed in turn
	pgAdmin              string            // URL of the server's postgres database
	pgPID                int               // its postmaster, when on this machine (else 0)
	pgStop               func()
}

func (b *bench) close() {
	if b.pgStop != nil {
		b.pgStop()
		b.pgStop = nil
	}
	if b.tmp != "" {
		os.RemoveAll(b.tmp)
	}
}

// row is one replica count's figures.
type row struct {
	n                   int
	accepted, otlpE2E   float64 // spans/s
	otlpDrain           time.Duration
	otlpLookout, otlpPG float64 // CPU µs a span
	otlpClient          float64 // the load generator's
	pushed, pushE2E     float64 // traces/s
	pushLookout, pushPG float64 // CPU µs a trace
	refused             int
	otlpNote            string
}

func (b *bench) run(ctx context.Context, bin, corpus, pgURL string, ns []int) error {
	if err := b.lookout(bin); err != nil {
		return err
	}
	ts, err := corpusdata.Traces(corpus, corpusdata.TauBench)
	if err != nil {
		return err
	}
	for _, t := range ts {
		b.traces = append(b.traces, trace.AppendTrace(nil, t))
	}
	if err := b.postgres(ctx, pgURL); err != nil {
		return fmt.Errorf("PostgreSQL: %w", err)
	}
	pool := "the server's default pool (max(8, 4 × GOMAXPROCS) connections)"
	if b.pool > 0 {
		pool = fmt.Sprintf("pool_max_conns=%d", b.pool)
	}
	fmt.Printf("machine: %s/%s, %d CPUs, %s; %s\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version(), time.Now().UTC().Format("2006-01-02"))
	fmt.Printf("load: %d OTLP exporters (batches of %d spans, %d-span traces in two batches), then %d pushers (batches of %d tau-bench traces), %s each, round robin over the replicas; %s a replica\n\n",
		b.clients, otelgen.BatchSpans, otelgen.TraceSpans, b.clients, b.batch, b.d, pool)
	var rows []row
	for _, n := range ns {
		r, err := b.one(ctx, n)
		if err != nil {
			return fmt.Errorf("%d replicas: %w", n, err)
		}
		rows = append(rows, r)
	}
	fmt.Println()
	fmt.Println("| replicas | OTLP accepted spans/s | OTLP end to end spans/s | push traces/s (acknowledged / searchable) | Lookout CPU µs a span | PostgreSQL CPU µs a span | push: Lookout / PostgreSQL CPU µs a trace |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for _, r := range rows {
		fmt.Printf("| %d | %s | %s | %s / %s | %.0f | %s | %.0f / %s |\n", r.n, thousands(r.accepted), thousands(r.otlpE2E),
			thousands(r.pushed), thousands(r.pushE2E), r.otlpLookout, b.pgFigure(r.otlpPG), r.pushLookout, b.pgFigure(r.pushPG))
	}
	if b.pgPID != 0 && len(rows) > 0 {
		// The shared ceiling (bench/README.md): PostgreSQL's CPU a span,
		// whatever the replica count; one core of it does 1e6/µs spans.
		last := rows[len(rows)-1]
		fmt.Printf("\nPostgreSQL CPU a span %.0f µs: one PostgreSQL core's worth is about %s spans/s (%s pushed traces/s), before replicas' CPU, pool sizes or disks bind\n",
			last.otlpPG, thousands(1e6/last.otlpPG), thousands(1e6/last.pushPG))
	}
	return nil
}

func (b *bench) pgFigure(v float64) string {
	if b.pgPID == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.0f", v)
}

// lookout is the binary given, or this checkout's, built once.
func (b *bench) lookout(bin string) error {
	if bin != "" {
		b.bin = bin
		return nil
	}
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if m, err := os.ReadFile(mod); err != nil || !strings.HasPrefix(string(m), "module github.com/lookout-dev/lookout\n") {
		return fmt.Errorf("run the bench in the Lookout repository (go.mod here: %q)", mod)
	}
	if b.tmp, err = os.MkdirTemp("", "lookout-bench-replicas-"); err != nil {
		return err
	}
	b.bin = filepath.Join(b.tmp, "lookout")
	cmd := exec.Command("go", "build", "-o", b.bin, "./cmd/lookout")
	cmd.Dir = filepath.Dir(mod)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building lookout: %w\n%s", err, out)
	}
	return nil
}

// postgres uses the server at pgURL, or starts a throwaway cluster, and
// finds its postmaster when it runs here: the parent of a backend.
func (b *bench) postgres(ctx context.Context, pgURL string) error {
	if pgURL == "" {
		u, _, stop, err := benchstore.StartCluster()
		if err != nil {
			return err
		}
		pgURL, b.pgStop = u, stop
	}
	b.pgAdmin = pgURL
	conn, err := pgx.Connect(ctx, pgURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	var backend int
	var maxConns string
	if err := conn.QueryRow(ctx, "SELECT pg_backend_pid(), current_setting('max_connections')").Scan(&backend, &maxConns); err != nil {
		return err
	}
	if ppid, err := benchproc.ParentPID(backend); err == nil {
		b.pgPID = ppid
	} else {
		fmt.Println("PostgreSQL runs elsewhere: its CPU is not measured")
	}
	fmt.Printf("PostgreSQL: max_connections %s\n", maxConns)
	return nil
}

func (b *bench) exec(ctx context.Context, sql string) error {
	conn, err := pgx.Connect(ctx, b.pgAdmin)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

// cpu is the CPU time so far of the replicas and of PostgreSQL.
func (b *bench) cpu(rs []*benchproc.Child) (lookout, pg time.Duration, err error) {
	for _, r := range rs {
		t, err := benchproc.ProcessCPU(r.PID())
		if err != nil {
			return 0, 0, err
		}
		lookout += t
	}
	if b.pgPID != 0 {
		if pg, err = benchproc.TreeCPU(b.pgPID); err != nil {
			return 0, 0, err
		}
	}
	return lookout, pg, nil
}

func (b *bench) one(ctx context.Context, n int) (row, error) {
	r := row{n: n}
	token := "tk" + randWord(10)
	name := "replicas_" + token
	if err := b.exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return r, fmt.Errorf("creating database %s: %w", name, err)
	}
	defer func() {
		if err := b.exec(context.Background(), "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			fmt.Fprintln(os.Stderr, "replicas bench: dropping", name+":", err)
		}
	}()
	u, err := url.Parse(b.pgAdmin)
	if err != nil {
		return r, err
	}
	u.Path = "/" + name
	if b.pool > 0 {
		q := u.Query()
		q.Set("pool_max_conns", strconv.Itoa(b.pool))
		u.RawQuery = q.Encode()
	}
	rs, bases, err := b.start(u.String(), n)
	defer func() {
		for _, c := range rs {
			if c != nil {
				c.Stop()
			}
		}
	}()
	if err != nil {
		return r, err
	}
	alive := func() error {
		for _, c := range rs {
			if err := c.Alive(); err != nil {
				return err
			}
		}
		return nil
	}

	// OTLP.
	l0, p0, err := b.cpu(rs)
	if err != nil {
		return r, err
	}
	self0 := benchproc.SelfCPU()
	var urls []string
	for _, base := range bases {
		urls = append(urls, base+"/v1/traces")
	}
	service := "agent-" + token
	load, err := otelgen.RunLoad(ctx, urls, b.clients, b.d, service, token, uint64(n))
	if err != nil {
		return r, fmt.Errorf("OTLP load: %w", err)
	}
	self1 := benchproc.SelfCPU()
	sctx, cancel := context.WithTimeout(ctx, b.drainMax)
	var l1, p1 time.Duration
	snap := func() (err error) {
		l1, p1, err = b.cpu(rs)
		return err
	}
	done, note, err := settleOTLP(sctx, bases, load, alive, snap)
	cancel()
	if err != nil {
		return r, err
	}
	r.otlpNote = note
	spans := float64(load.Spans)
	perSpan := func(t time.Duration) float64 { return float64(t) / float64(time.Microsecond) / spans }
	r.accepted = spans / load.Elapsed.Seconds()
	r.otlpE2E = spans / done.Sub(load.Start).Seconds()
	r.otlpDrain = done.Sub(load.Start.Add(load.Elapsed))
	r.otlpLookout, r.otlpPG, r.otlpClient = perSpan(l1-l0), perSpan(p1-p0), perSpan(self1-self0)
	r.refused = load.Refused
	fmt.Printf("%d replicas  OTLP  %8s spans/s accepted  %8s end to end (%.1f s after the load)  p50 %5.1f ms  p99 %6.1f ms  CPU a span: lookout %.0f µs, PostgreSQL %s µs, load generator %.0f µs;  %d spans, %d requests, %d refused; %s\n",
		n, thousands(r.accepted), thousands(r.otlpE2E), r.otlpDrain.Seconds(), ms(load.Quantile(0.5)), ms(load.Quantile(0.99)),
		r.otlpLookout, b.pgFigure(r.otlpPG), r.otlpClient, load.Spans, load.Requests, load.Refused, r.otlpNote)

	// Push.
	l0, p0, err = b.cpu(rs)
	if err != nil {
		return r, err
	}
	dataset := "push-" + token
	start := time.Now()
	pushed, refused, err := b.push(ctx, bases, dataset)
	if err != nil {
		return r, fmt.Errorf("push: %w", err)
	}
	acked := time.Since(start)
	sctx, cancel = context.WithTimeout(ctx, b.drainMax)
	err = settlePush(sctx, bases[0], dataset, pushed)
	cancel()
	if err != nil {
		return r, err
	}
	searchable := time.Since(start)
	l1, p1, err = b.cpu(rs)
	if err != nil {
		return r, err
	}
	perTrace := func(t time.Duration) float64 { return float64(t) / float64(time.Microsecond) / float64(pushed) }
	r.pushed = float64(pushed) / acked.Seconds()
	r.pushE2E = float64(pushed) / searchable.Seconds()
	r.pushLookout, r.pushPG = perTrace(l1-l0), perTrace(p1-p0)
	fmt.Printf("%d replicas  push  %8s traces/s acknowledged  %8s searchable (%.1f s after the last)  CPU a trace: lookout %.0f µs, PostgreSQL %s µs;  %d traces, %d requests refused (the index behind) and sent again\n",
		n, thousands(r.pushed), thousands(r.pushE2E), (searchable - acked).Seconds(), r.pushLookout, b.pgFigure(r.pushPG), pushed, refused)
	return r, alive()
}

// start starts n replicas on db at once (they migrate it together, once)
// and returns them with their base URLs.
func (b *bench) start(db string, n int) ([]*benchproc.Child, []string, error) {
	rs := make([]*benchproc.Child, n)
	bases := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			cmd := exec.Command(b.bin, "serve", "--addr", "127.0.0.1:0", "--db", db, "--quiet")
			rs[i], bases[i], errs[i] = benchproc.Start(fmt.Sprintf("replica %d", i+1), cmd,
				func(line string) string { return benchproc.AfterPrefix(line, "lookout: serving ") })
		})
	}
	wg.Wait()
	return rs, bases, errors.Join(errs...)
}

// push sends batches of the corpus's traces from b.clients pushers for
// b.d, each request to the next replica, and returns how many traces were
// acknowledged and how many requests were refused (503, 429) and sent again.
func (b *bench) push(ctx context.Context, bases []string, dataset string) (int, int, error) {
	var cs []*client.Client
	for _, base := range bases {
		c, err := client.New(base)
		if err != nil {
			return 0, 0, err
		}
		cs = append(cs, c)
	}
	var total, refused atomic.Int64
	errs := make([]error, b.clients)
	deadline := time.Now().Add(b.d)
	var wg sync.WaitGroup
	for p := range b.clients {
		wg.Go(func() {
			batch := make([]json.RawMessage, b.batch)
			for i, next := p*b.batch, p; time.Now().Before(deadline); next++ {
				for j := range batch {
					batch[j] = b.traces[(i+j)%len(b.traces)]
				}
				i += len(batch)
				ids, err := cs[next%len(cs)].PushTraces(ctx, dataset, batch)
				var e *client.Error
				if errors.As(err, &e) && (e.Status == http.StatusServiceUnavailable || e.Status == http.StatusTooManyRequests) {
					// Back-pressure (the search index is behind): wait and
					// send the batch again, as `lookout push` would be
					// told to; the rate is then the sustained one.
					refused.Add(1)
					i -= len(batch)
					select {
					case <-ctx.Done():
						errs[p] = ctx.Err()
						return
					case <-time.After(time.Second):
					}
					continue
				}
				if err != nil {
					errs[p] = err
					return
				}
				if len(ids) != len(batch) {
					errs[p] = fmt.Errorf("%d ids for %d traces", len(ids), len(batch))
					return
				}
				total.Add(int64(len(ids)))
			}
		})
	}
	wg.Wait()
	return int(total.Load()), int(refused.Load()), errors.Join(errs...)
}

// settleOTLP waits until every trace of l is built and found: no pending
// trace, the dataset's count and a search for the run's token both equal
// to the traces sent. Each question goes to the next replica. A trace
// stored without its last spans lacks the token: once nothing is pending,
// the count is right and the search's count has not moved for
// stableFor, it returns the time the count last moved and says how many
// traces are incomplete. snap is called whenever the count moves: the
// CPU time is read then.
func settleOTLP(ctx context.Context, bases []string, l *otelgen.Load, alive, snap func() error) (time.Time, string, error) {
	start := time.Now()
	var built time.Duration
	var id string
	lastFound, lastMoved := -1, time.Now()
	for i := 0; ; i++ {
		if err := alive(); err != nil {
			return time.Time{}, "", err
		}
		base := bases[i%len(bases)]
		var bl struct {
			Spans struct {
				PendingTraces int64 `json:"pending_traces"`
			} `json:"spans"`
		}
		if err := getJSON(ctx, base+"/api/v1/backlog", &bl); err != nil {
			return time.Time{}, "", fmt.Errorf("counting pending traces: %w", err)
		}
		if bl.Spans.PendingTraces == 0 {
			if built == 0 {
				built = time.Since(start)
			}
			if id == "" {
				var err error
				if id, err = datasetID(ctx, base, l.Service); err != nil {
					return time.Time{}, "", err
				}
			}
			count, found, err := counts(ctx, base, id, l.Token)
			if err != nil {
				return time.Time{}, "", err
			}
			if count > l.Traces || found > l.Traces {
				return time.Time{}, "", fmt.Errorf("dataset %s holds %d traces and a search finds %d, but %d were sent", l.Service, count, found, l.Traces)
			}
			if found != lastFound {
				// The CPU figures end here, not after the wait.
				lastFound, lastMoved = found, time.Now()
				if err := snap(); err != nil {
					return time.Time{}, "", err
				}
			}
			if count == l.Traces && found == l.Traces {
				return time.Now(), fmt.Sprintf("%d traces built (%.1f s after the load), all found by a search (%.1f s)", l.Traces, built.Seconds(), time.Since(start).Seconds()), nil
			}
			if count == l.Traces && found >= 0 && time.Since(lastMoved) > stableFor {
				return lastMoved, fmt.Sprintf("WARNING: %d of %d traces stored without their last spans (a search for the token in their final answer finds %d, unchanged for %s with nothing pending)",
					l.Traces-found, l.Traces, found, stableFor), nil
			}
		}
		select {
		case <-ctx.Done():
			return time.Time{}, "", fmt.Errorf("traces still not built or found (%d pending): %w", bl.Spans.PendingTraces, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// stableFor is how long a search's count must stay put, with nothing left
// to build, before the bench takes the missing traces as lost.
const stableFor = 10 * time.Second

// settlePush waits until the dataset holds n traces and a search for a
// word of every tau-bench trace counts them all (a search indexes its
// dataset's queue first).
func settlePush(ctx context.Context, base, dataset string, n int) error {
	id, err := datasetID(ctx, base, dataset)
	if err != nil {
		return err
	}
	for {
		count, found, err := counts(ctx, base, id, "airline")
		if err != nil {
			return err
		}
		if count == n && found == n {
			return nil
		}
		if count > n || found > n {
			return fmt.Errorf("dataset %s holds %d traces and a search finds %d, but %d were pushed", dataset, count, found, n)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d pushed, %d stored, %d found: %w", n, count, found, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// counts is the dataset's trace count and the exact number of traces a
// search for q finds in it.
func counts(ctx context.Context, base, id, q string) (int, int, error) {
	var d struct {
		TraceCount int `json:"trace_count"`
	}
	if err := getJSON(ctx, base+"/api/v1/datasets/"+id, &d); err != nil {
		return 0, 0, err
	}
	var found struct {
		Total    int  `json:"total"`
		Estimate bool `json:"total_is_estimate"`
	}
	v := url.Values{"q": {q}, "limit": {"1"}, "count_cap": {"100000"}}
	if err := getJSON(ctx, base+"/api/v1/datasets/"+id+"/search?"+v.Encode(), &found); err != nil {
		return 0, 0, err
	}
	if found.Estimate {
		return d.TraceCount, -1, nil
	}
	return d.TraceCount, found.Total, nil
}

func datasetID(ctx context.Context, base, name string) (string, error) {
	var ds struct {
		Datasets []struct {
			ID string `json:"id"`
		} `json:"datasets"`
	}
	if err := getJSON(ctx, base+"/api/v1/datasets?"+url.Values{"name": {name}}.Encode(), &ds); err != nil {
		return "", err
	}
	if len(ds.Datasets) != 1 {
		return "", fmt.Errorf("%d datasets named %s", len(ds.Datasets), name)
	}
	return ds.Datasets[0].ID, nil
}

func getJSON(ctx context.Context, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %d %s", u, resp.StatusCode, bytes.TrimSpace(body))
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	return nil
}

// thousands formats v rounded, with commas: 12,345.
func thousands(v float64) string {
	s := strconv.FormatInt(int64(v+0.5), 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func randWord(n int) string {
	const letters = "abcdefghijklmnopqrstuvwxyz0123456789"
	w := make([]byte, n)
	for i := range w {
		w[i] = letters[rand.IntN(len(letters))]
	}
	return string(w)
}
