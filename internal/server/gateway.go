package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/lookout-dev/lookout/internal/gateway"
	"github.com/lookout-dev/lookout/internal/jsonscan"
	"github.com/lookout-dev/lookout/internal/policy"
	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/trace"
)

// The gateway (internal/gateway): Lookout between an agent and its model
// provider, recording every call into a dataset and checking it with the
// dataset's guardrails.
//
//	POST /api/v1/gateway/{dataset}/openai/chat/completions        → <openai url>/chat/completions
//	POST /api/v1/gateway/{dataset}/anthropic/v1/messages          → <anthropic url>/v1/messages
//	POST /api/v1/gateway/{dataset}/gemini/{version}/models/{model}:generateContent (and :streamGenerateContent)
//	                                                              → <gemini url>/{version}/models/...
//	POST /api/v1/gateway/{dataset}/steps                          a guarded step of a session (lookout mcp)
//
// Other paths under a provider are passed through, authenticated but
// neither checked nor recorded (such as GET .../openai/models). Auth is
// Invariant's: Invariant-Authorization: Bearer <Lookout key>, or the key
// after the provider key as "<provider key>;invariant-auth=<Lookout key>",
// or local mode; the provider key goes upstream untouched and is never
// stored or logged. The dataset is created on first use. A dataset named
// "mcp" is not reachable here: /api/v1/gateway/mcp/ is the MCP proxy.

// GatewayConfig configures the gateway's upstreams and checks.
type GatewayConfig struct {
	// Base URLs of the providers (defaults: the public APIs).
	OpenAIURL, AnthropicURL, GeminiURL string
	// CheckTimeout bounds the guardrail check of one call (0: 5 s).
	CheckTimeout time.Duration
	// Client sends calls upstream (nil: one with sane timeouts).
	Client *http.Client
}

// Default upstreams, as the providers' own clients use them.
const (
	DefaultOpenAIURL    = "https://api.openai.com/v1"
	DefaultAnthropicURL = "https://api.anthropic.com"
	DefaultGeminiURL    = "https://generativelanguage.googleapis.com"
)

// gatewayState is the server's gateway: the proxy, and the guardrails of
// datasets and header policies, parsed once.
type gatewayState struct {
	cfg   GatewayConfig
	proxy *gateway.Proxy
	guard *gateway.Guard
	convs gateway.ConversationStore // nil: a store that cannot keep conversations

	mu       sync.Mutex
	rails    map[string]railsEntry // by dataset id
	datasets map[datasetKey]datasetEntry
	parsed   map[string]*policy.Policy // by hash of name and source
	sessions map[string]*sessionLock   // steps of one session, one at a time
}

// datasetKey names a dataset as a gateway call does: its owner and name.
type datasetKey struct{ owner, name string }

type datasetEntry struct {
	at time.Time
	d  store.Dataset
}

type railsEntry struct {
	at    time.Time
	rails []*gateway.Guardrail
}

type sessionLock struct {
	mu   sync.Mutex
	refs int
}

// railsTTL is how long a dataset's saved policies are used before they are
// read again; this server's own policy writes take effect at once.
const railsTTL = time.Second

func (s *Server) initGateway(cfg GatewayConfig) {
	if cfg.OpenAIURL == "" {
		cfg.OpenAIURL = DefaultOpenAIURL
	}
	if cfg.AnthropicURL == "" {
		cfg.AnthropicURL = DefaultAnthropicURL
	}
	if cfg.GeminiURL == "" {
		cfg.GeminiURL = DefaultGeminiURL
	}
	client := cfg.Client
	if client == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 256
		tr.ResponseHeaderTimeout = 10 * time.Minute // models think long before the first byte
		client = &http.Client{Transport: tr}
	}
	g := &gatewayState{cfg: cfg, rails: map[string]railsEntry{}, datasets: map[datasetKey]datasetEntry{}, parsed: map[string]*policy.Policy{}, sessions: map[string]*sessionLock{}}
	g.guard = &gateway.Guard{Timeout: cfg.CheckTimeout, Limit: waitLimiter{s.checks}}
	convs, _ := s.st.(gateway.ConversationStore)
	g.convs = convs
	rec := gateway.NewRecorder(convs, s.log)
	rec.Changed = func(id string) { s.live.changed(id) }
	// While other servers share the database, the agent's next call may
	// reach another replica, which must find this one's in the store.
	rec.Shared = s.live.othersAlive
	g.proxy = &gateway.Proxy{Client: client, Guard: g.guard, Recorder: rec, Log: s.log}
	s.gw = g
}

