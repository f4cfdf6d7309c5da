package server

import (
	"encoding/json"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The evaluation endpoints' scenarios live here, run through the same cases
// as every other endpoint; TestEvalScenarios checks that each evaluation
// route has each case that applies to it.
func init() {
	othersTest = append(othersTest, "/scores", "/criteria", "/eval/")
	for _, r := range []string{"GET /api/v1/traces/{id}/scores", "GET /api/v1/datasets/{id}/scores"} {
		takesParams[r] = true
	}
	notApplicable["POST /api/v1/eval/runs/{rid}/cancel"] = map[string]string{
		kBadJSON:  "reads no body",
		kTypes:    "reads no body",
		kTooLarge: "reads no body",
	}
}

func isEvalRoute(route string) bool {
	return strings.Contains(route, "/scores") || strings.Contains(route, "/criteria") || strings.Contains(route, "/eval/")
}

// waitRun polls a run until it leaves the running state.
func waitRun(t *testing.T, f *fixture, user, id string) runJSON {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		var run runJSON
		f.must(200, "GET", "/api/v1/eval/runs/"+id, user, "").json(t, &run)
		if run.State != "running" {
			return run
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s still running: %+v", id, run)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestEvalScenarios(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st storeUnderTest) {
		f := newFixture(t, st, Config{MaxBody: smallLimit})
		f.addUser("alice")
		f.addUser("bob")
		ids := map[string]string{
			"ap":      f.createDataset("alice", "alice-private", false),
			"apub":    f.createDataset("alice", "alice-public", true),
			"bp":      f.createDataset("bob", "bob-private", false),
			"unknown": "00000000-0000-4000-8000-000000000000",
		}
		tr := f.push("alice", `{"dataset": "alice-private", "messages": [[{"role": "user", "content": "what is 6*7?"}, {"role": "assistant", "content": "It is 42."}], [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]], "metadata": [{"reward": 1, "reference": "42"}, {"reward": 0, "reference": "41"}]}`)
		ids["at"], ids["at2"] = tr[0], tr[1]
		ids["atpub"] = f.push("alice", `{"dataset": "alice-public", "messages": [[{"role": "user", "content": "public"}]]}`)[0]
		ids["bt"] = f.push("bob", `{"dataset": "bob-private", "messages": [[{"role": "user", "content": "bob's"}]]}`)[0]
		var sc struct{ ID string }
		f.must(201, "POST", "/api/v1/traces/"+ids["at"]+"/scores", "alice", `{"criterion": "tone", "value": "polite", "address": "messages.1"}`).json(t, &sc)
		ids["ascore"] = sc.ID
		f.must(201, "POST", "/api/v1/traces/"+ids["at"]+"/scores", "alice", `{"criterion": "gone", "value": true}`).json(t, &sc)
		ids["adel"] = sc.ID
		var crit struct{ ID string }
		f.must(201, "POST", "/api/v1/datasets/"+ids["ap"]+"/criteria", "alice", `{"name": "solved", "evaluator": "code", "expr": "metadata.reward == 1", "required": true, "threshold": 0.5}`).json(t, &crit)
		ids["acrit"] = crit.ID
		f.must(201, "POST", "/api/v1/datasets/"+ids["ap"]+"/criteria", "alice", `{"name": "to-delete", "evaluator": "human"}`).json(t, &crit)
		ids["acritdel"] = crit.ID
		var run runJSON
		f.must(201, "POST", "/api/v1/datasets/"+ids["ap"]+"/eval/runs", "alice", `{"name": "first"}`).json(t, &run)
		ids["arun"] = run.ID
		waitRun(t, f, "alice", run.ID)
		f.must(201, "POST", "/api/v1/datasets/"+ids["ap"]+"/eval/runs", "alice", `{"name": "second", "criteria": [{"name": "solved", "evaluator": "code", "compare": "numeric", "reference": "reference"}]}`).json(t, &run)
		ids["arun2"] = run.ID
		waitRun(t, f, "alice", run.ID)
		f.must(201, "POST", "/api/v1/datasets/"+ids["bp"]+"/eval/runs", "bob", `{"criteria": [{"name": "x", "evaluator": "code", "expr": "True"}]}`).json(t, &run)
		ids["brun"] = run.ID
		big := `{"criterion": "` + strings.Repeat("x", smallLimit) + `", "value": true}`

		scenarios := []scenario{
			// GET /api/v1/traces/{id}/scores
			{name: "scores: list", kind: kSuccess, method: "GET", path: "/api/v1/traces/{at}/scores", user: "alice", status: 200,
				want: []string{`"criterion":"tone","value":"polite"`, `"address":"messages\.1"`, `"source":"human","author":"alice"`}},
			{name: "scores: history parameter", kind: kTypes, method: "GET", path: "/api/v1/traces/{at}/scores?history=maybe", user: "alice", status: 400, want: []string{`history`}},
			{name: "scores: without auth", kind: kNoAuth, method: "GET", path: "/api/v1/traces/{at}/scores", user: "", status: 404},
			{name: "scores: another user's", kind: kPrivate, method: "GET", path: "/api/v1/traces/{at}/scores", user: "bob", status: 404},
			{name: "scores: unknown trace", kind: kUnknown, method: "GET", path: "/api/v1/traces/{unknown}/scores", user: "alice", status: 404},
			{name: "scores: public trace", method: "GET", path: "/api/v1/traces/{atpub}/scores", user: "", status: 200, want: []string{`^\{"dataset_id":"{apub}","scores":\[\]\}`}},

			// POST /api/v1/traces/{id}/scores
			{name: "score: create on a character range", kind: kSuccess, method: "POST", path: "/api/v1/traces/{at}/scores", user: "alice",
				body: `{"criterion": "correct", "value": 0.5, "address": "messages[1].content:6-8", "comment": "the number"}`, status: 201,
				want: []string{`"address":"messages\.1\.content:6-8"`, `"value":0\.5`, `"version":1`, `"current":true`}},
			{name: "score: a second one supersedes", method: "POST", path: "/api/v1/traces/{at}/scores", user: "alice",
				body: `{"criterion": "tone", "value": "rude", "address": "messages.1"}`, status: 201, want: []string{`"version":2`}},
			{name: "score: address not in the trace", method: "POST", path: "/api/v1/traces/{at}/scores", user: "alice",
				body: `{"criterion": "tone", "value": true, "address": "messages.7"}`, status: 422, want: []string{`"code":"invalid"`, `address \\"messages\.7\\" is not in trace`, `no such event`}},
			{name: "score: range past the text", method: "POST", path: "/api/v1/traces/{at}/scores", user: "alice",
				body: `{"criterion": "tone", "value": true, "address": "messages.1.content:0-99"}`, status: 422, want: []string{`is not in trace`}},
			{name: "score: span of a flat trace", method: "POST", path: "/api/v1/traces/{at}/scores", user: "alice",
				body: `{"criterion": "tone", "value": true, "address": "spans.s1"}`, status: 422, want: []string{`is not in trace`}},
			{name: "score: malformed address", method: "POST", path: "/api/v1/traces/{at}/scores", user: "alice",
				body: `{"criterion": "tone", "value": true, "address": "messages..x"}`, status: 422, want: []string{`address`}},
			{name: "score: bad JSON", kind: kBadJSON, method: "POST", path: "/api/v1/traces/{at}/scores", user: "alice",
				body: "{\"criterion\": \"x\",\n \"value\": }", status: 400, want: []string{`line 2`}},
			{name: "score: object value", kind: kTypes, method: "POST", path: "/api/v1/traces/{at}/scores", user: "alice",
				body: `{"criterion": "x", "value": {"a": 1}}`, status: 422, want: []string{`\$\.value`, `boolean, a number or a string`}},
			{name: "score: no value", method: "POST", path: "/api/v1/traces/{at}/scores", user: "alice",
				body: `{"criterion": "x"}`, status: 422, want: []string{`needs \\"value\\"`}},
			{name: "score: unknown source", method: "POST", path: "/api/v1/traces/{at}/scores", user: "alice",
				body: `{"criterion": "x", "value": true, "source": "robot"}`, status: 422, want: []string{`human, rule, code, llm`}},
			{name: "score: without auth", kind: kNoAuth, method: "POST", path: "/api/v1/traces/{at}/scores", user: "", body: `{"criterion": "x", "value": true}`, status: 401},
			{name: "score: another user's trace", kind: kPrivate, method: "POST", path: "/api/v1/traces/{at}/scores", user: "bob", body: `{"criterion": "x", "value": true}`, status: 404},
			{name: "score: too large", kind: kTooLarge, method: "POST", path: "/api/v1/traces/{at}/scores", user: "alice", body: big, status: 413},
			{name: "score: unknown trace", kind: kUnknown, method: "POST", path: "/api/v1/traces/{unknown}/scores", user: "alice", body: `{"criterion": "x", "value": true}`, status: 404},
			{name: "scores: history", method: "GET", path: "/api/v1/traces/{at}/scores?history=true&criterion=tone", user: "alice", status: 200,
				want: []string{`"value":"polite".*"version":1,"current":false.*"value":"rude".*"version":2,"current":true`}},

			// DELETE /api/v1/traces/{id}/scores/{sid}
			{name: "score: delete without auth", kind: kNoAuth, method: "DELETE", path: "/api/v1/traces/{at}/scores/{adel}", user: "", status: 401},
			{name: "score: delete another user's", kind: kPrivate, method: "DELETE", path: "/api/v1/traces/{at}/scores/{adel}", user: "bob", status: 404},
			{name: "score: delete unknown", kind: kUnknown, method: "DELETE", path: "/api/v1/traces/{at}/scores/{unknown}", user: "alice", status: 404},
			{name: "score: delete through another trace", method: "DELETE", path: "/api/v1/traces/{at2}/scores/{adel}", user: "alice", status: 404},
			{name: "score: delete", kind: kSuccess, method: "DELETE", path: "/api/v1/traces/{at}/scores/{adel}", user: "alice", status: 204},
			{name: "score: deleted is gone", method: "GET", path: "/api/v1/traces/{at}/scores?criterion=gone", user: "alice", status: 200, want: []string{`^\{"dataset_id":"{ap}","scores":\[\]\}`}},

			// GET /api/v1/datasets/{id}/scores
			{name: "dataset scores: by criterion", kind: kSuccess, method: "GET", path: "/api/v1/datasets/{ap}/scores?criterion=solved&history=true", user: "alice", status: 200,
				want: []string{`"trace_id":"{at}","address":"","criterion":"solved","value":true,"source":"code","run_id":"{arun}","version":1,"current":false`,
					`"trace_id":"{at}","address":"","criterion":"solved","value":true,"source":"code","run_id":"{arun2}","version":2,"current":true`}},
			{name: "dataset scores: bad parameter", kind: kTypes, method: "GET", path: "/api/v1/datasets/{ap}/scores?history=2", user: "alice", status: 400},
			{name: "dataset scores: without auth", kind: kNoAuth, method: "GET", path: "/api/v1/datasets/{ap}/scores", user: "", status: 404},
			{name: "dataset scores: another user's", kind: kPrivate, method: "GET", path: "/api/v1/datasets/{ap}/scores", user: "bob", status: 404},
			{name: "dataset scores: unknown", kind: kUnknown, method: "GET", path: "/api/v1/datasets/{unknown}/scores", user: "alice", status: 404},

			// criteria
			{name: "criteria: list", kind: kSuccess, method: "GET", path: "/api/v1/datasets/{ap}/criteria", user: "alice", status: 200,
				want: []string{`"name":"solved","definition":\{"name":"solved","evaluator":"code","type":"bool","target":"trace","expr":"metadata.reward == 1","required":true,"threshold":0.5\}`}},
			{name: "criteria: without auth", kind: kNoAuth, method: "GET", path: "/api/v1/datasets/{ap}/criteria", user: "", status: 404},
			{name: "criteria: another user's", kind: kPrivate, method: "GET", path: "/api/v1/datasets/{ap}/criteria", user: "bob", status: 404},
			{name: "criteria: unknown", kind: kUnknown, method: "GET", path: "/api/v1/datasets/{unknown}/criteria", user: "alice", status: 404},
			{name: "criterion: save a rule", kind: kSuccess, method: "POST", path: "/api/v1/datasets/{ap}/criteria", user: "alice",
				body: `{"name": "no-cancel", "evaluator": "rule", "policy": "raise \"cancel\" if:\n    (call: ToolCall)\n    call is tool:cancel_reservation\n"}`, status: 201, want: []string{`"name":"no-cancel"`}},
			{name: "criterion: a policy that does not load", method: "POST", path: "/api/v1/datasets/{ap}/criteria", user: "alice",
				body: `{"name": "bad", "evaluator": "rule", "policy": "raise if"}`, status: 422, want: []string{`invalid criteria`, `policy`}},
			{name: "criterion: a bad expression names the column", method: "POST", path: "/api/v1/datasets/{ap}/criteria", user: "alice",
				body: `{"name": "bad", "evaluator": "code", "expr": "metadata.reward == "}`, status: 422, want: []string{`expr: column 20: the expression ends too soon`}},
			{name: "criterion: unknown evaluator", method: "POST", path: "/api/v1/datasets/{ap}/criteria", user: "alice",
				body: `{"name": "bad", "evaluator": "oracle"}`, status: 422, want: []string{`human, rule, code or llm`}},
			{name: "criterion: unknown target", method: "POST", path: "/api/v1/datasets/{ap}/criteria", user: "alice",
				body: `{"name": "bad", "evaluator": "human", "target": "everything"}`, status: 422, want: []string{`step:<KIND>`}},
			{name: "criterion: bad JSON", kind: kBadJSON, method: "POST", path: "/api/v1/datasets/{ap}/criteria", user: "alice", body: `{"name": `, status: 400, want: []string{`line 1`}},
			{name: "criterion: wrong types", kind: kTypes, method: "POST", path: "/api/v1/datasets/{ap}/criteria", user: "alice", body: `{"name": 5, "evaluator": "human"}`, status: 422, want: []string{`name`}},
			{name: "criterion: a list", method: "POST", path: "/api/v1/datasets/{ap}/criteria", user: "alice", body: `[]`, status: 422, want: []string{`must be an object`}},
			{name: "criterion: without auth", kind: kNoAuth, method: "POST", path: "/api/v1/datasets/{ap}/criteria", user: "", body: `{"name": "x", "evaluator": "human"}`, status: 401},
			{name: "criterion: another user's", kind: kPrivate, method: "POST", path: "/api/v1/datasets/{ap}/criteria", user: "bob", body: `{"name": "x", "evaluator": "human"}`, status: 404},
			{name: "criterion: too large", kind: kTooLarge, method: "POST", path: "/api/v1/datasets/{ap}/criteria", user: "alice", body: big, status: 413},
			{name: "criterion: unknown dataset", kind: kUnknown, method: "POST", path: "/api/v1/datasets/{unknown}/criteria", user: "alice", body: `{"name": "x", "evaluator": "human"}`, status: 404},
			{name: "criterion: delete without auth", kind: kNoAuth, method: "DELETE", path: "/api/v1/datasets/{ap}/criteria/{acritdel}", user: "", status: 401},
			{name: "criterion: delete another user's", kind: kPrivate, method: "DELETE", path: "/api/v1/datasets/{ap}/criteria/{acritdel}", user: "bob", status: 404},
			{name: "criterion: delete unknown", kind: kUnknown, method: "DELETE", path: "/api/v1/datasets/{ap}/criteria/{unknown}", user: "alice", status: 404},
			{name: "criterion: delete", kind: kSuccess, method: "DELETE", path: "/api/v1/datasets/{ap}/criteria/{acritdel}", user: "alice", status: 204},

			// status
			{name: "status: per trace and criterion", kind: kSuccess, method: "GET", path: "/api/v1/datasets/{ap}/eval/status", user: "alice", status: 200,
				want: []string{`"{at}":\{"solved":"evaluated"\}`, `"{at2}":\{"solved":"evaluated"\}`, `"running":\[\]`}},
			{name: "status: without auth", kind: kNoAuth, method: "GET", path: "/api/v1/datasets/{ap}/eval/status", user: "", status: 404},
			{name: "status: another user's", kind: kPrivate, method: "GET", path: "/api/v1/datasets/{ap}/eval/status", user: "bob", status: 404},
			{name: "status: unknown", kind: kUnknown, method: "GET", path: "/api/v1/datasets/{unknown}/eval/status", user: "alice", status: 404},

			// runs
			{name: "run: start with criteria", kind: kSuccess, method: "POST", path: "/api/v1/datasets/{ap}/eval/runs", user: "alice",
				body: `{"criteria": [{"name": "short", "evaluator": "code", "expr": "len(messages) <= 2"}]}`, status: 201, want: []string{`"state":"running"`, `"total":2`}},
			{name: "run: bad criteria", method: "POST", path: "/api/v1/datasets/{ap}/eval/runs", user: "alice",
				body: `{"criteria": [{"name": "x", "evaluator": "code"}]}`, status: 422, want: []string{`expr or compare`}},
			{name: "run: llm without an endpoint", method: "POST", path: "/api/v1/datasets/{ap}/eval/runs", user: "alice",
				body: `{"criteria": [{"name": "x", "evaluator": "llm", "prompt": "ok?"}]}`, status: 422, want: []string{`no LLM endpoint`}},
			{name: "run: no saved criteria", method: "POST", path: "/api/v1/datasets/{apub}/eval/runs", user: "alice", body: `{}`, status: 422, want: []string{`no saved criteria`}},
			{name: "run: bad JSON", kind: kBadJSON, method: "POST", path: "/api/v1/datasets/{ap}/eval/runs", user: "alice", body: `{"criteria": [`, status: 400, want: []string{`line 1`}},
			{name: "run: criteria of the wrong type", kind: kTypes, method: "POST", path: "/api/v1/datasets/{ap}/eval/runs", user: "alice", body: `{"criteria": {}}`, status: 422, want: []string{`\$\.criteria`}},
			{name: "run: without auth", kind: kNoAuth, method: "POST", path: "/api/v1/datasets/{ap}/eval/runs", user: "", body: `{}`, status: 401},
			{name: "run: another user's", kind: kPrivate, method: "POST", path: "/api/v1/datasets/{ap}/eval/runs", user: "bob", body: `{}`, status: 404},
			{name: "run: too large", kind: kTooLarge, method: "POST", path: "/api/v1/datasets/{ap}/eval/runs", user: "alice", body: `{"name": "` + strings.Repeat("x", smallLimit) + `"}`, status: 413},
			{name: "run: unknown dataset", kind: kUnknown, method: "POST", path: "/api/v1/datasets/{unknown}/eval/runs", user: "alice", body: `{}`, status: 404},
			{name: "runs: list", kind: kSuccess, method: "GET", path: "/api/v1/datasets/{ap}/eval/runs", user: "alice", status: 200, want: []string{`"name":"second".*"name":"first"`}},
			{name: "runs: without auth", kind: kNoAuth, method: "GET", path: "/api/v1/datasets/{ap}/eval/runs", user: "", status: 404},
			{name: "runs: another user's", kind: kPrivate, method: "GET", path: "/api/v1/datasets/{ap}/eval/runs", user: "bob", status: 404},
			{name: "runs: unknown", kind: kUnknown, method: "GET", path: "/api/v1/datasets/{unknown}/eval/runs", user: "alice", status: 404},
			{name: "run: get with its summary", kind: kSuccess, method: "GET", path: "/api/v1/eval/runs/{arun}", user: "alice", status: 200,
				want: []string{`"state":"done"`, `"progress":\{"done":2,"total":2,"errors":0\}`, `"criterion":"solved","type":"bool","scores":2,"passed":1,"failed":1,"errors":0,"rate":0\.5`, `"required":true,"threshold":0\.5,"ok":true`}},
			{name: "run: without auth", kind: kNoAuth, method: "GET", path: "/api/v1/eval/runs/{arun}", user: "", status: 404},
			{name: "run: another user's", kind: kPrivate, method: "GET", path: "/api/v1/eval/runs/{arun}", user: "bob", status: 404},
			{name: "run: unknown", kind: kUnknown, method: "GET", path: "/api/v1/eval/runs/{unknown}", user: "alice", status: 404},
			{name: "run events: a finished run", kind: kSuccess, method: "GET", path: "/api/v1/eval/runs/{arun}/events", user: "alice", status: 200,
				want: []string{`^event: done\ndata: \{"id":"{arun}".*"state":"done"`}},
			{name: "run events: without auth", kind: kNoAuth, method: "GET", path: "/api/v1/eval/runs/{arun}/events", user: "", status: 404},
			{name: "run events: another user's", kind: kPrivate, method: "GET", path: "/api/v1/eval/runs/{arun}/events", user: "bob", status: 404},
			{name: "run events: unknown", kind: kUnknown, method: "GET", path: "/api/v1/eval/runs/{unknown}/events", user: "alice", status: 404},
			{name: "run: cancel a finished run", kind: kSuccess, method: "POST", path: "/api/v1/eval/runs/{arun}/cancel", user: "alice", status: 200, want: []string{`"state":"done"`}},
			{name: "run: cancel without auth", kind: kNoAuth, method: "POST", path: "/api/v1/eval/runs/{arun}/cancel", user: "", status: 401},
			{name: "run: cancel another user's", kind: kPrivate, method: "POST", path: "/api/v1/eval/runs/{arun}/cancel", user: "bob", status: 404},
			{name: "run: cancel unknown", kind: kUnknown, method: "POST", path: "/api/v1/eval/runs/{unknown}/cancel", user: "alice", status: 404},
			{name: "runs: compare", kind: kSuccess, method: "GET", path: "/api/v1/eval/runs/{arun}/compare/{arun2}", user: "alice", status: 200,
				want: []string{`"changes":\[\{"trace_id":"{at2}","criterion":"solved","address":"","before":false,"after":false\}\]|"changes":\[\]`}},
			{name: "runs: compare without auth", kind: kNoAuth, method: "GET", path: "/api/v1/eval/runs/{arun}/compare/{arun2}", user: "", status: 404},
			{name: "runs: compare another user's", kind: kPrivate, method: "GET", path: "/api/v1/eval/runs/{arun}/compare/{arun2}", user: "bob", status: 404},
			{name: "runs: compare unknown", kind: kUnknown, method: "GET", path: "/api/v1/eval/runs/{arun}/compare/{unknown}", user: "alice", status: 404},
			{name: "runs: compare across datasets", method: "GET", path: "/api/v1/eval/runs/{arun}/compare/{brun}", user: "alice", status: 404},
		}
		pairs := []string{}
		for k, v := range ids {
			pairs = append(pairs, "{"+k+"}", v)
		}
		expand := strings.NewReplacer(pairs...)
		checkAreaCoverage(t, f.srv, scenarios, expand, isEvalRoute, 14)
		runScenarios(t, f, scenarios, expand)
		f.srv.StopRuns()
	})
}

