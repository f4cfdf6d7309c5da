package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/lookout-dev/lookout/internal/search"
	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/postgres/pgtest"
	"github.com/lookout-dev/lookout/internal/trace"
)

// TestUnreachable: what a lost server or connection says (SQLSTATE, a
// broken connection) is told apart from what a retry would not fix.
func TestUnreachable(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{&pgconn.PgError{Code: "57P01"}, true}, // admin_shutdown
		{&pgconn.PgError{Code: "57P02"}, true}, // crash_shutdown
		{&pgconn.PgError{Code: "57P03"}, true}, // cannot_connect_now
		{&pgconn.PgError{Code: "53300"}, true}, // too_many_connections
		{&pgconn.PgError{Code: "08006"}, true}, // connection_failure
		{&pgconn.PgError{Code: "08001"}, true}, // sqlclient_unable_to_establish_sqlconnection
		{fmt.Errorf("begin: %w", &pgconn.PgError{Code: "08003"}), true},
		{&pgconn.PgError{Code: "08P01"}, false}, // protocol_violation: a bug here
		{&pgconn.PgError{Code: "23505"}, false},
		{&pgconn.PgError{Code: "57014"}, false}, // query_canceled
		{fmt.Errorf("read: %w", io.ErrUnexpectedEOF), true},
		{io.EOF, true},
		{context.Canceled, false},
		{fmt.Errorf("timeout: %w", context.DeadlineExceeded), false},
		{errors.New("something else"), false},
	} {
		if got := unreachable(c.err); got != c.want {
			t.Errorf("unreachable(%v) = %v, want %v", c.err, got, c.want)
		}
	}
	// A request that ended: its context's error, not a retry.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, err := range []error{io.EOF, fmt.Errorf("read: %w", context.Canceled)} {
		if got := fail(ctx, err, "x"); !errors.Is(got, context.Canceled) || errors.Is(got, store.ErrUnavailable) {
			t.Errorf("fail(canceled, %v) = %v, want context.Canceled", err, got)
		}
	}
	if got := fail(context.Background(), io.EOF, "x"); !errors.Is(got, store.ErrUnavailable) {
		t.Errorf("fail(io.EOF) = %v, want store.ErrUnavailable", got)
	}
}

// TestDatabaseDown: while the server is stopped every operation fails with
// store.ErrUnavailable (not a bare driver error, not ErrNotFound), and once
// it is started again the same store works, without being reopened.
func TestDatabaseDown(t *testing.T) {
	ctx := context.Background()
	cl := pgtest.NewCluster(t)
	st, err := Open(ctx, cl.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	u, err := st.CreateUser(ctx, "alice", "hash")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateAPIKey(ctx, u.ID, "k", "keyhash", "1234"); err != nil {
		t.Fatal(err)
	}
	d, err := st.CreateDataset(ctx, store.Dataset{OwnerID: u.ID, Name: "before"})
	if err != nil {
		t.Fatal(err)
	}
	newTrace := func(text string) []store.NewTrace {
		return []store.NewTrace{{Trace: &trace.Trace{Events: []trace.Event{{Role: "user", Content: trace.TextContent(text)}}}}}
	}
	ids, err := st.AddTraces(ctx, u.ID, d.ID, newTrace("hello before"))
	if err != nil {
		t.Fatal(err)
	}
	q, err := search.Parse("hello")
	if err != nil {
		t.Fatal(err)
	}
	build := func(otelID string, spans [][]byte) (*trace.Trace, error) {
		return &trace.Trace{Events: []trace.Event{{Role: "user", Content: trace.TextContent("from spans")}}}, nil
	}
	group := []store.SpanGroup{{OTelTraceID: "0102030405060708090a0b0c0d0e0f10", Spans: []store.StoredSpan{{SpanID: "0102030405060708", Data: []byte("x")}}}}
	// Reads and writes of each kind: sqlstore's, spanstore's, this
	// package's own statements on the pool, and search.
	ops := []struct {
		name string
		do   func() error
	}{
		{"CountUsers", func() error { _, err := st.CountUsers(ctx); return err }},
		{"UserByAPIKey", func() error { _, err := st.UserByAPIKey(ctx, "keyhash"); return err }},
		{"Dataset", func() error { _, err := st.Dataset(ctx, d.ID); return err }},
		{"ListDatasets", func() error { _, err := st.ListDatasets(ctx, u.ID); return err }},
		{"ListTraces", func() error { _, _, err := st.ListTraces(ctx, d.ID, store.Page{}); return err }},
		{"Trace", func() error { _, err := st.Trace(ctx, ids[0]); return err }},
		{"SearchTraces", func() error { _, err := st.SearchTraces(ctx, d.ID, q, store.SearchOptions{}); return err }},
		{"CreateDataset", func() error {
			_, err := st.CreateDataset(ctx, store.Dataset{OwnerID: u.ID, Name: fmt.Sprintf("d%d", time.Now().UnixNano())})
			return err
		}},
		{"AddTraces", func() error { _, err := st.AddTraces(ctx, u.ID, d.ID, newTrace("hello again")); return err }},
		{"AppendEvents", func() error {
			return st.AppendEvents(ctx, ids[0], []trace.Event{{Role: "assistant", Content: trace.TextContent("more")}})
		}},
		{"AcceptSpans", func() error { _, err := st.AcceptSpans(ctx, u.ID, d.ID, group); return err }},
		{"BuildPendingSpans", func() error {
			_, err := st.BuildPendingSpans(ctx, store.PendingFilter{DatasetID: d.ID}, build)
			return err
		}},
		{"PendingSpanTraces", func() error { _, err := st.PendingSpanTraces(ctx); return err }},
	}
	for _, op := range ops {
		if err := op.do(); err != nil {
			t.Fatalf("%s with the server up: %v", op.name, err)
		}
	}

	cl.Stop(t)
	// Twice: the first finds the pool's connections ended by the shutdown,
	// the second has to connect.
	for round := range 2 {
		for _, op := range ops {
			err := op.do()
			if !errors.Is(err, store.ErrUnavailable) || errors.Is(err, store.ErrNotFound) {
				t.Errorf("%s with the server down (round %d): %v; want store.ErrUnavailable", op.name, round, err)
			}
		}
	}

	cl.Start(t)
	// The pool may hand out a connection it has not yet found dead: a
	// retry or two, within a generous deadline.
	deadline := time.Now().Add(time.Minute)
	for {
		_, err := st.CountUsers(ctx)
		if err == nil {
			break
		}
		if !errors.Is(err, store.ErrUnavailable) || time.Now().After(deadline) {
			t.Fatalf("after the server came back: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, op := range ops {
		if err := op.do(); err != nil {
			t.Errorf("%s after the server came back: %v", op.name, err)
		}
	}
	got, err := st.Trace(ctx, ids[0])
	if err != nil || len(got.Trace.Events) < 2 || !strings.Contains(got.Trace.Events[0].Content.Text, "hello before") {
		t.Errorf("the trace written before the outage: %+v, %v", got.Trace, err)
	}
}
