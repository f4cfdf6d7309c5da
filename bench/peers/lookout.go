package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lookout-dev/lookout/bench/benchstore"

	"github.com/lookout-dev/lookout/bench/benchproc"
	"github.com/lookout-dev/lookout/bench/otelgen"
)

// Lookout: `lookout serve` built from this checkout, over a fresh SQLite
// file or a fresh PostgreSQL database, in local mode (no users: requests
// from this machine need no key), spans going to the dataset named by
// their service.name.

type lookoutTarget struct{ backend string }

func (t lookoutTarget) start(ctx context.Context, b *bench, name string) (server, error) {
	bin, err := b.lookout()
	if err != nil {
		return nil, err
	}
	s := &lookoutServer{}
	var db string
	switch t.backend {
	case "sqlite":
		dir, err := os.MkdirTemp("", "lookout-bench-peers-")
		if err != nil {
			return nil, err
		}
		s.cleanup = append(s.cleanup, func() { os.RemoveAll(dir) })
		db = filepath.Join(dir, "lookout.db")
	case "postgres":
		pg, err := b.postgres()
		if err != nil {
			return nil, err
		}
		if db, err = pg.createDB(ctx, name); err != nil {
			return nil, err
		}
		s.cleanup = append(s.cleanup, func() {
			if err := pg.dropDB(context.Background(), name); err != nil {
				fmt.Fprintln(os.Stderr, "peers bench:", err)
			}
		})
		s.dbPID = pg.pid
	}
	args := []string{"serve", "--addr", "127.0.0.1:0", "--db", db, "--quiet"}
	if b.profiles != "" {
		args = append(args, "--cpuprofile", filepath.Join(b.profiles, name+".pprof"))
	}
	c, addr, err := benchproc.Start("lookout serve", exec.Command(bin, args...),
		func(line string) string { return benchproc.AfterPrefix(line, "lookout: serving ") })
	if err != nil {
		s.stop()
		return nil, err
	}
	s.c, s.base = c, addr
	return s, nil
}

// backlog reads the server's pending traces (spans not built into their
// traces yet) and the traces queued for the search index.
func (s *lookoutServer) backlog(ctx context.Context) (pending, queued int64, err error) {
	var bl struct {
		Spans struct {
			PendingTraces int64 `json:"pending_traces"`
		} `json:"spans"`
		Index struct {
			Queued int64 `json:"queued"`
		} `json:"search_index"`
	}
	err = getJSON(ctx, s.base+"/api/v1/backlog", &bl)
	return bl.Spans.PendingTraces, bl.Index.Queued, err
}

type lookoutServer struct {
	c       *benchproc.Child
	base    string
	dbPID   int // PostgreSQL's postmaster, when the bench runs it (else 0)
	cleanup []func()
	dataset string // the run's dataset, once settled
	checked string
}

func (s *lookoutServer) otlpURL() string { return s.base + "/v1/traces" }

func (s *lookoutServer) cpu() (cpuUse, error) {
	t, err := benchproc.ProcessCPU(s.c.PID())
	u := cpuUse{server: t}
	if err == nil && s.dbPID != 0 {
		u.db, err = benchproc.TreeCPU(s.dbPID)
		u.dbKnown = true
	}
	return u, err
}