// waitLimiter takes a check slot for the gateway, waiting for one (within
// the check's deadline) rather than refusing when the queue is full: a
// refused slot would fail a blocking guardrail closed.
type waitLimiter struct{ l *policy.Limiter }

func (w waitLimiter) Acquire(ctx context.Context) (func(), error) { return w.l.Wait(ctx) }

// closeGateway writes the calls still queued.
func (s *Server) closeGateway() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.gw.proxy.Recorder.Close(ctx); err != nil {
		s.log.Warn("gateway: calls left unrecorded at shutdown", "err", err)
	}
}

// forgetRails drops a dataset's cached guardrails (its policies changed).
func (s *Server) forgetRails(datasetID string) {
	s.gw.mu.Lock()
	delete(s.gw.rails, datasetID)
	s.gw.mu.Unlock()
}

// forgetDataset drops what the gateway keeps of a deleted dataset.
func (s *Server) forgetDataset(datasetID string) {
	s.gw.mu.Lock()
	defer s.gw.mu.Unlock()
	delete(s.gw.rails, datasetID)
	for k, e := range s.gw.datasets {
		if e.d.ID == datasetID {
			delete(s.gw.datasets, k)
		}
	}
}

// maxGatewayDatasets bounds the datasets the gateway remembers.
const maxGatewayDatasets = 4096

// gatewayDataset is datasetForPush for a gateway call, remembered for
// railsTTL: an agent's calls into one dataset do not each look it up. A
// deletion through this server is seen at once; elsewhere, within
// railsTTL (a call in between is recorded into the deleted dataset, which
// fails and is logged, as a call racing the deletion would).
func (s *Server) gatewayDataset(ctx context.Context, p *principal, name string) (store.Dataset, error) {
	g := s.gw
	k := datasetKey{p.User.ID, name}
	g.mu.Lock()
	e, ok := g.datasets[k]
	g.mu.Unlock()
	if ok && time.Since(e.at) < railsTTL {
		return e.d, nil
	}
	d, err := s.datasetForPush(ctx, p, name)
	if err != nil {
		return d, err
	}
	g.mu.Lock()
	if len(g.datasets) >= maxGatewayDatasets {
		clear(g.datasets)
	}
	g.datasets[k] = datasetEntry{at: time.Now(), d: d}
	g.mu.Unlock()
	return d, nil
}

// gatewayRoute serves everything under /api/v1/gateway/: one handler, since
// the MCP proxy's /mcp/ and the datasets' /{dataset}/ share the level.
func (s *Server) gatewayRoute(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.EscapedPath(), "/api/v1/gateway/")
	segs := strings.SplitN(rest, "/", 3)
	if len(segs) < 2 || segs[0] == "" {
		s.writeError(w, r, errorf(http.StatusNotFound, codeNotFound, "no gateway route %s: use /api/v1/gateway/{dataset}/openai/..., /anthropic/..., /gemini/... or /steps", r.URL.Path))
		return
	}
	if s.gw.convs == nil {
		s.writeError(w, r, errorf(http.StatusNotImplemented, "not_implemented", "this store cannot keep gateway conversations"))
		return
	}
	if segs[0] == "mcp" {
		s.mcpRoute(w, r)
		return
	}
	dataset, err := url.PathUnescape(segs[0])
	if err != nil {
		s.writeError(w, r, errorf(http.StatusBadRequest, codeBadRequest, "dataset name in the path: %v", err))
		return
	}
	if segs[1] == "steps" && len(segs) == 2 {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			s.writeError(w, r, errorf(http.StatusMethodNotAllowed, codeMethod, "method %s not allowed on %s (allowed: POST)", r.Method, r.URL.Path))
			return
		}
		p, err := s.authenticate(r)
		if err == nil {
			err = s.gatewaySteps(w, r, p, dataset)
		}
		if err != nil {
			s.writeError(w, r, err)
		}
		return
	}
	var sub string
	if len(segs) == 3 {
		sub = "/" + segs[2]
	}
	if err := s.proxyCall(w, r, dataset, segs[1], sub); err != nil {
		s.writeError(w, r, err)
	}
}

