package sqlite

import (
	"context"
	"os"
	"testing"

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
