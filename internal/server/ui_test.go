package server

import (
	"encoding/json"
	"io"
	"io/fs"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/lookout-dev/lookout/web"
)

// The UI routes need no store: a server without one serves them.
func uiServer() *Server { return New(Config{}) }

func get(t *testing.T, s *Server, method, path string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	return rec
}

// TestUIPages: the client-side routes answer index.html under the strict
// CSP; index.html has no inline script or style, so the CSP does not break it.
func TestUIPages(t *testing.T) {
	s := uiServer()
	index, err := fs.ReadFile(web.Dist(), "index.html")
	if err != nil {
		t.Fatalf("web/dist/index.html: %v (run make web)", err)
	}
	for _, path := range []string{"/", "/datasets/alice/airline", "/datasets/alice/airline/sessions/s%2F1", "/traces/3f1c", "/traces/a%2Fb"} {
		rec := get(t, s, "GET", path)
		if rec.Code != 200 || rec.Body.String() != string(index) {
			t.Fatalf("GET %s: %d %.200s", path, rec.Code, rec.Body)
		}
		h := rec.Header()
		if ct := h.Get("Content-Type"); ct != "text/html; charset=utf-8" {
			t.Errorf("GET %s: Content-Type %q", path, ct)
		}
		csp := h.Get("Content-Security-Policy")
		for _, want := range []string{"script-src 'self'", "style-src 'self'", "object-src 'none'", "frame-ancestors 'none'", "require-trusted-types-for 'script'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("GET %s: CSP %q lacks %q", path, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe") {
			t.Errorf("GET %s: CSP allows unsafe sources: %q", path, csp)
		}
		if h.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: no nosniff", path)
		}
	}
	// No inline code in index.html: every script has a src, no style
	// elements, no inline event handlers or style attributes.
	html := string(index)
	for _, m := range regexp.MustCompile(`<script[^>]*>`).FindAllString(html, -1) {
		if !strings.Contains(m, " src=") {
			t.Errorf("inline script in index.html: %s", m)
		}
	}
	if regexp.MustCompile(`(?i)<style|\son[a-z]+=|\sstyle=`).MatchString(html) {
		t.Errorf("inline style or handler in index.html:\n%s", html)
	}
	if rec := get(t, s, "HEAD", "/traces/x"); rec.Code != 200 || rec.Body.Len() != 0 {
		t.Errorf("HEAD /traces/x: %d with %d bytes", rec.Code, rec.Body.Len())
	}
}

// TestUIAssets: every built asset is served with its type and for good
// caching; unknown files are 404.
func TestUIAssets(t *testing.T) {
	s := uiServer()
	html, _ := fs.ReadFile(web.Dist(), "index.html")
	refs := regexp.MustCompile(`(?:src|href)="(/assets/[^"]+)"`).FindAllStringSubmatch(string(html), -1)
	if len(refs) < 2 {
		t.Fatalf("index.html names %d assets, want a script and a style sheet", len(refs))
	}
	for _, r := range refs {
		rec := get(t, s, "GET", r[1])
		if rec.Code != 200 || rec.Body.Len() == 0 {
			t.Fatalf("GET %s: %d", r[1], rec.Code)
		}
		ct := rec.Header().Get("Content-Type")
		switch {
		case strings.HasSuffix(r[1], ".js") && !strings.HasPrefix(ct, "text/javascript"):
			t.Errorf("%s: Content-Type %q", r[1], ct)
		case strings.HasSuffix(r[1], ".css") && !strings.HasPrefix(ct, "text/css"):
			t.Errorf("%s: Content-Type %q", r[1], ct)
		}
		if cc := rec.Header().Get("Cache-Control"); !strings.Contains(cc, "immutable") {
			t.Errorf("%s: Cache-Control %q", r[1], cc)
		}
		if rec.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: no nosniff", r[1])
		}
	}
	if rec := get(t, s, "GET", "/favicon.svg"); rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "image/svg+xml") {
		t.Errorf("favicon: %d %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	for _, p := range []string{"/assets/nope.js", "/assets/../index.html", "/assets/", "/unknown/page"} {
		if rec := get(t, s, "GET", p); rec.Code != 404 {
			t.Errorf("GET %s: %d, want 404", p, rec.Code)
		}
	}
}

// TestUIKeepsAPIErrors: the UI routes do not swallow API paths: unknown
// API routes stay JSON 404 and wrong methods 405.
func TestUIKeepsAPIErrors(t *testing.T) {
	s := uiServer()
	for _, c := range []struct {
		method, path string
		status       int
	}{
		{"GET", "/api/v1/nothing", 404},
		{"POST", "/api/v1/nothing", 404},
		{"GET", "/api/v1/traces/x/nothing", 404},
		{"POST", "/", 405},
		{"DELETE", "/traces/x", 405},
	} {
		rec := get(t, s, c.method, c.path)
		body, _ := io.ReadAll(rec.Body)
		if rec.Code != c.status {
			t.Errorf("%s %s: %d, want %d: %s", c.method, c.path, rec.Code, c.status, body)
		}
		if !strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") || !strings.Contains(string(body), `"error"`) {
			t.Errorf("%s %s: not a JSON error: %q %s", c.method, c.path, rec.Header().Get("Content-Type"), body)
		}
	}
}

