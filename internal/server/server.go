package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/lookout-dev/lookout/internal/eval"
	"github.com/lookout-dev/lookout/internal/gateway/mcp"
	"github.com/lookout-dev/lookout/internal/policy"
	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/usage"
)

// DefaultMaxBody is the default limit on a request body.
const DefaultMaxBody = 64 << 20

// Config configures a Server.
type Config struct {
	Store   store.Store
	Logger  *slog.Logger // nil: discard
	MaxBody int64        // request body limit in bytes; 0: DefaultMaxBody
	// SessionTTL is how long a login session lasts; 0: 30 days.
	SessionTTL time.Duration
	// LLM is the judge of llm criteria (nil: they are refused);
	// EvalConcurrency bounds the traces a run evaluates at once (0: 4).
	LLM             *eval.LLM
	EvalConcurrency int
	// DetectorModel answers the model-backed detectors (prompt_injection,
	// moderated, pii's named entities, llm) of every policy the server
	// checks: policy checks, dataset checks, rule criteria of evaluations
	// and benchmarks. nil: they fail as unavailable.
	DetectorModel *policy.DetectorModel
	// A trace received as spans is built once no spans came for it for
	// SpanQuiet (0: 250ms), or after SpanMaxDelay of spans that keep coming
	// (0: 2s; longer for a large trace, see spans.go). While more than
	// SpanBacklog traces (0: 20,000) wait to be built, span requests are
	// answered 503 with Retry-After.
	SpanQuiet, SpanMaxDelay time.Duration
	SpanBacklog             int64
	// While the search index has more than IndexCatchUp of work queued
	// (0: DefaultIndexCatchUp), measured at the rate it indexes, pushes,
	// uploads and span requests are answered 503 with Retry-After.
	IndexCatchUp time.Duration
	// Gateway configures the LLM gateway (gateway.go).
	Gateway GatewayConfig
	// Checks bounds the policy checks run at once (policy.go); nil: one
	// per core (GOMAXPROCS), a queue of 4 per core waiting up to 2s.
	Checks *policy.Limiter
	// A request body must arrive at MinBodyRate bytes a second (0: 16 KiB/s)
	// after BodyGrace (0: 30s), or the request fails with 408. Bodies over
	// 1 MiB share BodiesInFlight bytes (0: twice MaxBody); past it, they
	// wait up to 5s, then 503 with Retry-After.
	MinBodyRate    int64
	BodyGrace      time.Duration
	BodiesInFlight int64
	// TrustedProxies may set X-Forwarded-Proto, X-Forwarded-For and
	// Forwarded (the client's scheme and address); no one else may.
	TrustedProxies []netip.Prefix
	// Prices estimate the cost of model calls whose source recorded none
	// (usage.Default() when nil).
	Prices *usage.Prices
	// KeyCacheTTL is how long a key seen stays trusted without a look in
	// the store (0: a second); revocations through any server end it.
	KeyCacheTTL time.Duration
	// RunLease is how long a server's lease of an evaluation run lasts
	// unrenewed (0: eval.DefaultLease); tests shorten it.
	RunLease time.Duration
	// NoBackground: Start resumes no evaluation run and builds no trace
	// from spans; other servers on the database do (a replica that only
	// answers requests).
	NoBackground bool
}

// Server serves the API. It is an http.Handler.
type Server struct {
	st         serverStore
	log        *slog.Logger
	maxBody    int64
	sessionTTL time.Duration
	mux        *http.ServeMux
	patterns   []string    // every route registered with handle, in order
	hasUsers   atomic.Bool // once a user exists local mode is over for good
	keys       keyCache    // owners of API keys seen lately (auth.go)
	reads      traceReads  // shares concurrent reads of one trace
	live       liveHub     // listeners of changing traces
	gw         *gatewayState
	mcpOnce    sync.Once
	mcp        *mcp.HTTPProxy // the MCP proxy (gateway_mcp.go), made on first use
	ui         *uiFiles       // the explorer (ui.go)

	builder     *spanBuilder // builds traces whose spans were accepted (spans.go)
	monitor     *monitor     // the search index's backlog (backlog.go)
	spanBacklog int64
	// noBackground: Start leaves runs and span builds to other servers
	noBackground bool

	runs          *eval.Runs       // evaluation runs in the background (eval.go)
	benchmarks    *eval.Benchmarks // making and scoring benchmarks (benchmarks.go)
	checks        *policy.Limiter
	detectorModel *policy.DetectorModel
	prices        *usage.Prices

	minBodyRate    int64
	bodyGrace      time.Duration
	bodies         *byteBudget
	trustedProxies []netip.Prefix
	loginsByAddr   *attemptLimiter
	loginsByName   *attemptLimiter
	hashing        chan struct{} // slots for password hashing
}