// checkAreaCoverage fails unless every route of an area (isArea) has every
// case that applies to it, and the area has want routes.
func checkAreaCoverage(t *testing.T, srv *Server, scenarios []scenario, expand *strings.Replacer, isArea func(string) bool, want int) {
	t.Helper()
	covered := map[string]map[string]bool{}
	for _, sc := range scenarios {
		_, route := srv.mux.Handler(httptestRequest(sc.method, expand.Replace(sc.path)))
		if !isArea(route) {
			t.Errorf("scenario %q reaches %q, a route of another area", sc.name, route)
		}
		if sc.kind == "" {
			continue
		}
		if !applies(route, sc.kind) {
			t.Errorf("scenario %q is a %q case, which does not apply to %s", sc.name, sc.kind, route)
		}
		if covered[route] == nil {
			covered[route] = map[string]bool{}
		}
		covered[route][sc.kind] = true
	}
	n := 0
	for _, route := range srv.patterns {
		if !isArea(route) {
			continue
		}
		n++
		for _, k := range kinds {
			if applies(route, k) && !covered[route][k] {
				t.Errorf("%s has no %q scenario", route, k)
			}
		}
	}
	if n != want {
		t.Errorf("%d routes of the area registered, want %d", n, want)
	}
}

// runScenarios runs scenarios against f, each as a subtest.
func runScenarios(t *testing.T, f *fixture, scenarios []scenario, expand *strings.Replacer) {
	t.Helper()
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			var body io.Reader
			if sc.body != "" {
				body = strings.NewReader(sc.body)
			}
			r := f.do(sc.method, expand.Replace(sc.path), sc.user, body, "Content-Type", "application/json")
			if r.status != sc.status {
				t.Fatalf("status %d, want %d\n%s", r.status, sc.status, r.body)
			}
			if ct := r.header.Get("Content-Type"); ct == "text/event-stream" {
				r.header.Set("Content-Type", "application/x-event-stream-checked")
			}
			checkHeaders(t, r)
			for _, re := range sc.want {
				if !regexp.MustCompile(expand.Replace(re)).Match(r.body) {
					t.Errorf("body does not match %s:\n%s", expand.Replace(re), r.body)
				}
			}
			for _, re := range sc.absent {
				if regexp.MustCompile(expand.Replace(re)).Match(r.body) {
					t.Errorf("body matches %s, which it must not:\n%s", expand.Replace(re), r.body)
				}
			}
			checkKind(t, sc, r)
		})
	}
}

var _ = json.Marshal