// providerKey names the header that carries each provider's key.
func providerKey(provider string) []string {
	switch provider {
	case "openai":
		return []string{"Authorization"}
	case "anthropic":
		return []string{"X-Api-Key", "Authorization"}
	case "gemini":
		return []string{"X-Goog-Api-Key"}
	}
	return nil
}

// proxyCall serves one call to a provider.
func (s *Server) proxyCall(w http.ResponseWriter, r *http.Request, dataset, provider, sub string) error {
	var base string
	var prov gateway.Provider
	switch provider {
	case "openai":
		base, prov = s.gw.cfg.OpenAIURL, gateway.OpenAI()
	case "anthropic":
		base, prov = s.gw.cfg.AnthropicURL, gateway.Anthropic()
	case "gemini":
		base, prov = s.gw.cfg.GeminiURL, gateway.Gemini()
	default:
		return errorf(http.StatusNotFound, codeNotFound, "no gateway provider %q: use openai, anthropic or gemini", provider)
	}
	if err := sameOrigin(r); err != nil {
		return err
	}
	header := upstreamHeader(r.Header)
	p, err := s.gatewayPrincipal(r, provider, header)
	if err != nil {
		return err
	}
	if err := validName("dataset name", dataset); err != nil {
		return err
	}
	d, err := s.gatewayDataset(r.Context(), p, dataset)
	if err != nil {
		return err
	}
	target := strings.TrimRight(base, "/") + sub
	query := r.URL.RawQuery
	if provider == "gemini" { // the key in the query, possibly with Lookout's
		query, _ = splitQueryKey(query)
	}
	if query != "" {
		target += "?" + query
	}
	call, model, stream, ok := recordedCall(provider, r.Method, sub)
	if !ok {
		return s.passThrough(w, r, target, header)
	}
	body, err := readBody(r)
	if err != nil {
		return err
	}
	rails, err := s.callRails(r, d)
	if err != nil {
		return err
	}
	c := &gateway.Call{Provider: prov, Upstream: target, Header: header, Body: body,
		OwnerID: d.OwnerID, DatasetID: d.ID, Rails: rails, Model: model}
	if call == "gemini" {
		c.Stream = &stream
	}
	s.gw.proxy.Serve(w, r, c)
	return nil
}

// recordedCall tells whether a provider path is a model call the gateway
// checks and records; for Gemini it also reads the model and the method
// from the path ({version}/models/{model}:generateContent).
func recordedCall(provider, method, sub string) (kind, model string, stream, ok bool) {
	if method != http.MethodPost {
		return "", "", false, false
	}
	switch provider {
	case "openai":
		return "openai", "", false, sub == "/chat/completions"
	case "anthropic":
		return "anthropic", "", false, sub == "/v1/messages"
	case "gemini":
		_, rest, found := strings.Cut(sub, "/models/")
		if !found {
			return "", "", false, false
		}
		m, verb, found := strings.Cut(rest, ":")
		if !found {
			return "", "", false, false
		}
		m, _ = url.PathUnescape(m)
		switch verb {
		case "generateContent":
			return "gemini", m, false, true
		case "streamGenerateContent":
			return "gemini", m, true, true
		}
	}
	return "", "", false, false
}

