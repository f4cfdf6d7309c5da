package server

import (
	"context"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"sync"
	"time"
)

// Request bodies: a client must keep sending at a minimum rate, and the
// bodies of large requests in flight share one memory budget, so that slow
// or many large uploads cannot hold connections or memory that other
// callers need.
const (
	defaultBodyGrace   = 30 * time.Second
	defaultMinBodyRate = 16 << 10 // bytes a second
	// Bodies up to smallBody bytes never wait for the budget: small calls
	// must not queue behind large uploads.
	smallBody = 1 << 20
	// budgetWait is how long a large body waits for room before 503.
	budgetWait = 5 * time.Second
)

// errSlowBody is a body that arrived slower than the minimum rate.
var errSlowBody = &apiError{Status: http.StatusRequestTimeout, Code: codeTimeout,
	Message: "request body arrived too slowly (under the server's minimum rate); send it faster or in smaller requests"}

// errBodiesBusy is a large body refused because the bodies in flight fill
// the server's budget.
var errBodiesBusy = &apiError{Status: http.StatusServiceUnavailable, Code: codeUnavailable,
	Message: "too many large request bodies in flight; retry shortly", RetryAfter: int(budgetWait / time.Second)}

// byteBudget bounds the bytes of request bodies held at once.
type byteBudget struct {
	mu    sync.Mutex
	used  int64
	limit int64
	freed chan struct{} // closed and replaced on every release
}

func newByteBudget(limit int64) *byteBudget {
	return &byteBudget{limit: limit, freed: make(chan struct{})}
}

