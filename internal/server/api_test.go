package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/sqlite"
)

// TestPaginationOverHTTP walks a dataset's trace list page by page through
// the API: every trace once, in index order, and no "next" after the last
// page, also when the last page is exactly full.
func TestPaginationOverHTTP(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st storeUnderTest) {
		f := newFixture(t, st, Config{})
		f.addUser("alice")
		var b strings.Builder
		b.WriteString(`{"dataset": "paged", "messages": [`)
		for i := range 21 {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `[{"role": "user", "content": "trace %d"}]`, i)
		}
		b.WriteString("]}")
		ids := f.push("alice", b.String())
		var list struct{ Datasets []struct{ ID string } }
		f.must(200, "GET", "/api/v1/datasets?name=paged", "alice", "").json(t, &list)
		if len(list.Datasets) != 1 {
			t.Fatalf("datasets %+v", list.Datasets)
		}
		base := "/api/v1/datasets/" + list.Datasets[0].ID + "/traces"
		for _, limit := range []int{7, 5, 1000} {
			var got []string
			pages := 0
			for cursor := ""; ; {
				var page struct {
					Traces []struct {
						ID         string
						Index      int64
						EventCount int `json:"event_count"`
					}
					Next string
				}
				f.must(200, "GET", fmt.Sprintf("%s?limit=%d&cursor=%s", base, limit, cursor), "alice", "").json(t, &page)
				pages++
				if len(page.Traces) > limit {
					t.Fatalf("limit %d: a page of %d", limit, len(page.Traces))
				}
				for _, tr := range page.Traces {
					if tr.Index != int64(len(got)) || tr.EventCount != 1 {
						t.Fatalf("limit %d: trace %d has index %d, %d events", limit, len(got), tr.Index, tr.EventCount)
					}
					got = append(got, tr.ID)
				}
				if page.Next == "" {
					break
				}
				if len(page.Traces) != limit {
					t.Fatalf("limit %d: a short page (%d) with a next cursor", limit, len(page.Traces))
				}
				cursor = page.Next
			}
			if fmt.Sprint(got) != fmt.Sprint(ids) {
				t.Errorf("limit %d: listed %v, pushed %v", limit, got, ids)
			}
			if want := (21 + limit - 1) / limit; pages != want {
				t.Errorf("limit %d: %d pages, want %d", limit, pages, want)
			}
		}
		// Another user cannot page through it, even with a valid cursor.
		f.addUser("bob")
		var page struct{ Next string }
		f.must(200, "GET", base+"?limit=3", "alice", "").json(t, &page)
		f.must(404, "GET", base+"?limit=3&cursor="+page.Next, "bob", "")
	})
}