// TestUINotFound: a GET of a path that is neither a page, a file nor the
// API's answers the explorer with 404, under the same CSP, and the
// explorer shows its not-found page; the API's paths and other methods
// keep their JSON errors.
func TestUINotFound(t *testing.T) {
	s := uiServer()
	index, _ := fs.ReadFile(web.Dist(), "index.html")
	for _, p := range []string{"/no/such/page", "/datasets/alice", "/traces/a/b", "/index.html"} {
		rec := get(t, s, "GET", p)
		if rec.Code != 404 || rec.Body.String() != string(index) {
			t.Fatalf("GET %s: %d %.200s", p, rec.Code, rec.Body)
		}
		if ct := rec.Header().Get("Content-Type"); ct != "text/html; charset=utf-8" {
			t.Errorf("GET %s: Content-Type %q", p, ct)
		}
		if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "require-trusted-types-for 'script'") {
			t.Errorf("GET %s: CSP %q", p, csp)
		}
	}
	if rec := get(t, s, "HEAD", "/no/such/page"); rec.Code != 404 || rec.Body.Len() != 0 {
		t.Errorf("HEAD /no/such/page: %d with %d bytes", rec.Code, rec.Body.Len())
	}
	for _, c := range []struct{ method, path string }{{"GET", "/api/v1/nothing"}, {"GET", "/api"}, {"GET", "/v1/metrics"}, {"POST", "/no/such/page"}} {
		rec := get(t, s, c.method, c.path)
		if rec.Code != 404 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
			t.Errorf("%s %s: %d %q, want a JSON 404", c.method, c.path, rec.Code, rec.Header().Get("Content-Type"))
		}
	}
	if rec := get(t, s, "GET", "/assets/nope.js"); rec.Code != 404 || strings.Contains(rec.Body.String(), "<html") {
		t.Errorf("GET /assets/nope.js: %d %.100s, want a plain 404", rec.Code, rec.Body)
	}
}

// TestUIPreloads: a trace page names its first events as a Link preload,
// with exactly the URL the UI requests; a dataset page carries the answers
// it asks for first in the page instead (boot data), identical to what the
// API answers its caller (another user's private dataset: an empty lookup
// and no traces), with '<' escaped so that content cannot end the element.
func TestUIPreloads(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st storeUnderTest) {
		f := newFixture(t, st, Config{})
		f.addUser("alice")
		f.addUser("bob")
		priv := f.createDataset("alice", "mine", false)
		pub := f.createDataset("alice", "open", true)
		f.push("alice", `{"dataset": "open", "messages": [[{"role": "user", "content": "</script><script>alert(1)</script>"}]], "metadata": [{"note": "</SCRIPT>"}]}`)
		pre := func(u string) string { return "<" + u + ">; rel=preload; as=fetch; crossorigin" }
		bootRE := regexp.MustCompile(`<script type="application/json" id="lookout-boot">(.*)</script>\n</body>`)
		cases := []struct {
			user, path string
			links      []string
			boot       []string // URLs answered in the page
		}{
			{"alice", "/traces/0b6f3c1e-0000-4000-8000-000000000001", []string{
				pre("/api/v1/traces/0b6f3c1e-0000-4000-8000-000000000001/events?limit=100")}, nil},
			{"alice", "/datasets/alice/mine", nil, []string{"/api/v1/datasets?owner=alice&name=mine", "/api/v1/datasets/" + priv + "/traces?limit=200"}},
			// Another user's private dataset: the lookup answers an empty
			// list, as the API does, and its traces are left out (404).
			{"bob", "/datasets/alice/mine", nil, []string{"/api/v1/datasets?owner=alice&name=mine"}},
			{"", "/datasets/alice/mine", nil, []string{"/api/v1/datasets?owner=alice&name=mine"}},
			{"", "/datasets/alice/open", nil, []string{"/api/v1/datasets?owner=alice&name=open", "/api/v1/datasets/" + pub + "/traces?limit=200"}},
			{"bob", "/datasets/alice/open", nil, []string{"/api/v1/datasets?owner=alice&name=open", "/api/v1/datasets/" + pub + "/traces?limit=200"}},
			{"alice", "/datasets/nobody/x%20y", nil, []string{"/api/v1/datasets?owner=nobody&name=x+y"}},
			// A session's page looks its dataset up and lists no page of it.
			{"alice", "/datasets/alice/mine/sessions/s1", nil, []string{"/api/v1/datasets?owner=alice&name=mine"}},
			{"alice", "/", nil, nil},
		}
		for _, c := range cases {
			r := f.do("GET", c.path, c.user, nil)
			if r.status != 200 {
				t.Fatalf("GET %s: %d", c.path, r.status)
			}
			if got := r.header.Values("Link"); strings.Join(got, "\n") != strings.Join(c.links, "\n") {
				t.Errorf("%s as %q: Link\n%s\nwant\n%s", c.path, c.user, strings.Join(got, "\n"), strings.Join(c.links, "\n"))
			}
			m := bootRE.FindStringSubmatch(r.String())
			if c.boot == nil {
				if m != nil || strings.Contains(r.String(), "lookout-boot") {
					t.Errorf("%s as %q: boot data where none is due", c.path, c.user)
				}
				continue
			}
			if m == nil {
				t.Fatalf("%s as %q: no boot data in\n%s", c.path, c.user, r)
			}
			if strings.Contains(m[1], "<") {
				t.Errorf("%s as %q: an unescaped '<' in the boot data: %s", c.path, c.user, m[1])
			}
			var boot map[string]json.RawMessage
			if err := json.Unmarshal([]byte(m[1]), &boot); err != nil {
				t.Fatalf("%s: boot data is not JSON: %v", c.path, err)
			}
			if len(boot) != len(c.boot) {
				t.Errorf("%s as %q: boot data for %d URLs, want %v", c.path, c.user, len(boot), c.boot)
			}
			for _, u := range c.boot {
				api := f.must(200, "GET", u, c.user, "")
				if !sameJSON(t, boot[u], api.body) {
					t.Errorf("%s as %q: boot answer for %s\n%s\nthe API answers\n%s", c.path, c.user, u, boot[u], api.body)
				}
			}
		}
	})
}
