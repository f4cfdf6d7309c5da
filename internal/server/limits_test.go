package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lookout-dev/lookout/internal/store/sqlite"
)

// sqliteFixture is a live server over a fresh SQLite store, for behaviour
// that does not depend on the backend.
func sqliteFixture(t *testing.T, cfg Config) *fixture {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "lookout.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return newFixture(t, st, cfg)
}

// rawRequest opens a connection to hs, sends a request's head declaring
// length bytes of body and then the first bytes of it, and returns the
// connection to send the rest (or not).
func rawRequest(t *testing.T, hs *httptest.Server, path string, length int, first string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", hs.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		path, hs.Listener.Addr(), length, first)
	return c
}

// readStatus reads the status line of the answer on c, waiting up to limit.
func readStatus(t *testing.T, c net.Conn, limit time.Duration) (*http.Response, time.Duration) {
	t.Helper()
	start := time.Now()
	c.SetReadDeadline(start.Add(limit))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer within %s: %v", limit, err)
	}
	resp.Body.Close()
	return resp, time.Since(start)
}

// TestSlowBody: a client that drips its body below the minimum rate is cut
// off with 408 once the grace and its rate allowance are spent, while other
// callers are served meanwhile; a client at a good pace is not cut off.
func TestSlowBody(t *testing.T) {
	f := sqliteFixture(t, Config{BodyGrace: time.Second, MinBodyRate: 2048})
	body := `{"dataset": "slow", "messages": [[{"role": "user", "content": "` + strings.Repeat("x", 100_000) + `"}]]}`
	c := rawRequest(t, f.hs, "/api/v1/push/trace", len(body), body[:10])
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // one byte every 100 ms: 10 B/s, far below 2 KiB/s
		defer wg.Done()
		for i := 10; i < len(body); i++ {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			if _, err := c.Write([]byte{body[i]}); err != nil {
				return
			}
		}
	}()
	f.must(http.StatusOK, "POST", "/api/v1/push/trace", "", `{"dataset": "fast", "messages": [[{"role": "user", "content": "hi"}]]}`)
	resp, _ := readStatus(t, c, 30*time.Second)
	close(stop)
	wg.Wait()
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Fatalf("a dripping body: status %d, want 408", resp.StatusCode)
	}

	// A body sent in pieces, but faster than the minimum rate, gets through.
	c = rawRequest(t, f.hs, "/api/v1/push/trace", len(body), "")
	go func() {
		for i := 0; i < len(body); i += 8192 {
			time.Sleep(200 * time.Millisecond) // 40 KiB/s
			c.Write([]byte(body[i:min(len(body), i+8192)]))
		}
	}()
	if resp, _ := readStatus(t, c, 60*time.Second); resp.StatusCode != http.StatusOK {
		t.Fatalf("a body at 40 KiB/s: status %d, want 200", resp.StatusCode)
	}
}

// TestBodiesInFlight: large bodies share one budget. While one large upload
// holds it, a second waits, then gets 503 with Retry-After; small requests
// never wait; once the first is done, large ones go through again.
func TestBodiesInFlight(t *testing.T) {
	const large = 3 << 20
	f := sqliteFixture(t, Config{MaxBody: 4 << 20, BodiesInFlight: 5 << 20})
	body := `{"dataset": "big", "messages": [[{"role": "user", "content": "` + strings.Repeat("y", large) + `"}]]}`
	first := rawRequest(t, f.hs, "/api/v1/push/trace", len(body), body[:1000])
	time.Sleep(200 * time.Millisecond) // let the server admit it

	second := rawRequest(t, f.hs, "/api/v1/push/trace", len(body), body[:1000])
	f.must(http.StatusOK, "POST", "/api/v1/push/trace", "", `{"dataset": "small", "messages": [[{"role": "user", "content": "hi"}]]}`)
	resp, waited := readStatus(t, second, 30*time.Second)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a second large body over the budget: status %d, Retry-After %q; want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if waited < budgetWait/2 {
		t.Errorf("the second large body was refused after %s, without waiting for room", waited)
	}

	if _, err := io.WriteString(first, body[1000:]); err != nil {
		t.Fatal(err)
	}
	if resp, _ := readStatus(t, first, 60*time.Second); resp.StatusCode != http.StatusOK {
		t.Fatalf("the first large body: status %d", resp.StatusCode)
	}
	if r := f.do("POST", "/api/v1/push/trace", "", strings.NewReader(body), "Content-Type", "application/json"); r.status != http.StatusOK {
		t.Fatalf("a large body after the budget freed: %d %.200s", r.status, r)
	}
	// The budget is given back when the handler returns, just after the
	// answer is written.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		f.srv.bodies.mu.Lock()
		used := f.srv.bodies.used
		f.srv.bodies.mu.Unlock()
		if used == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("budget in use after every request ended: %d bytes", used)
		}
	}
}