// TestAPIKeysHashed: a key made through the API is stored as its SHA-256
// hash with its last four characters, is never listed, works as a Bearer
// key, and its text is nowhere in the database files.
func TestAPIKeysHashed(t *testing.T) {
	check := func(t *testing.T, f *fixture) string {
		t.Helper()
		var k struct{ ID, Key, Last4 string }
		f.must(201, "POST", "/api/v1/keys", "alice", `{"name": "ci"}`).json(t, &k)
		if !strings.HasPrefix(k.Key, "lk_") || len(k.Key) < 40 || k.Last4 != k.Key[len(k.Key)-4:] {
			t.Fatalf("created key %+v", k)
		}
		keys, err := f.st.ListAPIKeys(context.Background(), f.user["alice"].ID)
		if err != nil {
			t.Fatal(err)
		}
		var found bool
		for _, sk := range keys {
			if sk.ID != k.ID {
				continue
			}
			found = true
			if sk.Hash != HashSecret(k.Key) || len(sk.Hash) != 64 || sk.Last4 != k.Last4 || sk.Name != "ci" {
				t.Errorf("stored key %+v; want the hex SHA-256 of the key and its last four", sk)
			}
		}
		if !found {
			t.Fatalf("key %s not stored", k.ID)
		}
		f.keys["ci"] = k.Key
		if r := f.must(200, "GET", "/api/v1/me", "ci", ""); !strings.Contains(r.String(), `"name":"alice"`) {
			t.Errorf("me with the new key: %s", r)
		}
		if r := f.must(200, "GET", "/api/v1/keys", "alice", ""); strings.Contains(r.String(), k.Key) || strings.Contains(r.String(), HashSecret(k.Key)) {
			t.Errorf("the key list shows the key or its hash: %s", r)
		}
		return k.Key
	}
	forEachBackend(t, func(t *testing.T, st storeUnderTest) {
		f := newFixture(t, st, Config{})
		f.addUser("alice")
		check(t, f)
	})
	t.Run("sqlite file", func(t *testing.T) {
		dir := t.TempDir()
		st, err := sqlite.Open(context.Background(), filepath.Join(dir, "lookout.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		f := newFixture(t, st, Config{})
		f.addUser("alice")
		key := check(t, f)
		files, _ := filepath.Glob(filepath.Join(dir, "lookout.db*"))
		if len(files) == 0 {
			t.Fatal("no database files")
		}
		hashSeen := false
		for _, name := range files {
			b, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(b, []byte(key)) || bytes.Contains(b, []byte(key[3:])) {
				t.Errorf("%s holds the API key in clear", name)
			}
			hashSeen = hashSeen || bytes.Contains(b, []byte(HashSecret(key)))
		}
		if !hashSeen {
			t.Errorf("the key's hash is in none of %v: is the key stored at all?", files)
		}
	})
}

// TestBodyLimit: the default limit is 64 MiB; a body one byte over the
// limit gets 413 whether its length is declared or not, and a body of
// exactly the limit is read.
func TestBodyLimit(t *testing.T) {
	if s := New(Config{}); s.maxBody != 64<<20 || DefaultMaxBody != 64<<20 {
		t.Fatalf("default limit %d", s.maxBody)
	}
	forEachBackend(t, func(t *testing.T, st storeUnderTest) {
		// The default, with a body streamed in chunks (no Content-Length).
		f := newFixture(t, st, Config{})
		r := f.do("POST", "/api/v1/push/trace", "", io.MultiReader(
			strings.NewReader(`{"messages": [[{"role": "user", "content": "`),
			io.LimitReader(repeatReader('x'), DefaultMaxBody),
			strings.NewReader(`"}]]}`)), "Content-Type", "application/json")
		if r.status != 413 || !strings.Contains(r.String(), `"code":"body_too_large"`) || !strings.Contains(r.String(), "64MiB") || !strings.Contains(r.String(), "--max-body") {
			t.Fatalf("a body over 64 MiB: %d %.300s", r.status, r)
		}

		// A configured limit: exactly at it is fine, one byte over is not.
		const limit = 10_000
		f = newFixture(t, st, Config{MaxBody: limit})
		body := func(n int) string {
			b := `{"dataset": "limit", "messages": [[{"role": "user", "content": "at the limit"}]]}`
			return b + strings.Repeat(" ", n-len(b))
		}
		for _, c := range []struct {
			size   int
			status int
		}{{limit, 200}, {limit + 1, 413}} {
			req, _ := http.NewRequest("POST", f.hs.URL+"/api/v1/push/trace", strings.NewReader(body(c.size)))
			req.Header.Set("Content-Type", "application/json")
			resp, err := f.hs.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.status {
				t.Errorf("a body of %d bytes with limit %d: %d %s", c.size, limit, resp.StatusCode, b)
			}
			if c.status == 413 && !strings.Contains(string(b), "10000B") {
				t.Errorf("the 413 answer does not give the limit: %s", b)
			}
		}
	})
}

type repeatReader byte

func (r repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}

// TestErrorMapping: store errors, body limits and cancellations map to
// their statuses in the one place that does it, and internal errors do not
// leak their text.
func TestErrorMapping(t *testing.T) {
	cases := []struct {
		err    error
		status int
		code   string
	}{
		{fmt.Errorf("sqlite: dataset x: %w", store.ErrNotFound), 404, "not_found"},
		{fmt.Errorf("sqlite: dataset x: %w", store.ErrConflict), 409, "conflict"},
		{fmt.Errorf("sqlite: add: %w", store.ErrInvalid), 422, "invalid"},
		{fmt.Errorf("reading: %w", &http.MaxBytesError{Limit: 1 << 20}), 413, "body_too_large"},
		{fmt.Errorf("query: %w", context.Canceled), 503, "unavailable"},
		{fmt.Errorf("query: %w", context.DeadlineExceeded), 503, "unavailable"},
		{errorf(403, "forbidden", "no"), 403, "forbidden"},
		{fmt.Errorf("disk on fire: secret path /var/x"), 500, "internal"},
	}
	for _, c := range cases {
		ae := toAPIError(c.err)
		if ae.Status != c.status || ae.Code != c.code {
			t.Errorf("%v → %d %s, want %d %s", c.err, ae.Status, ae.Code, c.status, c.code)
		}
	}
	if ae := toAPIError(fmt.Errorf("disk on fire: secret path /var/x")); strings.Contains(ae.Message, "secret") {
		t.Errorf("an internal error leaks its cause: %q", ae.Message)
	}
	rec := httptest.NewRecorder()
	New(Config{}).writeError(rec, httptest.NewRequest("GET", "/", nil), fmt.Errorf("x: %w", store.ErrNotFound))
	if rec.Code != 404 || rec.Body.String() != `{"error":{"code":"not_found","message":"x: not found"}}`+"\n" {
		t.Errorf("writeError: %d %s", rec.Code, rec.Body)
	}
}