// serverStore is what the server's areas ask of the store, each area in an
// interface of its own declared in its file (TestAreaStores holds each
// file's handlers to theirs). The span builder, the backlog monitor,
// evaluation runs and benchmarks take cfg.Store through interfaces of
// their own.
type serverStore interface {
	annotationStore
	authStore
	backlogStore
	benchmarkStore
	dashboardStore
	datasetStore
	evalStore
	exportStore
	gatewayStore
	keyStore
	mcpStore
	policyStore
	pushStore
	searchStore
	spanStore
	traceStore
	uiStore
	uploadStore
	pingStore
}

// New returns a server over cfg.Store.
func New(cfg Config) *Server {
	s := &Server{st: cfg.Store, log: cfg.Logger, maxBody: cfg.MaxBody, sessionTTL: cfg.SessionTTL,
		checks: cfg.Checks, detectorModel: cfg.DetectorModel, prices: cfg.Prices, noBackground: cfg.NoBackground}
	if s.prices == nil {
		s.prices = usage.Default()
	}
	s.keys.ttl = cfg.KeyCacheTTL
	if s.checks == nil {
		n := runtime.GOMAXPROCS(0)
		s.checks = policy.NewLimiter(n, 4*n, 2*time.Second)
	}
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if s.maxBody <= 0 {
		s.maxBody = DefaultMaxBody
	}
	if s.sessionTTL <= 0 {
		s.sessionTTL = 30 * 24 * time.Hour
	}
	s.builder = newSpanBuilder(cfg.Store, cfg.SpanQuiet, cfg.SpanMaxDelay, s.log, s.traceChanged)
	s.spanBacklog = cfg.SpanBacklog
	s.monitor = &monitor{st: cfg.Store, log: s.log, spans: s.builder, limit: cfg.IndexCatchUp}
	if s.monitor.limit <= 0 {
		s.monitor.limit = DefaultIndexCatchUp
	}
	s.runs = eval.NewRuns(cfg.Store, eval.Runner{LLM: cfg.LLM, Concurrency: cfg.EvalConcurrency, DetectorModel: cfg.DetectorModel}, s.log)
	s.runs.SetLease(cfg.RunLease)
	s.benchmarks = &eval.Benchmarks{Store: cfg.Store, LLM: cfg.LLM, DetectorModel: cfg.DetectorModel, Settle: s.settleDataset}
	if s.spanBacklog <= 0 {
		s.spanBacklog = 20000
	}
	s.minBodyRate, s.bodyGrace, s.trustedProxies = cfg.MinBodyRate, cfg.BodyGrace, cfg.TrustedProxies
	if s.minBodyRate <= 0 {
		s.minBodyRate = defaultMinBodyRate
	}
	if s.bodyGrace <= 0 {
		s.bodyGrace = defaultBodyGrace
	}
	inFlight := cfg.BodiesInFlight
	if inFlight <= 0 {
		inFlight = 2 * s.maxBody
	}
	s.bodies = newByteBudget(max(inFlight, s.maxBody))
	s.loginsByAddr = newAttemptLimiter(loginsPerAddress, addressRefill)
	s.loginsByName = newAttemptLimiter(loginsPerAccount, accountRefill)
	s.hashing = make(chan struct{}, runtime.GOMAXPROCS(0))
	s.initGateway(cfg.Gateway)
	s.mux = http.NewServeMux()
	s.routes()
	return s
}

// handlerFunc is an API handler: it returns an error instead of writing one.
type handlerFunc func(w http.ResponseWriter, r *http.Request, p *principal) error

func (s *Server) handle(pattern string, h handlerFunc) {
	s.patterns = append(s.patterns, pattern)
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		p, err := s.authenticate(r)
		if err == nil {
			err = h(w, r, p)
		}
		if err != nil {
			s.writeError(w, r, err)
		}
	})
}