// acquire takes n bytes, waiting up to wait for room; false if there was none.
func (b *byteBudget) acquire(ctx context.Context, n int64, wait time.Duration) bool {
	var timer <-chan time.Time
	for {
		b.mu.Lock()
		if b.used+n <= b.limit {
			b.used += n
			b.mu.Unlock()
			return true
		}
		freed := b.freed
		b.mu.Unlock()
		if wait <= 0 {
			return false
		}
		if timer == nil {
			t := time.NewTimer(wait)
			defer t.Stop()
			timer = t.C
		}
		select {
		case <-freed:
		case <-timer:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

func (b *byteBudget) release(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	close(b.freed)
	b.freed = make(chan struct{})
	b.mu.Unlock()
}

// guardedBody is a request body read under a deadline that grows with the
// bytes received (grace + n/rate), and that takes its bytes from the budget
// as they arrive when the length was not declared.
type guardedBody struct {
	io.ReadCloser
	rc       *http.ResponseController
	start    time.Time
	grace    time.Duration
	rate     float64
	n        int64
	budget   *byteBudget
	reserved int64 // bytes taken from budget, released by done
	done     bool
}

func (b *guardedBody) Read(p []byte) (int, error) {
	if b.done {
		return 0, io.EOF
	}
	n, err := b.ReadCloser.Read(p)
	b.n += int64(n)
	if b.n > smallBody && b.n > b.reserved {
		more := max(smallBody, b.n-b.reserved)
		if !b.budget.acquire(context.Background(), more, 0) {
			b.abandon()
			return n, errBodiesBusy
		}
		b.reserved += more
	}
	switch {
	case err == io.EOF:
		b.done = true
		// net/http now reads the connection in the background to notice a
		// client leaving; a deadline passing there would cancel an answer
		// (a stream) that is still going.
		b.rc.SetReadDeadline(time.Time{})
	case errors.Is(err, os.ErrDeadlineExceeded):
		err = errSlowBody
		b.abandon()
	case err != nil:
		// Such as a body over --max-body: net/http answers it and closes the
		// connection in order (letting the client read the answer); a
		// deadline in the past here would cut it off with a reset.
		b.done = true
	default:
		b.rc.SetReadDeadline(b.deadline())
	}
	return n, err
}

// abandon stops reading a body that failed here. Its deadline is set in the
// past: after the handler, net/http would otherwise wait to discard the
// unread rest before sending the answer, at the sender's pace.
func (b *guardedBody) abandon() {
	b.done = true
	b.rc.SetReadDeadline(time.Now())
}

func (b *guardedBody) deadline() time.Time {
	return b.start.Add(b.grace + time.Duration(float64(b.n)/b.rate*float64(time.Second)))
}

// guardBody sets up r's body under the rate deadline and the budget. release
// returns the budget taken; call it when the handler is done.
func (s *Server) guardBody(w http.ResponseWriter, r *http.Request) (release func(), err error) {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return func() {}, nil
	}
	gb := &guardedBody{ReadCloser: r.Body, rc: http.NewResponseController(w), start: time.Now(),
		grace: s.bodyGrace, rate: float64(s.minBodyRate), budget: s.bodies}
	if r.ContentLength > smallBody {
		if !s.bodies.acquire(r.Context(), r.ContentLength, budgetWait) {
			gb.abandon()
			return func() {}, errBodiesBusy
		}
		gb.reserved = r.ContentLength
	}
	// Not every ResponseWriter has a connection (tests call ServeHTTP on a
	// recorder): then there is no deadline to set.
	gb.rc.SetReadDeadline(gb.deadline())
	r.Body = gb
	return func() { s.bodies.release(gb.reserved) }, nil
}

// Logins: failed attempts are limited per account and per client address,
// and password hashing runs a few at a time, so guessing is slow and a flood
// of logins cannot starve a real one.
const (
	loginsPerAddress = 10               // failures in a burst from one address
	addressRefill    = 6 * time.Second  // one more attempt after this
	loginsPerAccount = 20               // failures in a burst on one account
	accountRefill    = 15 * time.Second // one more attempt after this
	maxLimiterKeys   = 100_000          // memory bound of each limiter
)

// attemptLimiter is a token bucket per key that only failures drain.
type attemptLimiter struct {
	mu     sync.Mutex
	burst  float64
	refill time.Duration
	keys   map[string]bucket
	now    func() time.Time
}

type bucket struct {
	tokens float64
	at     time.Time
}

func newAttemptLimiter(burst int, refill time.Duration) *attemptLimiter {
	return &attemptLimiter{burst: float64(burst), refill: refill, keys: map[string]bucket{}, now: time.Now}
}

func (l *attemptLimiter) current(key string, now time.Time) bucket {
	b, ok := l.keys[key]
	if !ok {
		return bucket{tokens: l.burst, at: now}
	}
	b.tokens = math.Min(l.burst, b.tokens+float64(now.Sub(b.at))/float64(l.refill))
	b.at = now
	return b
}

// wait is how long key must wait before its next attempt (0: go ahead).
func (l *attemptLimiter) wait(key string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.current(key, l.now())
	if b.tokens >= 1 {
		return 0
	}
	return time.Duration((1 - b.tokens) * float64(l.refill))
}

// fail records a failed attempt of key.
func (l *attemptLimiter) fail(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if len(l.keys) >= maxLimiterKeys {
		// Forget the keys whose bucket is full again; if none are, the
		// map is flooded with fresh keys: start over rather than grow.
		for k := range l.keys {
			if l.current(k, now).tokens >= l.burst {
				delete(l.keys, k)
			}
		}
		if len(l.keys) >= maxLimiterKeys {
			clear(l.keys)
		}
	}
	b := l.current(key, now)
	b.tokens = math.Max(0, b.tokens-1)
	l.keys[key] = b
}

// tooManyLogins is the 429 for a limited login.
func tooManyLogins(wait time.Duration) *apiError {
	secs := int(math.Ceil(wait.Seconds()))
	return &apiError{Status: http.StatusTooManyRequests, Code: codeTooMany, RetryAfter: max(1, secs),
		Message: "too many failed logins; wait before trying again"}
}

// Proxies: X-Forwarded-Proto, X-Forwarded-For and Forwarded are honoured
// only from the addresses given by --trusted-proxy.

// peerIP is the address of the connection's other end.
func peerIP(r *http.Request) netip.Addr {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip, _ := netip.ParseAddr(host)
	return ip.Unmap()
}

func (s *Server) fromTrustedProxy(r *http.Request) bool {
	if len(s.trustedProxies) == 0 {
		return false
	}
	ip := peerIP(r)
	for _, p := range s.trustedProxies {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// clientAddr is the client's address: the peer's, or the one a trusted
// proxy forwarded (the last hop it appended).
func (s *Server) clientAddr(r *http.Request) string {
	if s.fromTrustedProxy(r) {
		if v := forwardedParam(r, "for"); v != "" {
			return v
		}
		if xff := r.Header.Values("X-Forwarded-For"); len(xff) > 0 {
			parts := strings.Split(xff[len(xff)-1], ",")
			if v := strings.TrimSpace(parts[len(parts)-1]); v != "" {
				return v
			}
		}
	}
	return peerIP(r).String()
}

// secureRequest reports whether the client reached us over HTTPS: directly,
// or through a trusted proxy that says so.
func (s *Server) secureRequest(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	if !s.fromTrustedProxy(r) {
		return false
	}
	if v := forwardedParam(r, "proto"); v != "" {
		return strings.EqualFold(v, "https")
	}
	return strings.EqualFold(strings.TrimSpace(r.Header.Get("X-Forwarded-Proto")), "https")
}

// forwardedParam is a parameter of the last element of the Forwarded
// header (RFC 7239), the one the nearest proxy added.
func forwardedParam(r *http.Request, name string) string {
	vals := r.Header.Values("Forwarded")
	if len(vals) == 0 {
		return ""
	}
	elems := strings.Split(vals[len(vals)-1], ",")
	for _, pair := range strings.Split(elems[len(elems)-1], ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if ok && strings.EqualFold(k, name) {
			v = strings.Trim(v, `"`)
			if name == "for" {
				// "[2001:db8::1]:4711" and "192.0.2.1:80" name hosts with ports.
				if h, _, err := net.SplitHostPort(v); err == nil {
					v = h
				}
				v = strings.Trim(v, "[]")
			}
			return v
		}
	}
	return ""
}

// ParseTrustedProxies parses --trusted-proxy values: addresses or CIDR
// prefixes, comma-separated.
func ParseTrustedProxies(values []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, v := range values {
		for _, f := range strings.Split(v, ",") {
			f = strings.TrimSpace(f)
			if f == "" {
				continue
			}
			if strings.Contains(f, "/") {
				p, err := netip.ParsePrefix(f)
				if err != nil {
					return nil, err
				}
				out = append(out, p.Masked())
				continue
			}
			a, err := netip.ParseAddr(f)
			if err != nil {
				return nil, err
			}
			out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
		}
	}
	return out, nil
}
