package sqlite

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/storetest"
)

// BenchmarkDashboardFile: BenchmarkDashboard100k's dataset kept in the
// file LOOKOUT_DASH_DB (filled on first use), to time changes to the
// dashboard's queries without filling it again.
func BenchmarkDashboardFile(b *testing.B) {
	path := os.Getenv("LOOKOUT_DASH_DB")
	if path == "" {
		b.Skip("LOOKOUT_DASH_DB names the file")
	}
	ctx := context.Background()
	_, statErr := os.Stat(path)
	st, err := Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	if statErr != nil {
		u, err := st.CreateUser(ctx, "bench", "x")
		if err != nil {
			b.Fatal(err)
		}
		d, err := st.CreateDataset(ctx, store.Dataset{OwnerID: u.ID, Name: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		storetest.FillDashboard(b, st, u.ID, d.ID, 100_000)
	}
	u, err := st.UserByName(ctx, "bench")
	if err != nil {
		b.Fatal(err)
	}
	d, err := st.DatasetByName(ctx, u.ID, "bench")
	if err != nil {
		b.Fatal(err)
	}
	storetest.RunDashboard(b, st, d.ID, 100_000)
}

// TestDashSQL times each statement of the file LOOKOUT_DASH_SQL (separated
// by lines ";;") on LOOKOUT_DASH_DB's dataset ($1), counting its rows.
func TestDashSQL(t *testing.T) {
	path, qf := os.Getenv("LOOKOUT_DASH_DB"), os.Getenv("LOOKOUT_DASH_SQL")
	if path == "" || qf == "" {
		t.Skip("LOOKOUT_DASH_DB and LOOKOUT_DASH_SQL")
	}
	ctx := context.Background()
	st, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	u, _ := st.UserByName(ctx, "bench")
	d, _ := st.DatasetByName(ctx, u.ID, "bench")
	src, _ := os.ReadFile(qf)
	for _, q := range strings.Split(string(src), "\n;;\n") {
		if strings.TrimSpace(q) == "" {
			continue
		}
		for k := 0; k < 2; k++ {
			t0 := time.Now()
			rows, err := st.r.QueryContext(ctx, q, d.ID)
			if err != nil {
				t.Fatalf("%v: %s", err, q)
			}
			n := 0
			for rows.Next() {
				n++
			}
			rows.Close()
			t.Logf("%v %d rows: %.80s", time.Since(t0).Round(time.Millisecond), n, strings.Join(strings.Fields(q), " "))
		}
	}
}