func (s *Server) routes() {
	// Accounts and keys (auth.go, keys.go).
	s.handle("POST /api/v1/login", s.login)
	s.handle("POST /api/v1/logout", s.logout)
	s.handle("GET /api/v1/me", s.me)
	s.handle("GET /api/v1/backlog", s.backlog)
	s.handle("POST /api/v1/keys", s.createKey)
	s.handle("GET /api/v1/keys", s.listKeys)
	s.handle("DELETE /api/v1/keys/{id}", s.revokeKey)

	// Liveness and readiness, for load balancers (health.go): no
	// authentication, which would ask the database.
	s.patterns = append(s.patterns, "GET /healthz", "GET /readyz")
	s.mux.HandleFunc("GET /healthz", s.healthz)
	s.mux.HandleFunc("GET /readyz", s.readyz)

	// Invariant-compatible push (push.go).
	s.handle("POST /api/v1/push/trace", s.push)

	// OpenTelemetry: OTLP/HTTP at the path exporters use (otlp.go).
	s.handle("POST /v1/traces", s.otlpTraces)

	// Datasets (datasets.go, upload.go, export.go).
	s.handle("POST /api/v1/datasets", s.createDataset)
	s.handle("GET /api/v1/datasets", s.listDatasets)
	s.handle("GET /api/v1/datasets/{id}", s.getDataset)
	s.handle("PATCH /api/v1/datasets/{id}", s.patchDataset)
	s.handle("DELETE /api/v1/datasets/{id}", s.deleteDataset)
	s.handle("GET /api/v1/datasets/{id}/metadata", s.getMetadata)
	s.handle("PUT /api/v1/datasets/{id}/metadata", s.putMetadata)
	s.handle("POST /api/v1/datasets/{id}/upload", s.upload)
	s.handle("GET /api/v1/datasets/{id}/traces", s.listTraces)
	s.handle("GET /api/v1/datasets/{id}/export", s.export)
	s.handle("GET /api/v1/datasets/{id}/dashboard", s.getDashboard)
	s.handle("GET /api/v1/datasets/{id}/totals", s.getTotals)

	// Search (search.go).
	s.handle("GET /api/v1/datasets/{id}/search", s.searchDataset)
	s.handle("GET /api/v1/traces/{id}/hits", s.traceHits)

	// Traces (traces.go).
	s.handle("GET /api/v1/traces/{id}", s.getTrace)
	s.handle("GET /api/v1/traces/{id}/download", s.downloadTrace)
	s.handle("GET /api/v1/traces/{id}/events", s.listEvents)
	s.handle("GET /api/v1/traces/{id}/live", s.liveTrace)
	s.handle("POST /api/v1/traces/{id}/events", s.appendEvents)
	s.handle("DELETE /api/v1/traces/{id}", s.deleteTrace)

	// Annotations (annotations.go).
	s.handle("GET /api/v1/traces/{id}/annotations", s.listAnnotations)
	s.handle("POST /api/v1/traces/{id}/annotations", s.createAnnotation)
	s.handle("PUT /api/v1/traces/{id}/annotations", s.replaceAnnotations)
	s.handle("PUT /api/v1/traces/{id}/annotations/{aid}", s.updateAnnotation)
	s.handle("DELETE /api/v1/traces/{id}/annotations/{aid}", s.deleteAnnotation)

	// The explorer UI, embedded from web/dist (ui.go).
	s.uiRoutes()

	// Guardrail policies (policy.go).
	s.handle("POST /api/v1/policy/check", s.checkPolicy)
	s.handle("GET /api/v1/datasets/{id}/policies", s.listPolicies)
	s.handle("POST /api/v1/datasets/{id}/policies", s.createPolicy)
	s.handle("GET /api/v1/datasets/{id}/policies/{pid}", s.getPolicy)
	s.handle("PUT /api/v1/datasets/{id}/policies/{pid}", s.updatePolicy)
	s.handle("DELETE /api/v1/datasets/{id}/policies/{pid}", s.deletePolicy)
	s.handle("POST /api/v1/datasets/{id}/policies/{pid}/check", s.checkDataset)

	// Evaluation: scores, criteria, runs (eval.go).
	s.handle("GET /api/v1/traces/{id}/scores", s.listTraceScores)
	s.handle("POST /api/v1/traces/{id}/scores", s.createScore)
	s.handle("DELETE /api/v1/traces/{id}/scores/{sid}", s.deleteScore)
	s.handle("GET /api/v1/datasets/{id}/scores", s.listDatasetScores)
	s.handle("GET /api/v1/datasets/{id}/criteria", s.listCriteria)
	s.handle("POST /api/v1/datasets/{id}/criteria", s.createCriterion)
	s.handle("DELETE /api/v1/datasets/{id}/criteria/{cid}", s.deleteCriterion)
	s.handle("GET /api/v1/datasets/{id}/eval/status", s.evalStatus)
	s.handle("POST /api/v1/datasets/{id}/eval/runs", s.createRun)
	s.handle("GET /api/v1/datasets/{id}/eval/runs", s.listRuns)
	s.handle("GET /api/v1/eval/runs/{rid}", s.getRun)
	s.handle("GET /api/v1/eval/runs/{rid}/events", s.runEvents)
	s.handle("POST /api/v1/eval/runs/{rid}/cancel", s.cancelRun)
	s.handle("GET /api/v1/eval/runs/{rid}/compare/{other}", s.compareRuns)

	// The gateway: LLM providers and MCP servers behind Lookout (gateway.go).
	s.patterns = append(s.patterns, "/api/v1/gateway/")
	s.mux.HandleFunc("/api/v1/gateway/", s.gatewayRoute)
	s.handle("POST /api/v1/policy/check/batch", s.checkPolicyBatch)
	s.handle("POST /api/v1/policy/load", s.loadPolicy)

	// Benchmarks (benchmarks.go).
	s.handle("POST /api/v1/benchmarks", s.createBenchmark)
	s.handle("GET /api/v1/benchmarks", s.listBenchmarks)
	s.handle("GET /api/v1/benchmarks/{id}", s.getBenchmark)
	s.handle("DELETE /api/v1/benchmarks/{id}", s.deleteBenchmark)
	s.handle("POST /api/v1/benchmarks/{id}/runs", s.runBenchmark)
	s.handle("GET /api/v1/benchmarks/{id}/leaderboard", s.leaderboard)
}

