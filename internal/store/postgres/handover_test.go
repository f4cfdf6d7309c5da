package postgres

import (
	"context"
	"reflect"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/trace"
)

// A trace pushed is handed over in its row's version, the xmin its
// transaction wrote, so the indexer takes it without reading the content;
// a trace changed since (another version) is read from its row.
func TestHandoverByVersion(t *testing.T) {
	t.Setenv("LOOKOUT_INDEXER", "off")
	ctx := context.Background()
	st := open(t).(*Store)
	u, err := st.CreateUser(ctx, "u", "x")
	if err != nil {
		t.Fatal(err)
	}
	d, err := st.CreateDataset(ctx, store.Dataset{OwnerID: u.ID, Name: "d"})
	if err != nil {
		t.Fatal(err)
	}
	msg := func(s string) trace.Event { return trace.Event{Role: "user", Content: trace.TextContent(s)} }
	res, err := st.AddTracesWith(ctx, u.ID, d.ID, []store.NewTrace{
		{Trace: &trace.Trace{Name: "kept", Events: []trace.Event{msg("one")}}},
		{Trace: &trace.Trace{Name: "changed", Events: []trace.Event{msg("two")}}},
	}, store.AddOptions{HandOver: true})
	if err != nil {
		t.Fatal(err)
	}
	ids := res.IDs
	versions := st.handover.Versions(ids)
	rows, err := st.pool.Query(ctx, `SELECT xmin::text FROM traces WHERE id = ANY($1::uuid[]) ORDER BY array_position($1::uuid[], id)`, ids)
	if err != nil {
		t.Fatal(err)
	}
	xmins, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if versions[0] == "" || !reflect.DeepEqual(versions, xmins) {
		t.Fatalf("handed over in versions %q, the rows' xmin are %q", versions, xmins)
	}

	if err := st.AppendEvents(ctx, ids[1], []trace.Event{msg("three")}); err != nil {
		t.Fatal(err)
	}
	got := map[string]*trace.Trace{}
	if err := storedTraces(ctx, st.pool, ids, st.handover, func(id string, tr *trace.Trace, bad error) {
		if bad != nil {
			t.Errorf("%s: %v", id, bad)
		}
		got[id] = tr
	}); err != nil {
		t.Fatal(err)
	}
	for i, want := range []int{1, 2} {
		if tr := got[ids[i]]; tr == nil || len(tr.Events) != want {
			t.Errorf("trace %d: got %+v, want %d events", i, tr, want)
		}
	}
	if v := st.handover.Versions(ids); v[0] != "" || v[1] != "" {
		t.Errorf("still handed over after the read: %q", v)
	}
}