// TestLoginLimits: failed logins are limited per address and per account,
// with 429 and Retry-After; the limit refills with time; a success does
// not count; an address forwarded by an untrusted peer is ignored.
func TestLoginLimits(t *testing.T) {
	proxy := netip.MustParsePrefix("10.0.0.0/8")
	f := sqliteFixture(t, Config{TrustedProxies: []netip.Prefix{proxy}})
	f.addUser("alice")
	f.addUser("bob")
	clock := time.Now()
	now := func() time.Time { return clock }
	f.srv.loginsByAddr.now, f.srv.loginsByName.now = now, now

	login := func(remote, forwarded, name, password string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", "/api/v1/login", strings.NewReader(fmt.Sprintf(`{"name": %q, "password": %q}`, name, password)))
		req.RemoteAddr = remote
		req.Header.Set("Content-Type", "application/json")
		if forwarded != "" {
			req.Header.Set("X-Forwarded-For", forwarded)
		}
		w := httptest.NewRecorder()
		f.srv.ServeHTTP(w, req)
		return w
	}

	// Per address: ten failures, then 429 even for the right password.
	for i := range loginsPerAddress {
		if w := login("192.0.2.1:1000", "", "alice", "wrong"); w.Code != http.StatusUnauthorized {
			t.Fatalf("failure %d: %d %s", i+1, w.Code, w.Body)
		}
	}
	w := login("192.0.2.1:1000", "", "alice", "alice-pw")
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") == "" || !strings.Contains(w.Body.String(), "too_many_requests") {
		t.Fatalf("after %d failures: %d Retry-After %q %s", loginsPerAddress, w.Code, w.Header().Get("Retry-After"), w.Body)
	}
	// Another address is not limited; a success does not drain anything.
	for range 3 {
		if w := login("192.0.2.2:1000", "", "bob", "bob-pw"); w.Code != http.StatusOK {
			t.Fatalf("bob from another address: %d %s", w.Code, w.Body)
		}
	}
	// Time refills the bucket: one more attempt after the refill interval.
	clock = clock.Add(addressRefill)
	if w := login("192.0.2.1:1000", "", "alice", "alice-pw"); w.Code != http.StatusOK {
		t.Fatalf("after waiting: %d %s", w.Code, w.Body)
	}

	// Per account: failures from many addresses (behind the trusted proxy).
	for i := 0; i < loginsPerAccount-1; i++ { // alice already failed ten times, one refilled
		w := login("10.1.2.3:5000", fmt.Sprintf("198.51.100.%d", i), "alice", "wrong")
		if w.Code != http.StatusUnauthorized && w.Code != http.StatusTooManyRequests {
			t.Fatalf("account failure %d: %d %s", i, w.Code, w.Body)
		}
	}
	if w := login("10.1.2.3:5000", "203.0.113.9", "alice", "alice-pw"); w.Code != http.StatusTooManyRequests {
		t.Fatalf("alice after %d failures on her account: %d, want 429", loginsPerAccount, w.Code)
	}
	if w := login("10.1.2.3:5000", "203.0.113.9", "bob", "bob-pw"); w.Code != http.StatusOK {
		t.Fatalf("bob while alice is limited: %d %s", w.Code, w.Body)
	}

	// An untrusted peer cannot pick its address with X-Forwarded-For: its
	// failures count against its own address.
	for i := range loginsPerAddress {
		login("192.0.2.7:1000", fmt.Sprintf("203.0.113.%d", i), "nobody", "wrong")
	}
	if w := login("192.0.2.7:1000", "203.0.113.200", "bob", "bob-pw"); w.Code != http.StatusTooManyRequests {
		t.Fatalf("an untrusted peer rotating X-Forwarded-For: %d, want 429", w.Code)
	}
}

// TestTrustedProxySecureCookie: the session cookie is Secure when a trusted
// proxy says the client used HTTPS, and not when anyone else says so.
func TestTrustedProxySecureCookie(t *testing.T) {
	f := sqliteFixture(t, Config{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
	f.addUser("alice")
	for _, c := range []struct {
		remote, header, value string
		secure                bool
	}{
		{"127.0.0.1:4000", "X-Forwarded-Proto", "https", true},
		{"127.0.0.1:4000", "Forwarded", `for=192.0.2.60;proto=https;by=203.0.113.43`, true},
		{"127.0.0.1:4000", "X-Forwarded-Proto", "http", false},
		{"192.0.2.9:4000", "X-Forwarded-Proto", "https", false},
	} {
		req := httptest.NewRequest("POST", "/api/v1/login", strings.NewReader(`{"name": "alice", "password": "alice-pw"}`))
		req.RemoteAddr = c.remote
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(c.header, c.value)
		w := httptest.NewRecorder()
		f.srv.ServeHTTP(w, req)
		cookies := w.Result().Cookies()
		if w.Code != http.StatusOK || len(cookies) != 1 {
			t.Fatalf("%s %s=%s: %d %s", c.remote, c.header, c.value, w.Code, w.Body)
		}
		if cookies[0].Secure != c.secure {
			t.Errorf("%s %s=%s: Secure=%v, want %v", c.remote, c.header, c.value, cookies[0].Secure, c.secure)
		}
	}
}

func TestParseTrustedProxies(t *testing.T) {
	got, err := ParseTrustedProxies([]string{"10.0.0.0/8, 192.0.2.1", "::1"})
	if err != nil || len(got) != 3 || got[1].Bits() != 32 || got[2].Bits() != 128 {
		t.Fatalf("got %v, %v", got, err)
	}
	if _, err := ParseTrustedProxies([]string{"proxy.local"}); err == nil {
		t.Fatal("a host name was accepted")
	}
}