// ServeHTTP adds the security headers, the body limit and a request log,
// and answers unknown routes and methods with JSON errors.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'; object-src 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	rec := &statusWriter{ResponseWriter: w}
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.log.ErrorContext(r.Context(), "panic", slog.Any("panic", v), slog.String("path", r.URL.Path))
			if rec.status == 0 {
				s.writeError(rec, r, fmt.Errorf("panic: %v", v))
			}
		}
		if rec.status == http.StatusOK && (r.URL.Path == "/healthz" || r.URL.Path == "/readyz") {
			return // a probe every few seconds would drown the log
		}
		s.log.InfoContext(r.Context(), "request", slog.String("method", r.Method), slog.String("path", r.URL.Path),
			slog.Int("status", rec.status), slog.Int64("bytes", rec.bytes), slog.Duration("took", time.Since(start)))
	}()
	if r.ContentLength > s.maxBody {
		s.writeError(rec, r, tooLargeError(s.maxBody))
		return
	}
	r.Body = http.MaxBytesReader(rec, r.Body, s.maxBody)
	release, err := s.guardBody(rec, r)
	defer release()
	if err != nil {
		s.writeError(rec, r, err)
		return
	}
	if _, pattern := s.mux.Handler(r); pattern == "" {
		s.noRoute(rec, r)
		return
	}
	s.mux.ServeHTTP(rec, r)
}

// noRoute answers a request no pattern matches: 405 with Allow when the
// path exists with other methods, else 404.
func (s *Server) noRoute(w http.ResponseWriter, r *http.Request) {
	h, _ := s.mux.Handler(r)
	probe := httptest.NewRecorder()
	h.ServeHTTP(probe, r)
	if probe.Code == http.StatusMethodNotAllowed {
		w.Header().Set("Allow", probe.Header().Get("Allow"))
		s.writeError(w, r, errorf(http.StatusMethodNotAllowed, codeMethod, "method %s not allowed on %s (allowed: %s)", r.Method, r.URL.Path, probe.Header().Get("Allow")))
		return
	}
	if (r.Method == http.MethodGet || r.Method == http.MethodHead) && !apiPath(r.URL.Path) && s.ui != nil && s.ui.index != nil {
		s.ui.page(w, r, http.StatusNotFound, nil) // the explorer's own not-found page
		return
	}
	s.writeError(w, r, errorf(http.StatusNotFound, codeNotFound, "no API endpoint %s %s", r.Method, r.URL.Path))
}

