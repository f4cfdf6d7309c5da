package server

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/lookout-dev/lookout/internal/store"
)

// Authentication, in order:
//  1. Authorization: Bearer <API key>: a wrong or revoked key is 401, always.
//  2. the lookout_session cookie set by POST /api/v1/login.
//  3. local mode: while the store has no users, a request from a loopback
//     address (with a loopback Host, against DNS rebinding) is the local user.
//  4. otherwise anonymous: public datasets can be read, nothing written.
//
// Unsafe requests (anything but GET and HEAD) that a browser marks as
// cross-site are refused, so that a web page cannot push into a local-mode
// server or act with a logged-in user's cookie.

const sessionCookie = "lookout_session"

// principal is who makes a request.
type principal struct {
	User store.User
	Via  string // "key", "session", "local", or "" when anonymous
}

func (p *principal) anonymous() bool { return p.Via == "" }

func (s *Server) authenticate(r *http.Request) (*principal, error) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		if err := sameOrigin(r); err != nil {
			return nil, err
		}
	}
	ctx := r.Context()
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, key, _ := strings.Cut(h, " ")
		key = strings.TrimSpace(key)
		if !strings.EqualFold(scheme, "Bearer") || key == "" {
			return nil, errorf(http.StatusUnauthorized, codeUnauthorized, "the Authorization header must be \"Bearer <API key>\"")
		}
		return s.bearerPrincipal(r, key)
	}
	if c, err := r.Cookie(sessionCookie); err == nil && c.Value != "" {
		u, err := s.st.UserBySession(ctx, HashSecret(c.Value))
		if err == nil {
			return &principal{User: u, Via: "session"}, nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
		// An expired or unknown session is no session.
	}
	if p, err := s.localPrincipal(r); p != nil || err != nil {
		return p, err
	}
	return &principal{}, nil
}

// keyPrincipal is the owner of an API key; a wrong or revoked key is 401.
func (s *Server) keyPrincipal(ctx context.Context, key string) (*principal, error) {
	hash := HashSecret(key)
	if u, ok := s.keys.get(hash); ok {
		return &principal{User: u, Via: "key"}, nil
	}
	u, err := s.st.UserByAPIKey(ctx, hash)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errorf(http.StatusUnauthorized, codeUnauthorized, "invalid or revoked API key")
	}
	if err != nil {
		return nil, err
	}
	// A key of the local user is not kept: the first user created (by the
	// CLI, beside this server) takes it over at once.
	if u.Name != store.LocalUserName {
		s.keys.put(hash, u)
	}
	return &principal{User: u, Via: "key"}, nil
}

// keyCache keeps the owners of the API keys used in the last keyTTL, so
// that an agent's calls through the gateway (one every few hundred
// milliseconds) do not each look their key up in the store. Revoking a key
// through this server empties it, and, through the change feed (live.go),
// those of the other servers on the same database, as soon as they hear of
// it; a key revoked otherwise (the store directly, a lost notice) stops
// working within keyTTL.
// Unknown and revoked keys are not kept.
type keyCache struct {
	mu  sync.Mutex
	m   map[string]keyEntry // by key hash
	ttl time.Duration       // 0: keyTTL
}

type keyEntry struct {
	u  store.User
	at time.Time
}

const (
	keyTTL     = time.Second
	maxKeySeen = 10000
)

func (c *keyCache) get(hash string) (store.User, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[hash]
	if !ok || time.Since(e.at) >= cmp.Or(c.ttl, keyTTL) {
		return store.User{}, false
	}
	return e.u, true
}

func (c *keyCache) put(hash string, u store.User) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxKeySeen {
		c.m = map[string]keyEntry{}
	}
	c.m[hash] = keyEntry{u: u, at: time.Now()}
}

// clear forgets every key (one was revoked).
func (c *keyCache) clear() {
	c.mu.Lock()
	c.m = nil
	c.mu.Unlock()
}

// bearerPrincipal is the owner of an API key, except that in local mode a
// request from this machine is the local user whatever key it sends: the
// Invariant SDK and the gateway's clients always send one, and there a key
// grants nothing that no key does not. Once a user exists an unknown key is
// 401 again.
func (s *Server) bearerPrincipal(r *http.Request, key string) (*principal, error) {
	p, err := s.keyPrincipal(r.Context(), key)
	var ae *apiError
	if errors.As(err, &ae) && ae.Status == http.StatusUnauthorized {
		if lp, lerr := s.localPrincipal(r); lp != nil || lerr != nil {
			return lp, lerr
		}
	}
	return p, err
}

// localPrincipal is the local user for a request from this machine while
// the server is in local mode, else nil.
func (s *Server) localPrincipal(r *http.Request) (*principal, error) {
	local, err := s.localMode(r)
	if err != nil || !local || !isLoopback(r) {
		return nil, err
	}
	u, err := s.st.LocalUser(r.Context())
	if err != nil {
		return nil, err
	}
	return &principal{User: u, Via: "local"}, nil
}

// localMode reports whether the store has no users yet.
func (s *Server) localMode(r *http.Request) (bool, error) {
	if s.hasUsers.Load() {
		return false, nil
	}
	n, err := s.st.CountUsers(r.Context())
	if err != nil {
		return false, err
	}
	if n > 0 {
		s.hasUsers.Store(true)
	}
	return n == 0, nil
}

// isLoopback reports whether the request comes from this machine and names
// it as a loopback host.
func isLoopback(r *http.Request) bool {
	if !peerIP(r).IsLoopback() {
		return false
	}
	return loopbackName(r.Host)
}