// settle waits until every trace sent is stored, built and searchable: no
// pending trace left, then (read after) none queued for the search index,
// and the dataset's trace count right. Searches see every trace stored
// whatever the index holds (they index what is queued first); waiting for
// the queue counts the index's work in the time and the CPU. check then
// proves it with a search, after the CPU is read, as Jaeger's check counts
// its traces.
func (s *lookoutServer) settle(ctx context.Context, l *otelgen.Load) error {
	start := time.Now()
	var built time.Duration // when no trace was pending any more
	for {
		if err := s.c.Alive(); err != nil {
			return err
		}
		pending, _, err := s.backlog(ctx)
		if err != nil {
			return fmt.Errorf("reading the backlog: %w", err)
		}
		if pending == 0 {
			if built == 0 {
				built = time.Since(start)
			}
			// Read after no trace was pending: a build queues its traces
			// for the index in its own transaction.
			_, queued, err := s.backlog(ctx)
			if err != nil {
				return fmt.Errorf("reading the backlog: %w", err)
			}
			if queued == 0 {
				if s.dataset == "" {
					if s.dataset, err = s.datasetNamed(ctx, l.Service); err != nil {
						return err
					}
				}
				var d struct {
					TraceCount int `json:"trace_count"`
				}
				if err := getJSON(ctx, s.base+"/api/v1/datasets/"+s.dataset, &d); err != nil {
					return err
				}
				if d.TraceCount > l.Traces {
					return fmt.Errorf("dataset %s holds %d traces, but %d were sent", l.Service, d.TraceCount, l.Traces)
				}
				if d.TraceCount == l.Traces {
					s.checked = fmt.Sprintf("%d traces built (%.1f s after the load), none pending, all indexed (%.1f s)",
						l.Traces, built.Seconds(), time.Since(start).Seconds())
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("traces still not built or indexed (%d pending): %w", pending, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// datasetNamed finds the id of the dataset named name.
func (s *lookoutServer) datasetNamed(ctx context.Context, name string) (string, error) {
	var ds struct {
		Datasets []struct {
			ID string `json:"id"`
		} `json:"datasets"`
	}
	if err := getJSON(ctx, s.base+"/api/v1/datasets?"+url.Values{"name": {name}}.Encode(), &ds); err != nil {
		return "", err
	}
	if len(ds.Datasets) != 1 {
		return "", fmt.Errorf("%d datasets named %s", len(ds.Datasets), name)
	}
	return ds.Datasets[0].ID, nil
}

// check searches for the run's token (in every trace's last chat span):
// the search must count every trace sent, exactly.
func (s *lookoutServer) check(ctx context.Context, l *otelgen.Load) (string, error) {
	var found struct {
		Total    int  `json:"total"`
		Estimate bool `json:"total_is_estimate"`
	}
	t0 := time.Now()
	q := url.Values{"q": {l.Token}, "limit": {"1"}, "count_cap": {"100000"}}
	if err := getJSON(ctx, s.base+"/api/v1/datasets/"+s.dataset+"/search?"+q.Encode(), &found); err != nil {
		return "", err
	}
	if found.Total != l.Traces || found.Estimate {
		return "", fmt.Errorf("a search for the run's token finds %d traces (an estimate: %v), but %d were sent", found.Total, found.Estimate, l.Traces)
	}
	return fmt.Sprintf("%s; all found by a search after (%.1f s)", s.checked, time.Since(t0).Seconds()), nil
}

func (s *lookoutServer) stop() {
	if s.c != nil {
		s.c.Stop()
	}
	for i := len(s.cleanup) - 1; i >= 0; i-- {
		s.cleanup[i]()
	}
	s.cleanup = nil
}

// pgServer is the PostgreSQL server the Lookout rounds make databases in.
type pgServer struct {
	admin string // URL of its postgres database
	pid   int    // the postmaster, when the bench started it
	stop  func()
}

// startPostgres uses the server at url, or starts a throwaway cluster.
func startPostgres(pgURL string) (*pgServer, error) {
	if pgURL != "" {
		return &pgServer{admin: pgURL, stop: func() {}}, nil
	}
	u, data, stop, err := benchstore.StartCluster()
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(data, "postmaster.pid"))
	if err != nil {
		stop()
		return nil, err
	}
	pid, err := strconv.Atoi(strings.SplitN(string(b), "\n", 2)[0])
	if err != nil {
		stop()
		return nil, fmt.Errorf("postmaster.pid: %w", err)
	}
	return &pgServer{admin: u, pid: pid, stop: stop}, nil
}

func (p *pgServer) createDB(ctx context.Context, name string) (string, error) {
	conn, err := pgx.Connect(ctx, p.admin)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", fmt.Errorf("creating database %s: %w", name, err)
	}
	u, err := url.Parse(p.admin)
	if err != nil {
		return "", err
	}
	u.Path = "/" + name
	return u.String(), nil
}

func (p *pgServer) dropDB(ctx context.Context, name string) error {
	conn, err := pgx.Connect(ctx, p.admin)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("dropping database %s: %w", name, err)
	}
	return nil
}
