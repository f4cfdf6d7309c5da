package server

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/lookout-dev/lookout/internal/store/sqlite"
)

// TestHealth: /healthz answers while the process serves; /readyz while the
// database answers, and 503 with Retry-After once it does not (here the
// store closed under the server), with no credentials either way.
func TestHealth(t *testing.T) {
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "lookout.db"))
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, st, Config{})
	status := func(path string, wantCode int, want string) {
		t.Helper()
		r := f.do("GET", path, "", nil)
		var body struct{ Status string }
		json.Unmarshal(r.body, &body)
		if r.status != wantCode || body.Status != want {
			t.Errorf("GET %s: %d %s; want %d with status %q", path, r.status, r.body, wantCode, want)
		}
	}
	status("/healthz", http.StatusOK, "ok")
	status("/readyz", http.StatusOK, "ready")
	if r := f.do("POST", "/readyz", "", nil); r.status != http.StatusMethodNotAllowed {
		t.Errorf("POST /readyz: %d, want 405", r.status)
	}

	st.Close()
	status("/healthz", http.StatusOK, "ok")
	r := f.do("GET", "/readyz", "", nil)
	var body struct{ Error struct{ Code string } }
	json.Unmarshal(r.body, &body)
	if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" || body.Error.Code != "unavailable" {
		t.Errorf("GET /readyz with the store closed: %d, Retry-After %q, %s; want 503 unavailable with Retry-After", r.status, r.header.Get("Retry-After"), r.body)
	}
}