// passThrough forwards a provider request the gateway does not record.
func (s *Server) passThrough(w http.ResponseWriter, r *http.Request, target string, header http.Header) error {
	up, err := http.NewRequestWithContext(r.Context(), r.Method, target, r.Body)
	if err != nil {
		return errorf(http.StatusBadGateway, "bad_gateway", "upstream URL: %v", err)
	}
	up.Header = header
	up.ContentLength = r.ContentLength
	resp, err := s.gw.proxy.Client.Do(up)
	if err != nil {
		return errorf(http.StatusBadGateway, "bad_gateway", "the upstream did not answer: %v", err)
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		if k == "Connection" || k == "Transfer-Encoding" || k == "Keep-Alive" {
			continue
		}
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			w.Write(buf[:n])
			if f, ok := w.(http.Flusher); ok {
				f.Flush()
			}
		}
		if err != nil {
			return nil
		}
	}
}

// lookoutHeaders are the request headers that stay with Lookout.
var lookoutHeaders = map[string]bool{
	"Invariant-Authorization": true, "Invariant-Guardrails-Authorization": true, "Invariant-Guardrails": true,
	"Lookout-Guardrails": true, "Cookie": true, "Host": true, "Accept-Encoding": true, "Content-Length": true,
	"Connection": true, "Keep-Alive": true, "Proxy-Authorization": true, "Te": true, "Trailer": true,
	"Transfer-Encoding": true, "Upgrade": true, "Origin": true, "Referer": true,
	"X-Forwarded-For": true, "X-Forwarded-Host": true, "X-Forwarded-Proto": true, "X-Forwarded-Port": true, "X-Real-Ip": true,
}

// upstreamHeader is the headers a call carries upstream.
func upstreamHeader(in http.Header) http.Header {
	out := make(http.Header, len(in))
	for k, vs := range in {
		if lookoutHeaders[k] || strings.HasPrefix(k, "Sec-Fetch-") {
			continue
		}
		out[k] = append([]string(nil), vs...)
	}
	return out
}

// gatewayPrincipal finds who calls through the gateway: the Lookout key in
// Invariant-Authorization, else appended to the provider key (which loses
// the suffix in header), else local mode. The provider key itself is never
// taken for a Lookout key.
func (s *Server) gatewayPrincipal(r *http.Request, provider string, header http.Header) (*principal, error) {
	key := ""
	if h := r.Header.Get("Invariant-Authorization"); h != "" {
		scheme, k, _ := strings.Cut(h, " ")
		if !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(k) == "" {
			return nil, errorf(http.StatusUnauthorized, codeUnauthorized, `the Invariant-Authorization header must be "Bearer <Lookout API key>"`)
		}
		key = strings.TrimSpace(k)
	}
	for _, name := range providerKey(provider) {
		v := header.Get(name)
		pk, lk, ok := strings.Cut(v, ";invariant-auth=")
		if !ok {
			continue
		}
		if key == "" {
			key = strings.TrimSpace(lk)
		}
		header.Set(name, strings.TrimSpace(pk))
	}
	if provider == "gemini" {
		if _, lk := splitQueryKey(r.URL.RawQuery); lk != "" && key == "" {
			key = lk
		}
	}
	if key != "" {
		return s.bearerPrincipal(r, key)
	}
	if p, err := s.localPrincipal(r); p != nil || err != nil {
		return p, err
	}
	return nil, errorf(http.StatusUnauthorized, codeUnauthorized,
		`the gateway needs a Lookout API key: send "Invariant-Authorization: Bearer <key>" or append ";invariant-auth=<key>" to the provider key`)
}

