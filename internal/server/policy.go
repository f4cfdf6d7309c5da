package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/lookout-dev/lookout/internal/jsonscan"
	"github.com/lookout-dev/lookout/internal/policy"
	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/trace"
)

// Guardrail policies (Invariant's rule language, internal/policy):
//
//	POST   /api/v1/policy/check                        {"policy", "messages", "parameters"?} → {"errors": [...]}
//	GET    /api/v1/datasets/{id}/policies              → {"policies": [...]}
//	POST   /api/v1/datasets/{id}/policies              {"name", "source", "mode"?} → 201 the policy
//	GET    /api/v1/datasets/{id}/policies/{pid}        → the policy
//	PUT    /api/v1/datasets/{id}/policies/{pid}        {"name"?, "source"?, "mode"?} → the policy
//	DELETE /api/v1/datasets/{id}/policies/{pid}        → 204
//	POST   /api/v1/datasets/{id}/policies/{pid}/check  {"parameters"?} → server-sent events
//
// A policy's mode is what the gateway does with its violations: "block"
// refuses the call, "log" (the default) lets it through; both record them.
//
// Errors of the policy itself (syntax, unknown names and types) are 422 with
// code "invalid" and details {line, col, class, diagnostics, report}; a
// policy that fails on a trace (a missing parameter, a detector this build
// lacks, a runaway rule stopped by the budget) is 422 with details {class,
// line, col}. Every check runs under checkLimits, with one deadline for
// loading the policy and checking the trace, and stops when the client goes
// away; at most Server.checks run at once (503 with Retry-After past its
// queue). A result cut at the violation cap says "truncated": true.

// checkLimits bound each check the server runs (one trace), so that a
// runaway rule ends with a BudgetExceeded error instead of holding a core
// or the memory.
var checkLimits = policy.Limits{Steps: 50_000_000, Time: 10 * time.Second, Memory: 256 << 20, Violations: 1000}

// analyzerSource is the source of the annotations a dataset-wide check
// stores; policyIDKey is the member of their extra naming the policy, which
// scopes the replacement of earlier results to that policy.
const (
	analyzerSource = "analyzer"
	policyIDKey    = "policy_id"
)

