package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lookout-dev/lookout/internal/store"
)

// fixture is a live server over a real store, with two users (alice and
// bob) holding API keys, reached over real HTTP on loopback.
type fixture struct {
	t    *testing.T
	st   store.Store
	srv  *Server
	hs   *httptest.Server
	keys map[string]string // user name → API key
	user map[string]store.User
}

func newFixture(t *testing.T, st store.Store, cfg Config) *fixture {
	t.Helper()
	cfg.Store = st
	srv := New(cfg)
	hs := httptest.NewServer(srv)
	t.Cleanup(srv.Close)
	t.Cleanup(hs.Close)
	return &fixture{t: t, st: st, srv: srv, hs: hs, keys: map[string]string{}, user: map[string]store.User{}}
}

// addUser creates a user with password name+"-pw" and an API key.
func (f *fixture) addUser(name string) store.User {
	f.t.Helper()
	ctx := context.Background()
	hash, err := HashPassword(name + "-pw")
	if err != nil {
		f.t.Fatal(err)
	}
	u, err := f.st.CreateUser(ctx, name, hash)
	if err != nil {
		f.t.Fatal(err)
	}
	key, h, last4 := NewAPIKey()
	if _, err := f.st.CreateAPIKey(ctx, u.ID, "test", h, last4); err != nil {
		f.t.Fatal(err)
	}
	f.keys[name] = key
	f.user[name] = u
	return u
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) String() string { return string(r.body) }

// json decodes the body into v.
func (r response) json(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("response body is not JSON: %v\n%s", err, r.body)
	}
}

// do sends a request as user ("" for none; "bad" for a wrong key).
func (f *fixture) do(method, path, user string, body io.Reader, header ...string) response {
	f.t.Helper()
	req, err := http.NewRequest(method, f.hs.URL+path, body)
	if err != nil {
		f.t.Fatal(err)
	}
	switch user {
	case "":
	case "bad":
		req.Header.Set("Authorization", "Bearer lk_not-a-key")
	default:
		key, ok := f.keys[user]
		if !ok {
			f.t.Fatalf("no key for %q", user)
		}
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := f.hs.Client().Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		f.t.Fatal(err)
	}
	return response{resp.StatusCode, resp.Header, b}
}

func (f *fixture) doJSON(method, path, user, body string) response {
	f.t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	return f.do(method, path, user, r, "Content-Type", "application/json")
}

// must sends a request and fails the test unless the status is want.
func (f *fixture) must(want int, method, path, user, body string) response {
	f.t.Helper()
	r := f.doJSON(method, path, user, body)
	if r.status != want {
		f.t.Fatalf("%s %s: status %d, want %d\n%s", method, path, r.status, want, r.body)
	}
	return r
}

// createDataset makes a dataset as user and returns its id.
func (f *fixture) createDataset(user, name string, public bool) string {
	f.t.Helper()
	body, _ := json.Marshal(map[string]any{"name": name, "public": public})
	var d struct{ ID string }
	f.must(http.StatusCreated, "POST", "/api/v1/datasets", user, string(body)).json(f.t, &d)
	return d.ID
}

// push pushes Invariant-shaped traces as user and returns their ids.
func (f *fixture) push(user, body string) []string {
	f.t.Helper()
	var out struct{ ID []string }
	f.must(http.StatusOK, "POST", "/api/v1/push/trace", user, body).json(f.t, &out)
	return out.ID
}

// sameJSON reports whether a and b are the same JSON value (object member
// order ignored).
func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("not JSON: %v: %s", err, a)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("not JSON: %v: %s", err, b)
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return bytes.Equal(xb, yb)
}