// splitQueryKey takes Lookout's key off Gemini's ?key=<provider
// key>;invariant-auth=<Lookout key>, and returns the query to send upstream
// (the provider key alone) and the Lookout key. It reads the raw query pair
// by pair: the key is usually written with a bare ";", which url.ParseQuery
// refuses (and would drop), and the other parameters go upstream as sent.
func splitQueryKey(raw string) (upstream, lookoutKey string) {
	pairs := strings.Split(raw, "&")
	for i, pair := range pairs {
		v, ok := strings.CutPrefix(pair, "key=")
		if !ok {
			continue
		}
		if u, err := url.QueryUnescape(v); err == nil {
			v = u
		}
		pk, lk, found := strings.Cut(v, ";invariant-auth=")
		if !found {
			continue
		}
		pairs[i] = "key=" + url.QueryEscape(strings.TrimSpace(pk))
		if lookoutKey == "" {
			lookoutKey = strings.TrimSpace(lk)
		}
	}
	return strings.Join(pairs, "&"), lookoutKey
}

// callRails are the guardrails of a call: the dataset's saved policies and
// a policy in the Lookout-Guardrails (or Invariant-Guardrails) header, which
// blocks.
func (s *Server) callRails(r *http.Request, d store.Dataset) ([]*gateway.Guardrail, error) {
	rails, err := s.datasetRails(r.Context(), d)
	if err != nil {
		return nil, err
	}
	for _, h := range []string{"Lookout-Guardrails", "Invariant-Guardrails"} {
		v := r.Header.Get(h)
		if v == "" {
			continue
		}
		src, err := unescapeHeaderPolicy(v)
		if err != nil {
			return nil, errorf(http.StatusBadRequest, codeBadRequest, "%s header: %v", h, err)
		}
		pol, err := s.parseCached(r.Context(), "header policy", src)
		if err != nil {
			return nil, err
		}
		rails = append(append([]*gateway.Guardrail(nil), rails...), &gateway.Guardrail{ID: "inline", Name: "guardrails from the " + h + " header", Mode: store.PolicyBlock, Policy: pol})
		break
	}
	return rails, nil
}

// datasetRails are a dataset's saved policies as guardrails, read again at
// most every railsTTL.
func (s *Server) datasetRails(ctx context.Context, d store.Dataset) ([]*gateway.Guardrail, error) {
	g := s.gw
	g.mu.Lock()
	e, ok := g.rails[d.ID]
	g.mu.Unlock()
	if ok && time.Since(e.at) < railsTTL {
		return e.rails, nil
	}
	saved, err := s.st.ListPolicies(ctx, d.ID)
	if err != nil {
		return nil, err
	}
	rails := make([]*gateway.Guardrail, 0, len(saved))
	for _, sp := range saved {
		pol, err := s.parseCached(ctx, sp.Name, sp.Source)
		if err != nil {
			// A saved policy that no longer loads (an older build saved it):
			// a guardrail that fails on every call, closed or open by mode.
			pol = nil
		}
		mode := sp.Mode
		if mode != store.PolicyBlock {
			mode = store.PolicyLog
		}
		rails = append(rails, &gateway.Guardrail{ID: sp.ID, Name: sp.Name, Mode: mode, Policy: pol})
	}
	g.mu.Lock()
	g.rails[d.ID] = railsEntry{at: time.Now(), rails: rails}
	g.mu.Unlock()
	return rails, nil
}

// maxParsed bounds the parsed policies kept.
const maxParsed = 512

// parseCached parses a policy once per (name, source), under one check's
// budget and the request's context.
func (s *Server) parseCached(ctx context.Context, name, src string) (*policy.Policy, error) {
	sum := sha256.Sum256([]byte(name + "\x00" + src))
	key := hex.EncodeToString(sum[:])
	g := s.gw
	g.mu.Lock()
	pol, ok := g.parsed[key]
	g.mu.Unlock()
	if ok {
		return pol, nil
	}
	ctx, cancel := policy.WithTimeBudget(ctx, checkLimits.Time)
	defer cancel()
	pol, err := s.parsePolicy(ctx, name, src)
	if err != nil {
		return nil, err
	}
	g.mu.Lock()
	if len(g.parsed) >= maxParsed {
		for k := range g.parsed { // any one: a rare event, cheap to redo
			delete(g.parsed, k)
			break
		}
	}
	g.parsed[key] = pol
	g.mu.Unlock()
	return pol, nil
}