func loopbackName(hostport string) bool {
	h := hostport
	if hh, _, err := net.SplitHostPort(hostport); err == nil {
		h = hh
	}
	h = strings.Trim(h, "[]")
	if strings.EqualFold(h, "localhost") || strings.HasSuffix(strings.ToLower(h), ".localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// sameOrigin refuses unsafe requests a browser sent from another site.
func sameOrigin(r *http.Request) error {
	if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
		return errorf(http.StatusForbidden, codeForbidden, "cross-site request refused")
	}
	o := r.Header.Get("Origin")
	if o == "" {
		return nil
	}
	u, err := url.Parse(o)
	if err != nil || !strings.EqualFold(u.Host, r.Host) {
		return errorf(http.StatusForbidden, codeForbidden, "cross-origin request from %s refused", o)
	}
	return nil
}

// requireUser fails unless the request is authenticated.
func (s *Server) requireUser(r *http.Request, p *principal) error {
	if !p.anonymous() {
		return nil
	}
	local, err := s.localMode(r)
	if err != nil {
		return err
	}
	if local {
		return errorf(http.StatusUnauthorized, codeUnauthorized,
			"authentication required: local mode serves only requests from this machine (loopback); send an API key (Authorization: Bearer ...) or create a user with `lookout user create`")
	}
	return errorf(http.StatusUnauthorized, codeUnauthorized,
		"authentication required: send an API key (Authorization: Bearer ...) or log in (POST /api/v1/login)")
}

// HashSecret is the stored form of an API key or session token: hex SHA-256.
func HashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// NewAPIKey makes a new random API key and returns it with its stored hash
// and the last four characters shown in key lists.
func NewAPIKey() (key, hash, last4 string) {
	key = "lk_" + randomToken()
	return key, HashSecret(key), key[len(key)-4:]
}

func randomToken() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on supported systems
	}
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// HashPassword hashes a password for store.User.PasswordHash (bcrypt).
func HashPassword(password string) (string, error) {
	if len(password) > 72 {
		return "", errors.New("password longer than 72 bytes (bcrypt's limit)")
	}
	h, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
	return string(h), err
}

// dummyHash is compared against when a login names no user, so that the
// answer takes as long as for a wrong password.
// It is made on first use: bcrypt takes tens of milliseconds, which every
// lookout command (check, validate, ...) would otherwise pay at start.
var dummyHash = sync.OnceValue(func() []byte {
	h, _ := bcrypt.GenerateFromPassword([]byte("lookout-dummy-password"), bcrypt.DefaultCost)
	return h
})

type userJSON struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

func (s *Server) login(w http.ResponseWriter, r *http.Request, _ *principal) error {
	var name, password string
	if _, err := decodeBody(r, map[string]member{
		"name":     str(&name, "name"),
		"password": str(&password, "password"),
	}); err != nil {
		return err
	}
	addr := s.clientAddr(r)
	if wait := max(s.loginsByAddr.wait(addr), s.loginsByName.wait(name)); wait > 0 {
		return tooManyLogins(wait)
	}
	wrong := func() error {
		s.loginsByAddr.fail(addr)
		s.loginsByName.fail(name)
		s.live.loginFailed(addr, name) // the other servers count it too
		return errorf(http.StatusUnauthorized, codeUnauthorized, "wrong user name or password")
	}
	u, err := s.st.UserByName(r.Context(), name)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	hash := []byte(u.PasswordHash)
	if err != nil || len(hash) == 0 {
		hash = dummyHash() // as slow as a real check: names are not revealed
	}
	select {
	case s.hashing <- struct{}{}:
	case <-r.Context().Done():
		return r.Context().Err()
	}
	mismatch := bcrypt.CompareHashAndPassword(hash, []byte(password))
	<-s.hashing
	if err != nil || len(u.PasswordHash) == 0 || mismatch != nil {
		return wrong()
	}
	token := randomToken()
	expires := time.Now().Add(s.sessionTTL)
	if err := s.st.CreateSession(r.Context(), u.ID, HashSecret(token), expires); err != nil {
		return err
	}
	http.SetCookie(w, &http.Cookie{
		Name:     sessionCookie,
		Value:    token,
		Path:     "/",
		Expires:  expires,
		MaxAge:   int(s.sessionTTL / time.Second),
		HttpOnly: true,
		Secure:   s.secureRequest(r),
		SameSite: http.SameSiteStrictMode,
	})
	writeJSON(w, http.StatusOK, map[string]any{"user": userJSON{u.ID, u.Name}})
	return nil
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request, _ *principal) error {
	if c, err := r.Cookie(sessionCookie); err == nil && c.Value != "" {
		if err := s.st.DeleteSession(r.Context(), HashSecret(c.Value)); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: s.secureRequest(r), SameSite: http.SameSiteStrictMode})
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// me tells who the request is made as, and whether the server is in local
// mode, so that the UI knows when to ask for a login.
func (s *Server) me(w http.ResponseWriter, r *http.Request, p *principal) error {
	local, err := s.localMode(r)
	if err != nil {
		return err
	}
	var u *userJSON
	if !p.anonymous() {
		u = &userJSON{p.User.ID, p.User.Name}
	}
	writeJSON(w, http.StatusOK, map[string]any{"user": u, "via": p.Via, "local_mode": local})
	return nil
}

// authStore is what signing in and resolving a request's user ask of the store.
type authStore interface {
	CountUsers(ctx context.Context) (int, error)
	CreateSession(ctx context.Context, userID, tokenHash string, expires time.Time) error
	DeleteSession(ctx context.Context, tokenHash string) error
	LocalUser(ctx context.Context) (store.User, error)
	UserByAPIKey(ctx context.Context, hash string) (store.User, error)
	UserByName(ctx context.Context, name string) (store.User, error)
	UserBySession(ctx context.Context, tokenHash string) (store.User, error)
}