type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// writeJSON writes v as the JSON response.
func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		status = http.StatusInternalServerError
		buf.Reset()
		buf.WriteString(`{"error":{"code":"internal","message":"cannot encode the response"}}` + "\n")
	}
	writeRaw(w, status, buf.Bytes())
}

// writeRaw writes an already encoded JSON body.
func writeRaw(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body)
}

// readBody reads the whole request body (bounded by the limit set in
// ServeHTTP).
func readBody(r *http.Request) ([]byte, error) {
	if r.ContentLength > 0 {
		// Exactly the declared length, in one allocation (ServeHTTP has
		// refused a length over the limit). bytes.Buffer.ReadFrom wanted
		// 512 bytes of room past it and so doubled the full buffer: a large
		// body cost three times its size.
		buf := make([]byte, r.ContentLength)
		n := 0
		for n < len(buf) {
			m, err := r.Body.Read(buf[n:])
			n += m
			if errors.Is(err, io.EOF) {
				break // shorter than declared: the decoder says where it ends
			}
			if err != nil {
				return buf[:n], err
			}
		}
		return buf[:n], nil
	}
	return io.ReadAll(r.Body)
}

// requireJSON rejects bodies that declare a type other than JSON. A missing
// Content-Type is accepted (curl -d sends form encoding by default, which we
// also accept so the API stays easy to try by hand).
func requireJSON(r *http.Request) error {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return nil
	}
	mt := strings.ToLower(strings.TrimSpace(strings.SplitN(ct, ";", 2)[0]))
	switch mt {
	case "application/json", "application/x-ndjson", "application/jsonl", "text/plain", "application/x-www-form-urlencoded":
		return nil
	}
	if strings.HasSuffix(mt, "+json") {
		return nil
	}
	return errorf(http.StatusUnsupportedMediaType, codeUnsupported, "Content-Type %s is not JSON", mt)
}

// validName checks a dataset or key name: not blank, at most 200 bytes, no
// control characters.
func validName(what, name string) error {
	if strings.TrimSpace(name) == "" {
		return errorf(http.StatusUnprocessableEntity, codeInvalid, "%s must not be empty", what)
	}
	if len(name) > 200 {
		return errorf(http.StatusUnprocessableEntity, codeInvalid, "%s is longer than 200 bytes", what)
	}
	if strings.TrimSpace(name) != name {
		return errorf(http.StatusUnprocessableEntity, codeInvalid, "%s %q begins or ends with white space", what, name)
	}
	for _, r := range name {
		// Format characters (U+202E RIGHT-TO-LEFT OVERRIDE, zero-width
		// spaces and joiners) make a name look like another one.
		if unicode.IsControl(r) || r == unicode.ReplacementChar || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp) {
			return errorf(http.StatusUnprocessableEntity, codeInvalid, "%s %q contains a control, format or invalid character (U+%04X)", what, name, r)
		}
	}
	return nil
}

// ParseSize reads a byte count such as 64MiB, 512KiB, 10MB, 1G or 1000.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9') {
		i++
	}
	if i == 0 {
		return 0, fmt.Errorf("size %q: want a number with an optional unit (B, KiB, MiB, GiB, KB, MB, GB)", s)
	}
	n, err := strconv.ParseInt(t[:i], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("size %q: %w", s, err)
	}
	units := map[string]int64{
		"": 1, "b": 1,
		"k": 1 << 10, "kib": 1 << 10, "kb": 1000,
		"m": 1 << 20, "mib": 1 << 20, "mb": 1000 * 1000,
		"g": 1 << 30, "gib": 1 << 30, "gb": 1000 * 1000 * 1000,
	}
	mul, ok := units[strings.ToLower(strings.TrimSpace(t[i:]))]
	if !ok {
		return 0, fmt.Errorf("size %q: unknown unit %q (want B, KiB, MiB, GiB, KB, MB or GB)", s, t[i:])
	}
	if n <= 0 || n > (1<<62)/mul {
		return 0, fmt.Errorf("size %q out of range", s)
	}
	return n * mul, nil
}
