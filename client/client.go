// Package client is the Go client for Lookout's HTTP API (/api/v1): push
// traces in batches, export datasets, and manage datasets, traces,
// annotations, saved policies and API keys.
//
// Traces travel as canonical JSON (json.RawMessage), the form
// `lookout convert --to canonical` writes and GET /api/v1/traces/{id}
// answers, so this package does not depend on Lookout's internal model.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// Client talks to one Lookout server.
type Client struct {
	base      *url.URL
	key       string
	http      *http.Client
	userAgent string
}

// Option configures a Client.
type Option func(*Client)

// WithAPIKey sends key as "Authorization: Bearer <key>".
func WithAPIKey(key string) Option { return func(c *Client) { c.key = key } }

// WithHTTPClient uses h instead of a client with a cookie jar.
func WithHTTPClient(h *http.Client) Option { return func(c *Client) { c.http = h } }

// WithUserAgent sets the User-Agent header.
func WithUserAgent(ua string) Option { return func(c *Client) { c.userAgent = ua } }

// New returns a client for the server at baseURL (such as
// http://127.0.0.1:8000; without a scheme, as in 127.0.0.1:8000, http:// is
// assumed).
func New(baseURL string, opts ...Option) (*Client, error) {
	raw := strings.TrimSpace(baseURL)
	if raw != "" && !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(strings.TrimRight(raw, "/"))
	if err != nil {
		return nil, fmt.Errorf("server URL %q: %w", baseURL, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("server URL %q: want http://host:port or https://host", baseURL)
	}
	jar, _ := cookiejar.New(nil)
	c := &Client{base: u, http: &http.Client{Jar: jar}, userAgent: "lookout-go-client"}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// Error is an error answer of the API: {"error": {"code", "message", "details"}}.
type Error struct {
	Status  int             // HTTP status
	Code    string          // such as not_found, invalid_json, conflict
	Message string          // what went wrong, with its place for JSON errors
	Details json.RawMessage // more, such as {"line", "col", "path"} or {"errors": [...]}
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s (HTTP %d %s)", e.Message, e.Status, e.Code)
}

// IsNotFound reports whether err is a 404 answer.
func IsNotFound(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Status == http.StatusNotFound
}

// do sends a request and decodes a JSON answer into out (when not nil).
func (c *Client) do(ctx context.Context, method, path string, query url.Values, body io.Reader, contentType string, out any) error {
	resp, err := c.send(ctx, method, path, query, body, contentType)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		io.Copy(io.Discard, resp.Body)
		return nil
	}
	if raw, ok := out.(*json.RawMessage); ok {
		b, err := io.ReadAll(resp.Body)
		*raw = bytes.TrimRight(b, "\n")
		return err
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("%s %s: reading the answer: %w", method, path, err)
	}
	return nil
}

// send sends a request and returns a 2xx response (whose body the caller
// closes) or the API error.
func (c *Client) send(ctx context.Context, method, path string, query url.Values, body io.Reader, contentType string) (*http.Response, error) {
	return c.sendAccept(ctx, method, path, query, body, contentType, "application/json")
}

func (c *Client) sendAccept(ctx context.Context, method, path string, query url.Values, body io.Reader, contentType, accept string) (*http.Response, error) {
	u := *c.base
	u.Path = c.base.Path + path
	u.RawQuery = query.Encode()
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", accept)
	req.Header.Set("User-Agent", c.userAgent)
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("cannot connect to %s: is `lookout serve` running at %s? (%w)", c.base.Host, c.base, err)
		}
		return nil, err
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	return nil, decodeError(resp.StatusCode, b, method, path)
}

// statusOf gives the HTTP status of an API error code, for errors that came
// in an event stream (whose HTTP status was 200).
var statusOf = map[string]int{
	"invalid_json": 400, "bad_request": 400, "unauthorized": 401, "forbidden": 403, "not_found": 404,
	"method_not_allowed": 405, "conflict": 409, "timeout": 408, "body_too_large": 413, "unsupported_media": 415,
	"invalid": 422, "too_many_requests": 429, "internal": 500, "unavailable": 503,
}

// decodeError reads an {"error": {...}} body.
func decodeError(status int, b []byte, method, path string) error {
	var e struct {
		Error struct {
			Code    string          `json:"code"`
			Message string          `json:"message"`
			Details json.RawMessage `json:"details"`
		} `json:"error"`
	}
	if json.Unmarshal(b, &e) != nil || e.Error.Code == "" {
		return &Error{Status: status, Code: "http", Message: fmt.Sprintf("%s %s: HTTP %d: %s", method, path, status, strings.TrimSpace(string(b)))}
	}
	if status/100 == 2 {
		if s, ok := statusOf[e.Error.Code]; ok {
			status = s
		}
	}
	return &Error{Status: status, Code: e.Error.Code, Message: e.Error.Message, Details: e.Error.Details}
}

func jsonBody(v any) (io.Reader, error) {
	b, err := json.Marshal(v)
	return bytes.NewReader(b), err
}

func (c *Client) doJSON(ctx context.Context, method, path string, query url.Values, in, out any) error {
	var body io.Reader
	ct := ""
	if in != nil {
		var err error
		if body, err = jsonBody(in); err != nil {
			return err
		}
		ct = "application/json"
	}
	return c.do(ctx, method, path, query, body, ct, out)
}

// User is an account.
type User struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// Me is who the client is to the server.
type Me struct {
	User      *User  `json:"user"`       // nil when anonymous
	Via       string `json:"via"`        // key, session, local, or ""
	LocalMode bool   `json:"local_mode"` // the server has no users yet
}

// Me asks the server who the client is.
func (c *Client) Me(ctx context.Context) (Me, error) {
	var m Me
	err := c.doJSON(ctx, http.MethodGet, "/api/v1/me", nil, nil, &m)
	return m, err
}

// Login starts a session (kept in the client's cookie jar).
func (c *Client) Login(ctx context.Context, name, password string) (User, error) {
	var out struct {
		User User `json:"user"`
	}
	err := c.doJSON(ctx, http.MethodPost, "/api/v1/login", nil, map[string]string{"name": name, "password": password}, &out)
	return out.User, err
}

// Logout ends the session.
func (c *Client) Logout(ctx context.Context) error {
	return c.doJSON(ctx, http.MethodPost, "/api/v1/logout", nil, nil, nil)
}

// Key is an API key. Key is set only in the answer to CreateKey.
type Key struct {
	ID        string     `json:"id"`
	Name      string     `json:"name"`
	Key       string     `json:"key,omitempty"`
	Last4     string     `json:"last4"`
	CreatedAt time.Time  `json:"created_at"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
	LastUsed  *time.Time `json:"last_used,omitempty"`
}

// CreateKey makes an API key; its Key is shown this once.
func (c *Client) CreateKey(ctx context.Context, name string) (Key, error) {
	var k Key
	err := c.doJSON(ctx, http.MethodPost, "/api/v1/keys", nil, map[string]string{"name": name}, &k)
	return k, err
}

// Keys lists the caller's API keys.
func (c *Client) Keys(ctx context.Context) ([]Key, error) {
	var out struct {
		Keys []Key `json:"keys"`
	}
	err := c.doJSON(ctx, http.MethodGet, "/api/v1/keys", nil, nil, &out)
	return out.Keys, err
}

// RevokeKey revokes an API key.
func (c *Client) RevokeKey(ctx context.Context, id string) error {
	return c.doJSON(ctx, http.MethodDelete, "/api/v1/keys/"+url.PathEscape(id), nil, nil, nil)
}
