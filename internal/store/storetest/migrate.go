package storetest

import (
	"context"
	"database/sql"
	"slices"
	"strings"
	"testing"

	"github.com/pressly/goose/v3"

	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/trace"
)

// MigratePolicyMode checks that a policy saved before policies had a mode
// comes out of the migration as log, and that the column takes nothing but
// block or log. p migrates db, a new database of the backend, in which now
// is the SQL of a time; once db is closed, open opens the store on it
// (closed when t ends) with a function that runs a statement on it.
func MigratePolicyMode(t *testing.T, p *goose.Provider, db *sql.DB, now string, open func() (store.Store, func(query string) error)) {
	t.Helper()
	ctx := context.Background()
	if _, err := p.UpTo(ctx, 8); err != nil {
		t.Fatal(err)
	}
	const user, dataset, policy = "00000000-0000-4000-8000-000000000001", "00000000-0000-4000-8000-000000000002", "00000000-0000-4000-8000-000000000003"
	for _, q := range []string{
		`INSERT INTO users (id, name, created_at) VALUES ('` + user + `', 'alice', ` + now + `)`,
		`INSERT INTO datasets (id, owner_id, name, created_at) VALUES ('` + dataset + `', '` + user + `', 'd', ` + now + `)`,
		`INSERT INTO policies (id, dataset_id, name, source, created_at, updated_at) VALUES ('` + policy + `', '` + dataset + `', 'old', 'raise "x"', ` + now + `, ` + now + `)`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	st, exec := open()
	if got, err := st.Policy(ctx, policy); err != nil || got.Mode != store.PolicyLog || got.Source != `raise "x"` {
		t.Errorf("the policy saved before the migration: %+v, %v; want mode log", got, err)
	}
	if err := exec(`UPDATE policies SET mode = 'warn'`); err == nil {
		t.Error("the mode column took 'warn'")
	}
}

// MigrateSpanParts checks that spans stored a row each before spans were
// stored in parts (migration 15) build their trace as before, and that
// spans accepted since join them, a span sent again replacing the one
// stored. p migrates db as in MigratePolicyMode; now is the SQL of a time
// and yes that of a true boolean.
func MigrateSpanParts(t *testing.T, p *goose.Provider, db *sql.DB, now, yes string, open func() store.Store) {
	t.Helper()
	ctx := context.Background()
	if _, err := p.UpTo(ctx, 14); err != nil {
		t.Fatal(err)
	}
	const user, dataset, tr, otelID = "00000000-0000-4000-8000-000000000001", "00000000-0000-4000-8000-000000000002", "00000000-0000-7000-8000-000000000003", "0af7651916cd43dd8448eb211c80319c"
	for _, q := range []string{
		`INSERT INTO users (id, name, created_at) VALUES ('` + user + `', 'alice', ` + now + `)`,
		`INSERT INTO datasets (id, owner_id, name, created_at) VALUES ('` + dataset + `', '` + user + `', 'd', ` + now + `)`,
		`INSERT INTO traces (id, dataset_id, owner_id, idx, event_count, created_at, encoding, content) VALUES ('` + tr + `', '` + dataset + `', '` + user + `', 0, 0, ` + now + `, 0, '{}')`,
		`INSERT INTO otel_traces (dataset_id, otel_trace_id, trace_id) VALUES ('` + dataset + `', '` + otelID + `', '` + tr + `')`,
		`INSERT INTO otel_spans (trace_id, span_id, data) VALUES ('` + tr + `', 'b0000000000000b0', 'old b'), ('` + tr + `', 'a0000000000000a0', 'old a')`,
		`INSERT INTO otel_pending (trace_id, dataset_id, otel_trace_id, since, touched, seq, fresh) VALUES ('` + tr + `', '` + dataset + `', '` + otelID + `', ` + now + `, ` + now + `, 1, ` + yes + `)`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	st := open()
	var got []string
	build := func(_ string, spans [][]byte) (*trace.Trace, error) {
		got = got[:0]
		for _, s := range spans {
			got = append(got, string(s))
		}
		return &trace.Trace{}, nil
	}
	if _, err := st.BuildPendingSpans(ctx, store.PendingFilter{TraceIDs: []string{tr}}, build); err != nil {
		t.Fatal(err)
	}
	if want := []string{"old a", "old b"}; !slices.Equal(got, want) {
		t.Fatalf("built from %q, want %q", got, want)
	}
	ids, err := st.AcceptSpans(ctx, user, dataset, []store.SpanGroup{{OTelTraceID: otelID, Spans: []store.StoredSpan{
		{SpanID: "c0000000000000c0", Data: []byte("new c")}, {SpanID: "a0000000000000a0", Data: []byte("new a")}}}})
	if err != nil || len(ids) != 1 || ids[0] != tr {
		t.Fatalf("AcceptSpans: %v, %v; want the trace stored before", ids, err)
	}
	if _, err := st.BuildPendingSpans(ctx, store.PendingFilter{TraceIDs: []string{tr}}, build); err != nil {
		t.Fatal(err)
	}
	if want := []string{"new a", "old b", "new c"}; !slices.Equal(got, want) {
		t.Fatalf("built from %q, want %q", got, want)
	}
}

// StoredFormats: a database migrated by this release records the forms it
// writes (stored_formats); one that holds a later version of a form, or a
// form this release does not know, is refused at open with the form
// named, rather than read wrong row by row; brought back, it opens.
func StoredFormats(t *testing.T, open func() (store.Store, error), exec func(q string)) {
	t.Helper()
	st, err := open()
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	for _, c := range []struct{ q, want string }{
		{`UPDATE stored_formats SET version = 3 WHERE name = 'otel_span_parts'`, "otel_span_parts in version 3"},
		{`INSERT INTO stored_formats (name, version) VALUES ('later_form', 1)`, "later_form in version 1"},
	} {
		exec(c.q)
		st, err := open()
		if err == nil {
			st.Close()
			t.Errorf("after %q: opened, want a refusal", c.q)
		} else if !strings.Contains(err.Error(), c.want) {
			t.Errorf("after %q: %v, want it to say %q", c.q, err, c.want)
		}
	}
	exec(`DELETE FROM stored_formats WHERE name = 'later_form'`)
	exec(`UPDATE stored_formats SET version = 2 WHERE name = 'otel_span_parts'`)
	st, err = open()
	if err != nil {
		t.Fatalf("the forms this release writes: %v", err)
	}
	st.Close()
}
