package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestLocalMode: with no users, loopback requests are the local user with no
// key; other addresses and non-loopback Host names are not; once a user
// exists every write needs a key or a session.
func TestLocalMode(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st storeUnderTest) {
		f := newFixture(t, st, Config{})
		r := f.must(200, "GET", "/api/v1/me", "", "")
		if !strings.Contains(r.String(), `"via":"local"`) || !strings.Contains(r.String(), `"local_mode":true`) || !strings.Contains(r.String(), `"name":"local"`) {
			t.Fatalf("me in local mode: %s", r)
		}
		ids := f.push("", `{"dataset": "laptop", "messages": [[{"role": "user", "content": "no key needed"}]]}`)
		f.must(200, "GET", "/api/v1/traces/"+ids[0], "", "")
		// Still local mode after the local user exists.
		f.must(200, "GET", "/api/v1/me", "", "")
		var k struct{ Key string }
		f.must(201, "POST", "/api/v1/keys", "", `{"name": "laptop"}`).json(t, &k)
		f.keys["local"] = k.Key

		// A request from another machine is not local.
		req := httptest.NewRequest("POST", "/api/v1/datasets", strings.NewReader(`{"name": "remote"}`))
		req.RemoteAddr = "192.0.2.7:5000"
		rec := httptest.NewRecorder()
		f.srv.ServeHTTP(rec, req)
		if rec.Code != http.StatusUnauthorized || !strings.Contains(rec.Body.String(), "loopback") {
			t.Fatalf("remote write in local mode: %d %s", rec.Code, rec.Body)
		}
		// A loopback connection naming another host (DNS rebinding) is not.
		r = f.do("POST", "/api/v1/datasets", "", strings.NewReader(`{"name": "rebound"}`))
		if r.status != 201 {
			t.Fatalf("loopback write: %d %s", r.status, r)
		}
		req, _ = http.NewRequest("POST", f.hs.URL+"/api/v1/datasets", strings.NewReader(`{"name": "rebound2"}`))
		req.Host = "attacker.example:8000"
		resp, err := f.hs.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("loopback request with Host attacker.example: %d", resp.StatusCode)
		}
		// A browser page on another site cannot push into local mode.
		r = f.do("POST", "/api/v1/push/trace", "", strings.NewReader(`{"messages": [[]]}`), "Content-Type", "text/plain", "Origin", "http://evil.example")
		if r.status != http.StatusForbidden {
			t.Fatalf("cross-origin push in local mode: %d %s", r.status, r)
		}

		// The first user ends local mode.
		hash, _ := HashPassword("pw")
		if _, err := f.st.CreateUser(context.Background(), "alice", hash); err != nil {
			t.Fatal(err)
		}
		r = f.doJSON("POST", "/api/v1/push/trace", "", `{"messages": [[]]}`)
		if r.status != http.StatusUnauthorized {
			t.Fatalf("write without a key after the first user: %d %s", r.status, r)
		}
		r = f.must(200, "GET", "/api/v1/me", "", "")
		if !strings.Contains(r.String(), `"local_mode":false`) || !strings.Contains(r.String(), `"user":null`) {
			t.Fatalf("me after the first user: %s", r)
		}
		// The local user's data stays reachable with the key made in local mode.
		f.must(200, "GET", "/api/v1/traces/"+ids[0], "local", "")
		f.must(404, "GET", "/api/v1/traces/"+ids[0], "", "")
	})
}