type policyJSON struct {
	ID        string    `json:"id"`
	DatasetID string    `json:"dataset_id"`
	Name      string    `json:"name"`
	Source    string    `json:"source"`
	Mode      string    `json:"mode"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

func toPolicyJSON(p store.Policy) policyJSON {
	return policyJSON{ID: p.ID, DatasetID: p.DatasetID, Name: p.Name, Source: p.Source, Mode: p.Mode, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}
}

// policyMode reads the "mode" member: "block" or "log".
func policyMode(dst *string) member {
	return func(s *jsonscan.Scanner) error {
		start := s.Offset()
		v, err := s.String("mode")
		if err != nil {
			return err
		}
		if v != store.PolicyBlock && v != store.PolicyLog {
			return s.ErrorAt(start, "mode must be %q or %q, not %q", store.PolicyBlock, store.PolicyLog, v)
		}
		*dst = v
		return nil
	}
}

// diagnosticJSON is one problem of a policy that does not load.
type diagnosticJSON struct {
	Line    int    `json:"line"`
	Col     int    `json:"col"`
	Class   string `json:"class"`
	Message string `json:"message"`
}

// parsePolicy parses and checks a policy, stopped when ctx is done, with
// the server's limits and detector model; a policy that does not load is a
// 422 naming the first problem's line and column. A policy that is only
// saved is loaded under a time budget of its own.
func (s *Server) parsePolicy(ctx context.Context, name, src string) (*policy.Policy, error) {
	p, err := policy.ParseContext(ctx, name, src)
	if err != nil {
		return nil, policyError(err)
	}
	p.SetLimits(checkLimits)
	p.SetDetectorModel(s.detectorModel)
	return p, nil
}

// savePolicyCheck loads a policy that is being saved, under one check's
// time budget and a slot of the check limiter.
func (s *Server) savePolicyCheck(r *http.Request, name, src string) error {
	ctx, done, err := s.checkSlot(r)
	if err != nil {
		return err
	}
	defer done()
	_, err = s.parsePolicy(ctx, name, src)
	return err
}

// checkSlot takes a slot of the check limiter (503 when the queue is full)
// and gives one check's budget: one deadline for loading the policy and
// checking, ended early when the client goes away. done frees both.
func (s *Server) checkSlot(r *http.Request) (ctx context.Context, done func(), err error) {
	release, err := s.checks.Acquire(r.Context())
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := policy.WithTimeBudget(r.Context(), checkLimits.Time)
	return ctx, func() { cancel(); release() }, nil
}

// resultJSON is a check's answer: Invariant's {"errors": [...]}, with
// "truncated": true when the violations were cut at the cap.
func resultJSON(res *policy.Result) map[string]any {
	out := map[string]any{"errors": violationsJSON(res.Violations)}
	if res.Truncated {
		out["truncated"] = true
	}
	return out
}

// policyError turns an error of the policy package into an API error: load
// errors with every diagnostic and the caret report, runtime errors with
// their class and place. Anything else is returned as it is.
func policyError(err error) error {
	var le *policy.LoadError
	if errors.As(err, &le) {
		diags := make([]diagnosticJSON, len(le.Diagnostics))
		for i, d := range le.Diagnostics {
			diags[i] = diagnosticJSON{Line: d.Line, Col: d.Col, Class: d.Class, Message: d.Msg}
		}
		details := map[string]any{"diagnostics": diags, "report": le.Report()}
		if len(diags) > 0 {
			details["line"], details["col"], details["class"] = diags[0].Line, diags[0].Col, diags[0].Class
		}
		return &apiError{Status: http.StatusUnprocessableEntity, Code: codeInvalid, Message: "invalid policy: " + le.Error(), Details: details}
	}
	var re *policy.RuntimeError
	if errors.As(err, &re) {
		if re.Class == policy.ClassInternal {
			return fmt.Errorf("policy check: %w", err)
		}
		details := map[string]any{"class": re.Class}
		if re.Pos.Line > 0 {
			details["line"], details["col"] = re.Pos.Line, re.Pos.Col
		}
		return &apiError{Status: http.StatusUnprocessableEntity, Code: codeInvalid, Message: "policy failed: " + re.Error(), Details: details}
	}
	return err
}

// parameters reads the "parameters" member: an object (or null) whose
// members the policy reads as input.<name>.
func parameters(dst *map[string]any) member {
	return func(s *jsonscan.Scanner) error {
		start := s.Offset()
		raw, err := trace.DecodeObject(s, "parameters")
		if err != nil || raw == nil {
			return err
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return s.ErrorAt(start, "parameters: %s", err.Error())
		}
		*dst = make(map[string]any, len(m))
		for k, v := range m {
			(*dst)[k] = v
		}
		return nil
	}
}

// violationsJSON is the "errors" list of Invariant's AnalysisResult.to_dict().
func violationsJSON(vs []*policy.Violation) []map[string]any {
	out := make([]map[string]any, len(vs))
	for i, v := range vs {
		out[i] = v.ToDict()
	}
	return out
}

// checkPolicy is POST /api/v1/policy/check, Invariant's API: check one
// trace, given in the request, against a policy given in the request.
func (s *Server) checkPolicy(w http.ResponseWriter, r *http.Request, p *principal) error {
	if err := s.requireUser(r, p); err != nil {
		return err
	}
	var (
		src         string
		events      []trace.Event
		params      map[string]any
		hasPolicy   bool
		hasMessages bool
	)
	body, err := decodeBody(r, map[string]member{
		"policy": func(sc *jsonscan.Scanner) error { hasPolicy = true; return str(&src, "policy")(sc) },
		"messages": func(sc *jsonscan.Scanner) error {
			hasMessages = true
			evs, err := trace.DecodeEvents(sc, "messages (a list of events)")
			events = evs
			return err
		},
		"parameters": parameters(&params),
	})
	if err != nil {
		return err
	}
	if !hasPolicy {
		return jsonError(body, jsonscan.New(body).Errorf(`the body needs "policy": the policy text`))
	}
	if !hasMessages {
		return jsonError(body, jsonscan.New(body).Errorf(`the body needs "messages": the trace, a list of events`))
	}
	ctx, done, err := s.checkSlot(r)
	if err != nil {
		return err
	}
	defer done()
	pol, err := s.parsePolicy(ctx, "policy", src)
	if err != nil {
		return err
	}
	res, err := pol.AnalyzeContext(ctx, events, params)
	if testHookCheckDone != nil {
		testHookCheckDone(err)
	}
	if err != nil {
		return policyError(err)
	}
	writeJSON(w, http.StatusOK, resultJSON(res))
	return nil
}

// checkPolicyBatch is POST /api/v1/policy/check/batch, the guardrails
// service API that Invariant's gateway calls: one trace checked against
// several policies, {"messages", "policies": [source...], "parameters"?,
// "dataset_name"?} → {"result": [{"errors": [...]}...]}, one result per
// policy in order. A policy that does not load or fails on the trace gets
// {"errors": [], "error_message": "..."}, as Invariant answers, so one bad
// policy does not hide the others' results.
func (s *Server) checkPolicyBatch(w http.ResponseWriter, r *http.Request, p *principal) error {
	if err := s.requireUser(r, p); err != nil {
		return err
	}
	var (
		sources     []string
		events      []trace.Event
		params      map[string]any
		dataset     string
		hasDataset  bool
		hasPolicies bool
		hasMessages bool
	)
	body, err := decodeBody(r, map[string]member{
		"policies": func(sc *jsonscan.Scanner) error {
			hasPolicies = true
			if err := sc.Expect(jsonscan.Array, "policies (a list of policy texts)"); err != nil {
				return err
			}
			return sc.Array(func(int) error {
				var src string
				err := str(&src, "a policy text")(sc)
				sources = append(sources, src)
				return err
			})
		},
		"messages": func(sc *jsonscan.Scanner) error {
			hasMessages = true
			evs, err := trace.DecodeEvents(sc, "messages (a list of events)")
			events = evs
			return err
		},
		"parameters":   parameters(&params),
		"dataset_name": optStr(&dataset, &hasDataset, "dataset_name"),
	})
	if err != nil {
		return err
	}
	if !hasPolicies {
		return jsonError(body, jsonscan.New(body).Errorf(`the body needs "policies": a list of policy texts`))
	}
	if !hasMessages {
		return jsonError(body, jsonscan.New(body).Errorf(`the body needs "messages": the trace, a list of events`))
	}
	release, err := s.checks.Acquire(r.Context())
	if err != nil {
		return err
	}
	defer release()
	results := make([]map[string]any, len(sources))
	for i, src := range sources {
		// Each policy is one check: one deadline for loading and checking.
		ctx, cancel := policy.WithTimeBudget(r.Context(), checkLimits.Time)
		pol, err := s.parsePolicy(ctx, fmt.Sprintf("policies[%d]", i), src)
		if err == nil {
			var res *policy.Result
			res, err = pol.AnalyzeContext(ctx, events, params)
			if err == nil {
				cancel()
				results[i] = resultJSON(res)
				continue
			}
			err = policyError(err)
		}
		cancel()
		if r.Context().Err() != nil {
			return r.Context().Err() // the client went away
		}
		ae := toAPIError(err)
		if ae.Status >= 500 {
			return err
		}
		results[i] = map[string]any{"errors": []any{}, "error_message": ae.Message}
	}
	writeJSON(w, http.StatusOK, map[string]any{"result": results})
	return nil
}

// loadPolicy is POST /api/v1/policy/load {"policy"}: Invariant's gateway
// asks the guardrails service to load a policy ahead of its checks. Lookout
// parses it (policies are cached when used) and answers whether it loads:
// 200 {"success": true, "rules": n}, or 422 with the diagnostics.
func (s *Server) loadPolicy(w http.ResponseWriter, r *http.Request, p *principal) error {
	if err := s.requireUser(r, p); err != nil {
		return err
	}
	var src string
	var has bool
	body, err := decodeBody(r, map[string]member{
		"policy": func(sc *jsonscan.Scanner) error { has = true; return str(&src, "policy")(sc) },
	})
	if err != nil {
		return err
	}
	if !has {
		return jsonError(body, jsonscan.New(body).Errorf(`the body needs "policy": the policy text`))
	}
	ctx, done, err := s.checkSlot(r)
	if err != nil {
		return err
	}
	defer done()
	pol, err := s.parsePolicy(ctx, "policy", src)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "rules": pol.Rules()})
	return nil
}

func (s *Server) listPolicies(w http.ResponseWriter, r *http.Request, p *principal) error {
	d, err := s.readableDataset(r, p, r.PathValue("id"))
	if err != nil {
		return err
	}
	ps, err := s.st.ListPolicies(r.Context(), d.ID)
	if err != nil {
		return err
	}
	out := make([]policyJSON, len(ps))
	for i, pol := range ps {
		out[i] = toPolicyJSON(pol)
	}
	writeJSON(w, http.StatusOK, map[string]any{"policies": out})
	return nil
}

// datasetPolicy loads policy {pid} of dataset d (404 when it is another
// dataset's).
func (s *Server) datasetPolicy(r *http.Request, d store.Dataset) (store.Policy, error) {
	pid := r.PathValue("pid")
	pol, err := s.st.Policy(r.Context(), pid)
	if errors.Is(err, store.ErrNotFound) || (err == nil && pol.DatasetID != d.ID) {
		return store.Policy{}, notFound("policy " + pid + " of dataset " + d.ID)
	}
	return pol, err
}

func (s *Server) getPolicy(w http.ResponseWriter, r *http.Request, p *principal) error {
	d, err := s.readableDataset(r, p, r.PathValue("id"))
	if err != nil {
		return err
	}
	pol, err := s.datasetPolicy(r, d)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toPolicyJSON(pol))
	return nil
}

// createPolicy saves {"name", "source", "mode"?} with a dataset (mode log
// unless given). The source must
// load: a policy with errors is refused with their places. A name the
// dataset already uses is 409 (PUT changes a policy).
func (s *Server) createPolicy(w http.ResponseWriter, r *http.Request, p *principal) error {
	d, err := s.writableDataset(r, p, r.PathValue("id"))
	if err != nil {
		return err
	}
	pol := store.Policy{DatasetID: d.ID}
	var hasSource bool
	body, err := decodeBody(r, map[string]member{
		"name":   str(&pol.Name, "name"),
		"source": func(sc *jsonscan.Scanner) error { hasSource = true; return str(&pol.Source, "source")(sc) },
		"mode":   policyMode(&pol.Mode),
	})
	if err != nil {
		return err
	}
	if err := validName("policy name", pol.Name); err != nil {
		return err
	}
	if !hasSource {
		return jsonError(body, jsonscan.New(body).Errorf(`the body needs "source": the policy text`))
	}
	if err := s.savePolicyCheck(r, pol.Name, pol.Source); err != nil {
		return err
	}
	// The store refuses a taken name, also to the loser of two creations at once.
	saved, err := s.st.CreatePolicy(r.Context(), pol)
	if errors.Is(err, store.ErrConflict) {
		existing, lerr := s.st.ListPolicies(r.Context(), d.ID)
		if lerr != nil {
			return lerr
		}
		for _, e := range existing {
			if e.Name == pol.Name {
				return errorf(http.StatusConflict, codeConflict, "dataset %s already has a policy named %q (%s); change it with PUT", d.Name, pol.Name, e.ID)
			}
		}
	}
	if err != nil {
		return err
	}
	s.forgetRails(d.ID)
	writeJSON(w, http.StatusCreated, toPolicyJSON(saved))
	return nil
}

// updatePolicy changes a policy's name, source and/or mode.
func (s *Server) updatePolicy(w http.ResponseWriter, r *http.Request, p *principal) error {
	d, err := s.writableDataset(r, p, r.PathValue("id"))
	if err != nil {
		return err
	}
	pol, err := s.datasetPolicy(r, d)
	if err != nil {
		return err
	}
	if _, err := decodeBody(r, map[string]member{
		"name":   str(&pol.Name, "name"),
		"source": str(&pol.Source, "source"),
		"mode":   policyMode(&pol.Mode),
	}); err != nil {
		return err
	}
	if err := validName("policy name", pol.Name); err != nil {
		return err
	}
	if err := s.savePolicyCheck(r, pol.Name, pol.Source); err != nil {
		return err
	}
	saved, err := s.st.SavePolicy(r.Context(), pol)
	if errors.Is(err, store.ErrConflict) {
		return errorf(http.StatusConflict, codeConflict, "dataset %s already has a policy named %q", d.Name, pol.Name)
	}
	if err != nil {
		return err
	}
	s.forgetRails(d.ID)
	writeJSON(w, http.StatusOK, toPolicyJSON(saved))
	return nil
}

// deletePolicy removes a saved policy. The annotations of its earlier checks
// stay (they are the traces' annotations now).
func (s *Server) deletePolicy(w http.ResponseWriter, r *http.Request, p *principal) error {
	d, err := s.writableDataset(r, p, r.PathValue("id"))
	if err != nil {
		return err
	}
	pol, err := s.datasetPolicy(r, d)
	if err != nil {
		return err
	}
	if err := s.st.DeletePolicy(r.Context(), pol.ID); err != nil {
		return err
	}
	s.forgetRails(d.ID)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// checkResult is one event of a dataset-wide check: the outcome for one
// trace.
type checkResult struct {
	Index   int64            `json:"index"`
	TraceID string           `json:"trace_id"`
	Status  string           `json:"status"` // passed, failed (violations), error
	Errors  []map[string]any `json:"errors"`
	// Truncated: the violations were cut at the cap (checkLimits).
	Truncated bool          `json:"truncated,omitempty"`
	Error     *checkFailure `json:"error,omitempty"`
}

type checkFailure struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Details any    `json:"details,omitempty"`
}

// checkSummary is the final "done" event of a dataset-wide check.
type checkSummary struct {
	NumTraces  int `json:"num_traces"`
	Checked    int `json:"checked"`
	Passed     int `json:"passed"`
	Failed     int `json:"failed"`
	Errored    int `json:"errored"`
	Violations int `json:"violations"`
}

// checkDataset is POST /api/v1/datasets/{id}/policies/{pid}/check: check
// every trace of the dataset with a saved policy, streaming server-sent
// events — first {"metadata": {"num_traces", "policy"}}, then one
// {"index", "trace_id", "status", "errors"} per trace in index order, then
// an event named "done" with the totals (or one named "error" when the check
// cannot go on). Each trace's violations are stored as annotations of source
// "analyzer", one per range (the address), with the message as content and
// extra {"policy_id", "policy_name", "key"}; they replace that policy's
// earlier results on the trace and leave other annotations alone. A trace
// the policy fails on keeps its earlier results. The body may give
// {"parameters": {...}}.
func (s *Server) checkDataset(w http.ResponseWriter, r *http.Request, p *principal) error {
	d, err := s.writableDataset(r, p, r.PathValue("id"))
	if err != nil {
		return err
	}
	if err := s.settleDataset(r.Context(), d.ID); err != nil {
		return err
	}
	saved, err := s.datasetPolicy(r, d)
	if err != nil {
		return err
	}
	var params map[string]any
	if err := requireJSON(r); err != nil {
		return err
	}
	body, err := readBody(r)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(body)) > 0 {
		if err := decodeObject(body, map[string]member{"parameters": parameters(&params)}); err != nil {
			return err
		}
	}
	// The first slot is taken before the stream starts, so that a busy
	// server can still answer 503; later traces wait for theirs.
	release, err := s.checks.Acquire(r.Context())
	if err != nil {
		return err
	}
	defer func() { release() }()
	ctx := r.Context()
	loadCtx, cancel := policy.WithTimeBudget(ctx, checkLimits.Time)
	pol, err := s.parsePolicy(loadCtx, saved.Name, saved.Source)
	cancel()
	if err != nil {
		return err
	}
	var traces []store.TraceSummary
	for cursor := ""; ; {
		page, next, err := s.st.ListTraces(ctx, d.ID, store.Page{Cursor: cursor, Limit: 1000})
		if err != nil {
			return err
		}
		traces = append(traces, page...)
		if next == "" {
			break
		}
		cursor = next
	}

	send := eventStream(w)
	fail := func(err error) error {
		ae := toAPIError(err)
		if ae.Status >= 500 {
			s.log.ErrorContext(ctx, "policy check failed", "dataset", d.ID, "policy", saved.ID, "err", err)
		}
		send("error", map[string]any{"error": checkFailure{ae.Code, ae.Message, ae.Details}})
		return nil
	}
	send("", map[string]any{"metadata": map[string]any{"num_traces": len(traces), "policy": map[string]string{"id": saved.ID, "name": saved.Name}}})
	sum := checkSummary{NumTraces: len(traces)}
	for i, ts := range traces {
		if err := ctx.Err(); err != nil {
			return nil // the client went away
		}
		if i > 0 {
			// Between traces the slot goes back, so that a long dataset
			// check shares the cores with other requests.
			release()
			if release, err = s.checks.Wait(ctx); err != nil {
				release = func() {}
				return nil // the client went away
			}
		}
		res := checkResult{Index: ts.Index, TraceID: ts.ID, Errors: []map[string]any{}}
		st, err := s.st.Trace(ctx, ts.ID)
		if errors.Is(err, store.ErrNotFound) {
			continue // deleted while the check ran
		}
		if err != nil {
			return fail(err)
		}
		out, err := pol.AnalyzeContext(ctx, st.Trace.Events, params)
		if ctx.Err() != nil {
			return nil // the client went away
		}
		sum.Checked++
		if err != nil {
			ae := toAPIError(policyError(err))
			res.Status, res.Error = "error", &checkFailure{ae.Code, ae.Message, ae.Details}
			sum.Errored++
			send("", res)
			continue
		}
		anns := analyzerAnnotations(saved, out.Violations)
		if err := s.st.ReplaceAnnotationsOf(ctx, ts.ID, analyzerSource, policyIDKey, saved.ID, anns); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				continue
			}
			return fail(fmt.Errorf("store the results of policy %s on trace %s: %w", saved.ID, ts.ID, err))
		}
		res.Errors = violationsJSON(out.Violations)
		res.Truncated = out.Truncated
		res.Status = "passed"
		if len(out.Violations) > 0 {
			res.Status = "failed"
			sum.Failed++
			sum.Violations += len(out.Violations)
		} else {
			sum.Passed++
		}
		send("", res)
	}
	send("done", sum)
	return nil
}

// testHookCheckDone, when set by a test, is called as each request's check
// of POST /api/v1/policy/check returns, with its error.
var testHookCheckDone func(error)

// analyzerAnnotations are the annotations of a trace's violations: one per
// range. A violation without ranges (a rule that binds nothing in the trace)
// is about the whole trace; it is attached to the first event, messages.0,
// since an address names a place and the trace itself has none.
func analyzerAnnotations(saved store.Policy, vs []*policy.Violation) []store.Annotation {
	var out []store.Annotation
	for _, v := range vs {
		extra := map[string]any{policyIDKey: saved.ID, "policy_name": saved.Name, "key": v.Key}
		if len(v.Kwargs) > 0 {
			extra["kwargs"] = v.Kwargs
		}
		raw, err := json.Marshal(extra)
		if err != nil { // a kwarg that does not encode: leave the kwargs out
			delete(extra, "kwargs")
			raw, _ = json.Marshal(extra)
		}
		content := v.Text()
		addrs := v.Addresses()
		if len(addrs) == 0 {
			addrs = []string{"messages.0"}
		}
		for _, a := range addrs {
			out = append(out, store.Annotation{Address: a, Content: content, Source: analyzerSource, Extra: raw})
		}
	}
	return out
}

// policyStore is what the policy handlers ask of the store.
type policyStore interface {
	CreatePolicy(ctx context.Context, p store.Policy) (store.Policy, error)
	DeletePolicy(ctx context.Context, id string) error
	ListPolicies(ctx context.Context, datasetID string) ([]store.Policy, error)
	ListTraces(ctx context.Context, datasetID string, page store.Page) (items []store.TraceSummary, next string, err error)
	Policy(ctx context.Context, id string) (store.Policy, error)
	ReplaceAnnotationsOf(ctx context.Context, traceID, source, key, value string, as []store.Annotation) error
	SavePolicy(ctx context.Context, p store.Policy) (store.Policy, error)
	Trace(ctx context.Context, id string) (store.StoredTrace, error)
}
