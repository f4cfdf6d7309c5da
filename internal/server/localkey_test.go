package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestLocalModeAnyKey: the Invariant SDK always sends a key, so in local mode
// a loopback request with a key the server does not know is the local user;
// from another address it is 401, and so is every unknown key once a user
// exists.
func TestLocalModeAnyKey(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st storeUnderTest) {
		f := newFixture(t, st, Config{})
		// What the SDK sends: a key, Accept and Content-Type JSON, nulls for
		// what it was not given.
		sdkPush := `{"messages": [[{"role": "user", "content": "hi"}]], "annotations": null, "dataset": "sdk", "metadata": null}`
		r := f.do("POST", "/api/v1/push/trace", "bad", strings.NewReader(sdkPush), "Content-Type", "application/json", "Accept", "application/json")
		if r.status != 200 || !strings.Contains(r.String(), `"dataset":"sdk"`) {
			t.Fatalf("SDK push with an unknown key in local mode: %d %s", r.status, r)
		}
		r = f.do("GET", "/api/v1/me", "bad", nil)
		if r.status != 200 || !strings.Contains(r.String(), `"via":"local"`) {
			t.Fatalf("me with an unknown key in local mode: %d %s", r.status, r)
		}

		// Not from another machine.
		req := httptest.NewRequest("POST", "/api/v1/push/trace", strings.NewReader(sdkPush))
		req.RemoteAddr = "192.0.2.7:5000"
		req.Header.Set("Authorization", "Bearer lk_not-a-key")
		rec := httptest.NewRecorder()
		f.srv.ServeHTTP(rec, req)
		if rec.Code != http.StatusUnauthorized || !strings.Contains(rec.Body.String(), "invalid or revoked API key") {
			t.Fatalf("remote push with an unknown key in local mode: %d %s", rec.Code, rec.Body)
		}

		// Not once a user exists.
		hash, _ := HashPassword("pw")
		if _, err := f.st.CreateUser(context.Background(), "alice", hash); err != nil {
			t.Fatal(err)
		}
		r = f.do("POST", "/api/v1/push/trace", "bad", strings.NewReader(sdkPush), "Content-Type", "application/json")
		if r.status != http.StatusUnauthorized || !strings.Contains(r.String(), "invalid or revoked API key") {
			t.Fatalf("push with an unknown key after the first user: %d %s", r.status, r)
		}
	})
}
