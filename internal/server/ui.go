package server

import (
	"bytes"
	"compress/gzip"
	"context"
	"io/fs"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync"

	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/web"
)

// uiCSP is the Content-Security-Policy of the explorer's pages: scripts and
// styles only from the server's own files (no inline code), images also as
// data: URLs (inline images in traces), no plugins, no framing, and DOM
// sinks that take strings (innerHTML and the like) refused by Trusted Types.
const uiCSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; " +
	"form-action 'self'; require-trusted-types-for 'script'; trusted-types 'none'"

// uiPages are the explorer's client-side routes: each answers index.html
// and the UI picks the page from the path.
var uiPages = []string{
	"GET /{$}",
	"GET /datasets/{owner}/{name}",
	"GET /datasets/{owner}/{name}/sessions/{session}",
	"GET /datasets/{owner}/{name}/dashboard",
	"GET /traces/{id}",
}

// uiRoutes serves the embedded explorer (web/dist) beside the API. Other
// GET paths outside the API answer its page with 404 (noRoute), for the
// explorer's own not-found page.
func (s *Server) uiRoutes() {
	ui := newUI(web.Dist())
	s.ui = ui
	for _, p := range uiPages {
		s.mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
			pre, boot := s.preloads(r)
			for _, l := range pre {
				w.Header().Add("Link", "<"+l+">; rel=preload; as=fetch; crossorigin")
			}
			ui.page(w, r, http.StatusOK, s.bootData(r, boot))
		})
	}
	s.mux.Handle("GET /assets/{file...}", http.HandlerFunc(ui.asset))
	s.mux.Handle("GET /favicon.svg", http.HandlerFunc(ui.asset))
}

// preloads lists the API answers a page will ask for first, so that the
// browser fetches them alongside the script instead of after it has run:
// the exact URLs the UI requests (web/src/lib/api.ts), or a preload is
// wasted. A dataset page's answers, cheap whatever the dataset's size, are
// rather embedded in the page (boot), so that its first rows show with the
// first paint; the API's own handlers answer them, access checks included.
func (s *Server) preloads(r *http.Request) (preload, boot []string) {
	if id := r.PathValue("id"); id != "" {
		e := url.PathEscape(id)
		// Not the whole trace: megabytes arriving early hold up the page's
		// script (measured: 0.7-1 s for 10,000 events); the UI asks for it
		// once the first events are on screen.
		return []string{"/api/v1/traces/" + e + "/events?limit=" + strconv.Itoa(firstEvents)}, nil
	}
	owner, name := r.PathValue("owner"), r.PathValue("name")
	if owner == "" || name == "" {
		return nil, nil
	}
	// URLSearchParams order and escaping, as DatasetPage asks.
	lookup := "/api/v1/datasets?owner=" + url.QueryEscape(owner) + "&name=" + url.QueryEscape(name)
	if s.st == nil {
		return []string{lookup}, nil // the UI served alone
	}
	boot = []string{lookup}
	if r.PathValue("session") != "" {
		return nil, boot // a session's page searches; it shows no list page
	}
	if u, err := s.st.UserByName(r.Context(), owner); err == nil {
		if d, err := s.st.DatasetByName(r.Context(), u.ID, name); err == nil {
			list := "/api/v1/datasets/" + url.PathEscape(d.ID) + "/traces?limit=" + strconv.Itoa(firstTraces)
			// In the order the page's URL asks, as api.ts sortQuery
			// writes it (the default order has no parameters).
			q := r.URL.Query()
			sort, desc := q.Get("sort"), q.Get("order") == "desc"
			if (sort != "" && sort != store.SortTime) || desc {
				if sort == "" {
					sort = store.SortTime
				}
				list += "&sort=" + url.QueryEscape(sort)
				if desc {
					list += "&order=desc"
				}
			}
			boot = append(boot, list)
		}
	}
	return nil, boot
}