// unescapeHeaderPolicy undoes the escapes a policy needs to travel in a
// header, as Invariant's gateway reads them (Python's unicode_escape): \n,
// \t, \r, \\, \', \", \xHH, \uHHHH and \UHHHHHHHH.
func unescapeHeaderPolicy(v string) (string, error) {
	if !strings.Contains(v, `\`) {
		return v, nil
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c != '\\' || i+1 == len(v) {
			b.WriteByte(c)
			continue
		}
		i++
		switch v[i] {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case '\\', '\'', '"':
			b.WriteByte(v[i])
		case 'x', 'u', 'U':
			n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[v[i]]
			if i+n >= len(v) {
				return "", fmt.Errorf(`\%c escape at byte %d needs %d hex digits`, v[i], i-1, n)
			}
			r, err := strconv.ParseUint(v[i+1:i+1+n], 16, 32)
			if err != nil || !utf8.ValidRune(rune(r)) {
				return "", fmt.Errorf(`bad \%c escape at byte %d`, v[i], i-1)
			}
			b.WriteRune(rune(r))
			i += n
		default:
			b.WriteByte('\\')
			b.WriteByte(v[i])
		}
	}
	return b.String(), nil
}

// ---- steps: guarded steps of a session (lookout mcp) ----

// gatewayStepResult is the answer of a step.
type gatewayStepResult struct {
	TraceID    string           `json:"trace_id"`
	First      int              `json:"first"`
	Blocked    bool             `json:"blocked"`
	Message    string           `json:"message,omitempty"`
	Violations []map[string]any `json:"violations"`
}

// gatewaySteps is POST /api/v1/gateway/{dataset}/steps:
// {"session", "events", "metadata"?} → gatewayStepResult.
func (s *Server) gatewaySteps(w http.ResponseWriter, r *http.Request, p *principal, dataset string) error {
	if err := s.requireUser(r, p); err != nil {
		return err
	}
	var (
		session           string
		events            []trace.Event
		meta              json.RawMessage
		hasSession, hasEv bool
		hasMeta           bool
	)
	body, err := decodeBody(r, map[string]member{
		"session": func(sc *jsonscan.Scanner) error { hasSession = true; return str(&session, "session")(sc) },
		"events": func(sc *jsonscan.Scanner) error {
			hasEv = true
			evs, err := trace.DecodeEvents(sc, "events (a list of events)")
			events = evs
			return err
		},
		"metadata": object(&meta, &hasMeta, "metadata"),
	})
	if err != nil {
		return err
	}
	if !hasSession || session == "" || len(session) > 200 {
		return jsonError(body, jsonscan.New(body).Errorf(`the body needs "session": the session's id, 1 to 200 bytes`))
	}
	if !hasEv {
		return jsonError(body, jsonscan.New(body).Errorf(`the body needs "events": the step's events`))
	}
	if err := validName("dataset name", dataset); err != nil {
		return err
	}
	res, err := s.gatewayStep(r.Context(), p, dataset, session, events, meta)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

// gatewayStep checks a session's next events against the dataset's
// guardrails, with the session's earlier events as the past, and stores
// them (blocked or not) with the violations as annotations. Steps of one
// session run one at a time.
func (s *Server) gatewayStep(ctx context.Context, p *principal, dataset, session string, events []trace.Event, meta json.RawMessage) (gatewayStepResult, error) {
	d, err := s.datasetForPush(ctx, p, dataset)
	if err != nil {
		return gatewayStepResult{}, err
	}
	sum := sha256.Sum256([]byte("session\x00" + session))
	head := "session:" + hex.EncodeToString(sum[:16])
	unlock := s.lockSession(d.ID + "\x00" + head)
	defer unlock()
	// The lock orders this server's steps of the session; a step of it
	// through another server (replicas) may extend the trace first: the
	// step is then read and checked again after it, as it would have been
	// behind the lock.
	for attempt := 1; ; attempt++ {
		res, err := s.gatewayStepOnce(ctx, d, session, head, events, meta)
		if !errors.Is(err, store.ErrConflict) || attempt == maxStepAttempts {
			return res, err
		}
		// A random wait, longer after each loss, so that the servers'
		// steps stop colliding.
		select {
		case <-ctx.Done():
			return res, err
		case <-time.After(time.Duration(rand.Int64N(int64(attempt) * int64(2*time.Millisecond)))):
		}
	}
}

// maxStepAttempts bounds how often a session's step is tried again after
// another server's step of the session came first.
const maxStepAttempts = 20

// gatewayStepOnce reads the session's trace, checks the step after it and
// records it, refused with store.ErrConflict when another step extended
// the trace meanwhile.
func (s *Server) gatewayStepOnce(ctx context.Context, d store.Dataset, session, head string, events []trace.Event, meta json.RawMessage) (gatewayStepResult, error) {
	var past []trace.Event
	conv, err := s.gw.convs.FindConversation(ctx, d.ID, []string{head})
	switch {
	case err == nil:
		st, err := s.st.Trace(ctx, conv.TraceID)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return gatewayStepResult{}, err
		}
		if err == nil {
			past = st.Trace.Events
		} else {
			conv = store.Conversation{}
		}
	case !errors.Is(err, store.ErrNotFound):
		return gatewayStepResult{}, err
	}
	rails, err := s.datasetRails(ctx, d)
	if err != nil {
		return gatewayStepResult{}, err
	}
	all := append(append([]trace.Event(nil), past...), events...)
	v := s.gw.guard.Check(ctx, rails, all, len(past), nil)
	fs := make([]gateway.Finding, 0, len(v.Findings))
	for _, f := range v.Findings {
		if f.New {
			fs = append(fs, f)
		}
	}
	verdict := gateway.Verdict{Findings: fs}
	for _, f := range fs {
		if f.Guardrail.Blocks() {
			verdict.Blocked = true
		}
	}
	anns := gateway.Annotations(fs, len(all))
	step := store.ConversationStep{Head: head, Annotations: anns}
	if conv.TraceID != "" {
		step.TraceID, step.ExpectEvents, step.Events = conv.TraceID, len(past), append([]trace.Event(nil), events...)
	} else {
		if len(meta) == 0 {
			meta = json.RawMessage(`{}`)
		}
		step.Trace = &trace.Trace{Name: "session " + session, Metadata: meta, Events: all}
		step.Exclusive = true // one trace a session, whichever server starts it
	}
	id, err := s.gw.convs.RecordConversation(context.WithoutCancel(ctx), d.OwnerID, d.ID, step)
	if err != nil {
		return gatewayStepResult{}, err
	}
	s.live.changed(id)
	res := gatewayStepResult{TraceID: id, First: len(past), Blocked: verdict.Blocked, Violations: []map[string]any{}}
	if verdict.Blocked {
		res.Message = verdict.Message()
	}
	for _, e := range verdict.Details()["errors"].([]map[string]any) {
		g := e["guardrail"].(map[string]any)
		delete(e, "guardrail")
		e["policy"] = map[string]any{"id": g["id"], "name": g["name"], "mode": g["action"]}
		res.Violations = append(res.Violations, e)
	}
	return res, nil
}

// lockSession serialises the steps of one session.
func (s *Server) lockSession(key string) (unlock func()) {
	g := s.gw
	g.mu.Lock()
	l := g.sessions[key]
	if l == nil {
		l = &sessionLock{}
		g.sessions[key] = l
	}
	l.refs++
	g.mu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		g.mu.Lock()
		l.refs--
		if l.refs == 0 {
			delete(g.sessions, key)
		}
		g.mu.Unlock()
	}
}

// gatewayStore is what the gateway's handlers ask of the store (conversations through gateway.ConversationStore, when the store is one).
type gatewayStore interface {
	ListPolicies(ctx context.Context, datasetID string) ([]store.Policy, error)
	Trace(ctx context.Context, id string) (store.StoredTrace, error)
}