// bootData answers the GET requests urls as the API would for the caller of
// r (same handlers, same access checks) and returns them as one JSON object
// {url: answer}, leaving out any that does not succeed. '<' is escaped so
// that trace content cannot close the element the page carries it in.
func (s *Server) bootData(r *http.Request, urls []string) []byte {
	if len(urls) == 0 {
		return nil
	}
	out := []byte{'{'}
	for _, u := range urls {
		target, err := url.Parse(u)
		if err != nil {
			continue
		}
		sub := r.Clone(r.Context())
		sub.Method, sub.URL, sub.RequestURI, sub.Body, sub.ContentLength = http.MethodGet, target, u, http.NoBody, 0
		rec := &bufferedResponse{header: http.Header{}}
		s.mux.ServeHTTP(rec, sub)
		if rec.status != http.StatusOK {
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = strconv.AppendQuote(out, u)
		out = append(out, ':')
		out = append(out, bytes.TrimSpace(bytes.ReplaceAll(rec.body.Bytes(), []byte("<"), []byte(`\u003c`)))...)
	}
	if len(out) == 1 {
		return nil
	}
	return append(out, '}')
}

// bufferedResponse keeps an answer in memory.
type bufferedResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (b *bufferedResponse) Header() http.Header { return b.header }
func (b *bufferedResponse) WriteHeader(code int) {
	if b.status == 0 {
		b.status = code
	}
}
func (b *bufferedResponse) Write(p []byte) (int, error) {
	if b.status == 0 {
		b.status = http.StatusOK
	}
	return b.body.Write(p)
}

// firstEvents and firstTraces are the sizes of the first requests of the
// trace and dataset pages (web/src/lib/api.ts FIRST_EVENTS, DatasetPage PAGE).
const (
	firstEvents = 100
	firstTraces = 200
)

type uiFiles struct {
	files fs.FS
	index []byte // nil when the UI was not built
	// gz holds the gzip encodings of the files asked for (assets are
	// immutable: each is compressed once).
	mu sync.Mutex
	gz map[string][]byte
}

// acceptsGzip reports whether the request takes a gzip-encoded answer
// (Accept-Encoding names gzip with no q=0).
func acceptsGzip(r *http.Request) bool {
	for part := range strings.SplitSeq(r.Header.Get("Accept-Encoding"), ",") {
		enc, params, _ := strings.Cut(part, ";")
		if !strings.EqualFold(strings.TrimSpace(enc), "gzip") {
			continue
		}
		if q, ok := strings.CutPrefix(strings.TrimSpace(params), "q="); ok {
			if v, err := strconv.ParseFloat(strings.TrimSpace(q), 64); err == nil && v == 0 {
				return false
			}
		}
		return true
	}
	return false
}

// gzipMin is the smallest body worth compressing.
const gzipMin = 1024

// gzipped is b gzip-encoded.
func gzipped(b []byte) []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression) // a valid level: no error
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

// compressible are the types of the explorer's files worth compressing.
func compressible(name string) bool {
	switch path.Ext(name) {
	case ".js", ".css", ".html", ".svg", ".json", ".map":
		return true
	}
	return false
}

func newUI(files fs.FS) *uiFiles {
	index, _ := fs.ReadFile(files, "index.html")
	return &uiFiles{files: files, index: index}
}

// bootMarker is where page puts the boot data: before </body>.
var bootMarker = []byte("</body>")

// apiPath tells paths that are the API's (JSON errors): /api/... and the
// OpenTelemetry receiver's /v1/....
func apiPath(p string) bool {
	return p == "/api" || p == "/v1" || strings.HasPrefix(p, "/api/") || strings.HasPrefix(p, "/v1/")
}

// page answers index.html with status, with boot data (JSON) in a data
// block the UI reads at start (web/src/lib/api.ts): not a script, so the
// CSP is untouched.
func (u *uiFiles) page(w http.ResponseWriter, r *http.Request, status int, boot []byte) {
	h := w.Header()
	h.Set("Content-Security-Policy", uiCSP)
	if u.index == nil {
		h.Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte("the explorer UI is not built into this binary: run `make web` and rebuild\n"))
		return
	}
	body := u.index
	if k := bytes.LastIndex(body, bootMarker); len(boot) > 0 && k >= 0 {
		b := make([]byte, 0, len(body)+len(boot)+64)
		b = append(b, body[:k]...)
		b = append(b, `<script type="application/json" id="lookout-boot">`...)
		b = append(b, boot...)
		b = append(b, "</script>\n"...)
		body = append(b, body[k:]...)
	}
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Add("Vary", "Accept-Encoding")
	// Compressed: with its boot data (the list's first page), the page is
	// most of what a dataset's first screen transfers.
	if len(body) >= gzipMin && acceptsGzip(r) {
		var buf bytes.Buffer
		buf.Grow(len(body) / 4)
		zw, _ := gzip.NewWriterLevel(&buf, gzip.DefaultCompression) // per request: the default level, not the best
		zw.Write(body)
		zw.Close()
		body = buf.Bytes()
		h.Set("Content-Encoding", "gzip")
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}

// asset serves a built file. Asset names carry a content hash, so they may
// be cached for good.
func (u *uiFiles) asset(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(path.Clean(r.URL.Path), "/")
	b, err := fs.ReadFile(u.files, name)
	if err != nil || name == "index.html" || name == "." {
		h := w.Header()
		h.Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte("404 not found\n"))
		return
	}
	h := w.Header()
	ct := mime.TypeByExtension(path.Ext(name))
	if ct == "" {
		ct = "application/octet-stream"
	}
	h.Set("Content-Type", ct)
	h.Set("Content-Security-Policy", uiCSP)
	if strings.HasPrefix(name, "assets/") {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		h.Set("Cache-Control", "no-cache")
	}
	if compressible(name) {
		h.Add("Vary", "Accept-Encoding")
		if len(b) >= gzipMin && acceptsGzip(r) {
			u.mu.Lock()
			z, ok := u.gz[name]
			if !ok {
				z = gzipped(b)
				if u.gz == nil {
					u.gz = map[string][]byte{}
				}
				u.gz[name] = z
			}
			u.mu.Unlock()
			b = z
			h.Set("Content-Encoding", "gzip")
		}
	}
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(b)
	}
}

// uiStore is what serving the web app asks of the store.
type uiStore interface {
	DatasetByName(ctx context.Context, ownerID, name string) (store.Dataset, error)
	UserByName(ctx context.Context, name string) (store.User, error)
}
