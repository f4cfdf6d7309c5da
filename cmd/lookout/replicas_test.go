package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lookout-dev/lookout/client"
	"github.com/lookout-dev/lookout/internal/chat/chattest"
	"github.com/lookout-dev/lookout/internal/store/postgres/pgtest"
)

// roundRobin is a reverse proxy that sends each request to the next of
// the replicas, as a load balancer without affinity does.
func roundRobin(t *testing.T, replicas []*child) *httptest.Server {
	t.Helper()
	var proxies []*httputil.ReverseProxy
	for _, r := range replicas {
		u, err := url.Parse(r.url)
		if err != nil {
			t.Fatal(err)
		}
		proxies = append(proxies, httputil.NewSingleHostReverseProxy(u))
	}
	var next atomic.Uint64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxies[(next.Add(1)-1)%uint64(len(proxies))].ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts
}

// startReplicas starts n `lookout serve` on db at once, so that they
// migrate its schema together.
func startReplicas(t *testing.T, db string, n int, args ...string) []*child {
	t.Helper()
	out := make([]*child, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { out[i], errs[i] = startChildErr(t, db, args...) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// otlpSpan is a span of an OTLP/HTTP JSON request.
type otlpSpan struct {
	trace, id, parent, name string
	start                   int64
	attrs                   map[string]string
}

func otlpBody(spans ...otlpSpan) []byte {
	var js []map[string]any
	for _, s := range spans {
		var attrs []map[string]any
		for k, v := range s.attrs {
			attrs = append(attrs, map[string]any{"key": k, "value": map[string]any{"stringValue": v}})
		}
		sp := map[string]any{"traceId": s.trace, "spanId": s.id, "name": s.name, "kind": 1,
			"startTimeUnixNano": fmt.Sprint(s.start), "endTimeUnixNano": fmt.Sprint(s.start + 1e6), "attributes": attrs}
		if s.parent != "" {
			sp["parentSpanId"] = s.parent
		}
		js = append(js, sp)
	}
	b, _ := json.Marshal(map[string]any{"resourceSpans": []any{map[string]any{
		"resource":   map[string]any{"attributes": []any{map[string]any{"key": "service.name", "value": map[string]any{"stringValue": "agent"}}}},
		"scopeSpans": []any{map[string]any{"scope": map[string]any{"name": "test"}, "spans": js}},
	}}})
	return b
}

// TestReplicas runs three `lookout serve` replicas on one PostgreSQL
// database behind a round-robin proxy (issue 22): started together, they
// migrate once; concurrent pushes through the proxy are each stored once;
// an OpenTelemetry trace whose spans reach different replicas is built
// into one trace holding them all; every replica's searches equal a test
// of every trace.
func TestReplicas(t *testing.T) {
	db := pgtest.URL(t)
	replicas := startReplicas(t, db, 3)
	proxy := roundRobin(t, replicas)
	ctx := context.Background()
	c, err := client.New(proxy.URL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateDataset(ctx, "shared", false, nil); err != nil {
		t.Fatal(err)
	}

	// Pushes from four clients, each request to the next replica.
	const pushers, batches, perBatch = 4, 6, 20
	var mu sync.Mutex
	want := map[string]string{} // trace id → its text
	var wg sync.WaitGroup
	for g := range pushers {
		wg.Go(func() {
			for b := range batches {
				var traces []json.RawMessage
				var texts []string
				for i := range perBatch {
					text := fmt.Sprintf("pusher%d batch%d item%d zq%dx%dx%d", g, b, i, g, b, i)
					texts = append(texts, text)
					traces = append(traces, json.RawMessage(fmt.Sprintf(`{"events":[{"role":"user","content":%q}]}`, text)))
				}
				ids, err := c.PushTraces(ctx, "shared", traces)
				if err != nil {
					t.Errorf("push %d/%d: %v", g, b, err)
					return
				}
				mu.Lock()
				for i, id := range ids {
					want[id] = texts[i]
				}
				mu.Unlock()
			}
		})
	}

	// An OpenTelemetry trace in three requests, each to another replica
	// (directly, not through the proxy), the root last.
	const otelTrace = "5b8efff798038103d269b633813fc60c"
	parts := [][]otlpSpan{
		{{otelTrace, "a000000000000001", "f000000000000000", "chat gpt-4o", 1_100_000_000, map[string]string{
			"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
			"gen_ai.input.messages": `[{"role":"user","parts":[{"type":"text","content":"replicated question zqotel"}]}]`}}},
		{{otelTrace, "a000000000000002", "f000000000000000", "execute_tool lookup", 1_200_000_000, map[string]string{
			"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup", "gen_ai.tool.call.id": "call_1",
			"gen_ai.tool.call.result": "found it"}}},
		{{otelTrace, "f000000000000000", "", "invoke_agent replicated", 1_000_000_000, map[string]string{
			"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "replicated"}}},
	}
	for i, p := range parts {
		req, _ := http.NewRequest("POST", replicas[i].url+"/v1/traces", bytes.NewReader(otlpBody(p...)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Lookout-Dataset", "shared")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("OTLP part %d to replica %d: %d %s", i, i, resp.StatusCode, body)
		}
	}
	wg.Wait()
	if t.Failed() {
		return
	}

	d, err := c.FindDataset(ctx, "shared")
	if err != nil {
		t.Fatal(err)
	}
	// Every acknowledged trace once, and one trace built from the spans
	// (its builder may be any replica, a moment after the answers).
	var got map[string]int
	var otel []string
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, otel = listed(t, c, d.ID), nil
		for id := range got {
			if _, pushed := want[id]; !pushed {
				otel = append(otel, id)
			}
		}
		if len(otel) == 1 && spansOf(t, proxy.URL, otel[0]) == 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	for id := range want {
		if got[id] != 1 {
			t.Errorf("pushed trace %s listed %d times", id, got[id])
		}
	}
	if len(got) != len(want)+1 || len(otel) != 1 {
		t.Fatalf("listed %d traces (%d besides the pushed ones), want %d pushed and one built from spans", len(got), len(otel), len(want))
	}
	if n := spansOf(t, proxy.URL, otel[0]); n != 3 {
		t.Errorf("the trace built from spans sent to three replicas has %d spans, want 3", n)
	}

	// Each replica's searches find what a test of every trace finds.
	texts := map[string]string{otel[0]: "replicated question zqotel"}
	for id, text := range want {
		texts[id] = text
	}
	for _, word := range []string{"zq1x2x3", "batch5", "pusher3 batch0", "item19", "zqotel", "nothing here"} {
		brute := bruteSearch(texts, word)
		for i, r := range replicas {
			if found := searched(t, r.url, word, "shared"); !slices.Equal(found, brute) {
				t.Errorf("replica %d, search %q: %d traces, want %d", i, word, len(found), len(brute))
			}
		}
	}
}

// bruteSearch is the ids of the texts (trace id → its text) that hold
// word, sorted: what a search must find.
func bruteSearch(texts map[string]string, word string) []string {
	var ids []string
	for id, text := range texts {
		if strings.Contains(text, word) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// searched is the ids of the traces a search for word finds in the named
// datasets through base, every page, sorted.
func searched(t *testing.T, base, word string, datasets ...string) []string {
	t.Helper()
	ctx := context.Background()
	c, err := client.New(base)
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, name := range datasets {
		d, err := c.FindDataset(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		for cursor := ""; ; {
			p, err := c.Search(ctx, d.ID, word, cursor, 500)
			if err != nil {
				t.Fatalf("%s, search %q: %v", base, word, err)
			}
			for _, tr := range p.Traces {
				found = append(found, tr.ID)
			}
			if cursor = p.Next; cursor == "" {
				break
			}
		}
	}
	slices.Sort(found)
	return found
}

// TestReplicasLive: a page following a trace on one replica hears, within
// a second, of events appended and annotations written through others
// (issue 22: PostgreSQL's NOTIFY between the servers).
func TestReplicasLive(t *testing.T) {
	replicas := startReplicas(t, pgtest.URL(t), 3)
	ctx := context.Background()
	c, err := client.New(replicas[1].url)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := c.PushTraces(ctx, "live", []json.RawMessage{json.RawMessage(`{"events":[{"role":"user","content":"hello"}]}`)})
	if err != nil {
		t.Fatal(err)
	}
	id := ids[0]
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", replicas[0].url+"/api/v1/traces/"+id+"/live", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if ev, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
				events <- ev
			}
		}
		close(events)
	}()
	expect := func(what string) {
		t.Helper()
		select {
		case ev, ok := <-events:
			if !ok || ev != what {
				t.Fatalf("the live stream on replica 0 gave %q (open %v), want %q", ev, ok, what)
			}
		case <-time.After(time.Second):
			t.Fatalf("the live stream on replica 0 gave no %q within 1 s", what)
		}
	}
	expect("ready")
	post := func(replica int, path, body string) {
		t.Helper()
		resp, err := http.Post(replicas[replica].url+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode >= 300 {
			t.Fatalf("POST %s to replica %d: %d %s", path, replica, resp.StatusCode, b)
		}
	}
	post(1, "/api/v1/traces/"+id+"/events", `[{"role":"assistant","content":"appended through replica 1"}]`)
	expect("changed")
	post(2, "/api/v1/traces/"+id+"/annotations", `{"address":"messages.0.content","content":"noted through replica 2"}`)
	expect("changed")
	select {
	case ev := <-events:
		t.Errorf("an extra %q event", ev)
	case <-time.After(300 * time.Millisecond):
	}
}

// TestReplicasKeyRevoked: a key revoked through one replica stops working
// on the others as soon as they hear of it, not when their key caches
// would forget it (issue 22). Each replica has just let the key in, and
// keeps keys seen for a minute here (a second by default).
func TestReplicasKeyRevoked(t *testing.T) {
	db := pgtest.URL(t)
	if code, out, errOut := runCLI(t, "correct horse battery\n", "user", "create", "--db", db, "ana"); code != 0 {
		t.Fatalf("user create: %d %s %s", code, out, errOut)
	}
	keys := map[string]string{}
	for _, name := range []string{"admin", "victim"} {
		code, out, errOut := runCLI(t, "", "key", "create", "--db", db, "--user", "ana", "--name", name)
		if code != 0 {
			t.Fatalf("key create: %d %s", code, errOut)
		}
		keys[name] = strings.TrimSpace(out)
	}
	replicas := startReplicas(t, db, 3, "--key-cache-ttl", "1m")
	ctx := context.Background()
	status := func(replica int, key string) int {
		req, _ := http.NewRequest("GET", replicas[replica].url+"/api/v1/datasets", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	admin, err := client.New(replicas[0].url, client.WithAPIKey(keys["admin"]))
	if err != nil {
		t.Fatal(err)
	}
	list, err := admin.Keys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var victim string
	for _, k := range list {
		if k.Name == "victim" {
			victim = k.ID
		}
	}
	for i := range replicas {
		if got := status(i, keys["victim"]); got != 200 {
			t.Fatalf("replica %d with the key: %d", i, got)
		}
	}
	if err := admin.RevokeKey(ctx, victim); err != nil {
		t.Fatal(err)
	}
	revoked := time.Now()
	for _, i := range []int{1, 2} {
		for status(i, keys["victim"]) != 401 {
			if time.Since(revoked) > 10*time.Second {
				t.Fatalf("replica %d still lets the revoked key in %v after its revocation", i, time.Since(revoked))
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	t.Logf("the other replicas refused the key %v after its revocation", time.Since(revoked))
}

// TestReplicasLoginLimit: failed logins are limited across the replicas,
// not per replica: guesses sent to replicas 1 and 2 only make replica 0,
// which saw none itself, refuse the next attempt (429), even with the right
// password (issue 22). Alone, replica 0 would let it in every time.
func TestReplicasLoginLimit(t *testing.T) {
	db := pgtest.URL(t)
	if code, out, errOut := runCLI(t, "correct horse battery\n", "user", "create", "--db", db, "ana"); code != 0 {
		t.Fatalf("user create: %d %s %s", code, out, errOut)
	}
	replicas := startReplicas(t, db, 3)
	login := func(replica int, password string) int {
		resp, err := http.Post(replicas[replica].url+"/api/v1/login", "application/json",
			strings.NewReader(fmt.Sprintf(`{"name":"ana","password":%q}`, password)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	// The burst from one address is 10 failures; each refills in 6 s, so
	// on a slow host a few more guesses may be needed.
	for guess := 0; ; guess++ {
		if got := login(1+guess%2, "wrong"); got != 401 && got != 429 {
			t.Fatalf("guess %d on replica %d: %d, want 401 or 429", guess, 1+guess%2, got)
		}
		switch got := login(0, "correct horse battery"); {
		case got == 429:
			return
		case got != 200:
			t.Fatalf("the right password on replica 0 after %d guesses elsewhere: %d", guess+1, got)
		case guess == 40:
			t.Fatalf("replica 0 still lets the right password in after %d guesses on the other replicas", guess+1)
		}
	}
}

// TestReplicasNoBackground: a server started with --no-background accepts
// spans but builds no trace from them; another server on the database
// builds it; the first's searches still find it (issue 22).
func TestReplicasNoBackground(t *testing.T) {
	db := pgtest.URL(t)
	quiet, err := startChildErr(t, db, "--no-background")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c, err := client.New(quiet.url)
	if err != nil {
		t.Fatal(err)
	}
	d, err := c.CreateDataset(ctx, "spans", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	const otelTrace = "6c9efff798038103d269b633813fc60c"
	req, _ := http.NewRequest("POST", quiet.url+"/v1/traces", bytes.NewReader(otlpBody(otlpSpan{otelTrace, "f000000000000001", "", "invoke_agent quiet", 1_000_000_000,
		map[string]string{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "zqquietagent"}})))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Lookout-Dataset", "spans")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("OTLP: %d", resp.StatusCode)
	}
	// Reads build their dataset's pending traces themselves (settle), so
	// the backlog tells who built it.
	pending := func() int {
		resp, err := http.Get(quiet.url + "/api/v1/backlog")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var bl struct {
			Spans struct {
				PendingTraces int `json:"pending_traces"`
			}
		}
		if err := json.NewDecoder(resp.Body).Decode(&bl); err != nil {
			t.Fatal(err)
		}
		return bl.Spans.PendingTraces
	}
	// A server that builds takes well under a second (bench/peers); this
	// one leaves it.
	time.Sleep(2 * time.Second)
	if n := pending(); n != 1 {
		t.Fatalf("2 s after the spans, the --no-background server's backlog holds %d traces to build, want 1", n)
	}
	if _, err := startChildErr(t, db); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for pending() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the other server did not build the trace in 20 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if p, err := c.Traces(ctx, d.ID, "", 10); err != nil || len(p.Traces) != 1 {
		t.Fatalf("traces after the build: %v, %v", p, err)
	}
	p, err := c.Search(ctx, d.ID, "zqquietagent", "", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Traces) != 1 {
		t.Errorf("the --no-background server's search found %d traces, want 1", len(p.Traces))
	}
}

// TestReplicasEvalRun: an evaluation run started through one replica is
// followed to its end from another (its progress read from the store), and
// one cancelled through a third stops on the replica that works on it,
// which records it cancelled, not done (issue 22).
func TestReplicasEvalRun(t *testing.T) {
	judge := chattest.New(t, func(*chattest.Request) chattest.Reply {
		time.Sleep(100 * time.Millisecond) // a judge that takes its time
		return chattest.Reply{Content: "PASS\nfine"}
	})
	db := pgtest.URL(t)
	args := []string{"--llm-url", judge.URL, "--run-lease", "1s"}
	replicas := startReplicas(t, db, 3, args...)
	ctx := context.Background()
	clients := make([]*client.Client, len(replicas))
	for i, r := range replicas {
		var err error
		if clients[i], err = client.New(r.url); err != nil {
			t.Fatal(err)
		}
	}
	var traces []json.RawMessage
	for i := range 60 {
		traces = append(traces, json.RawMessage(fmt.Sprintf(`{"events":[{"role":"user","content":"question %d"},{"role":"assistant","content":"answer %d"}]}`, i, i)))
	}
	if _, err := clients[0].PushTraces(ctx, "graded", traces); err != nil {
		t.Fatal(err)
	}
	d, err := clients[0].FindDataset(ctx, "graded")
	if err != nil {
		t.Fatal(err)
	}
	criteria := json.RawMessage(`[{"name": "fine", "evaluator": "llm", "prompt": "Is the answer fine?"}]`)

	// Followed through replica 1 to its end.
	run, err := clients[0].StartEvalRun(ctx, d.ID, "first", criteria)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(replicas[1].url + "/api/v1/eval/runs/" + run.ID + "/events")
	if err != nil {
		t.Fatal(err)
	}
	progress, last := 0, ""
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	event := ""
	for sc.Scan() {
		line := sc.Text()
		if ev, ok := strings.CutPrefix(line, "event: "); ok {
			event = ev
		} else if data, ok := strings.CutPrefix(line, "data: "); ok {
			if event == "" {
				progress++
			} else if event == "done" {
				last = data
				break
			}
			event = ""
		}
	}
	resp.Body.Close()
	var done struct {
		State    string
		Progress client.EvalProgress
	}
	if err := json.Unmarshal([]byte(last), &done); err != nil {
		t.Fatalf("the done event %q: %v", last, err)
	}
	if done.State != "done" || done.Progress.Done != 60 || progress == 0 {
		t.Fatalf("followed through replica 1: %d progress events, then done with state %q and %d of 60 traces; want progress, then done with 60",
			progress, done.State, done.Progress.Done)
	}

	// Cancelled through replica 2 while replica 0 works on it.
	run, err = clients[0].StartEvalRun(ctx, d.ID, "second", criteria)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second) // generous: CI runs packages side by side
	for {
		r, err := clients[2].EvalRun(ctx, run.ID)
		if err != nil {
			t.Fatal(err)
		}
		if r.Progress.Done > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the second run made no progress in 60 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if r, err := clients[2].CancelEvalRun(ctx, run.ID); err != nil || r.State != "cancelled" {
		t.Fatalf("cancel through replica 2: %+v, %v", r, err)
	}
	// The worker stops within a check and a batch: the judge hears no
	// more, and the run stays cancelled.
	var calls int
	for stable := 0; stable < 10; {
		time.Sleep(200 * time.Millisecond)
		if n := judge.Count(); n == calls {
			stable++
		} else {
			calls, stable = n, 0
		}
		if time.Now().After(deadline) {
			t.Fatal("the judge was still asked 60 s after the second run's start")
		}
	}
	r, err := clients[1].EvalRun(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if r.State != "cancelled" || r.Progress.Done >= 60 {
		t.Errorf("the cancelled run: state %q, %d of 60 traces graded; want cancelled, part of them", r.State, r.Progress.Done)
	}

	// Replica 0 is killed while it works on a third run and started
	// again: another replica takes the run when its lease (1 s) expires
	// and ends it; each trace is graded once, and the judge is asked again
	// only for the traces the killed worker had not stored.
	if _, err := clients[1].PushTraces(ctx, "killed", traces); err != nil {
		t.Fatal(err)
	}
	d, err = clients[1].FindDataset(ctx, "killed")
	if err != nil {
		t.Fatal(err)
	}
	before := judge.Count()
	run, err = clients[0].StartEvalRun(ctx, d.ID, "third", criteria)
	if err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(60 * time.Second)
	for {
		r, err := clients[1].EvalRun(ctx, run.ID)
		if err != nil {
			t.Fatal(err)
		}
		if r.Progress.Done > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the third run made no progress in 60 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	replicas[0].kill(t)
	killedAt := time.Now()
	replicas[0] = startChild(t, db, args...)
	for {
		r, err = clients[2].EvalRun(ctx, run.ID)
		if err != nil {
			t.Fatal(err)
		}
		if r.State != "running" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the third run was still running 60 s after its start; %d of 60 traces graded", r.Progress.Done)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("third run: done %s after the kill; the judge was asked %d times for 60 traces", time.Since(killedAt).Round(time.Millisecond), judge.Count()-before)
	if r.State != "done" || r.Progress.Done != 60 {
		t.Fatalf("the third run: state %q, %d of 60 traces; want done, 60", r.State, r.Progress.Done)
	}
	resp, err = http.Get(replicas[2].url + "/api/v1/datasets/" + d.ID + "/scores?history=true")
	if err != nil {
		t.Fatal(err)
	}
	var scores struct{ Scores []json.RawMessage }
	err = json.NewDecoder(resp.Body).Decode(&scores)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the third dataset's scores: %s, %v", resp.Status, err)
	}
	if len(scores.Scores) != 60 {
		t.Errorf("the third run's dataset has %d scores with history; want 60 (each trace graded once)", len(scores.Scores))
	}
	// At most the killed worker's calls in flight (4, --eval-concurrency)
	// and its graded traces not yet stored (as many) are asked again.
	if calls := judge.Count() - before; calls < 60 || calls > 68 {
		t.Errorf("the judge was asked %d times for the third run's 60 traces; want 60 to 68", calls)
	}
}

// spansOf is how many spans trace id holds, read through base.
func spansOf(t *testing.T, base, id string) int {
	t.Helper()
	resp, err := http.Get(base + "/api/v1/traces/" + id)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tr struct{ Spans []json.RawMessage }
	if err := json.NewDecoder(resp.Body).Decode(&tr); err != nil {
		t.Fatalf("trace %s: %v", id, err)
	}
	return len(tr.Spans)
}

// TestReplicasGatewayConversation: the calls of one agent's conversation
// through the gateway, each to another replica, extend one trace (the
// conversation is matched in the database, not in a replica's memory).
func TestReplicasGatewayConversation(t *testing.T) {
	upstream := chattest.New(t, func(r *chattest.Request) chattest.Reply {
		return chattest.Reply{Content: "answer to " + r.User()}
	})
	replicas := startReplicas(t, pgtest.URL(t), 3, "--gateway-openai-url", upstream.URL)
	// Each replica knows of the others (they say so every 5 s, and answer
	// a newcomer at once).
	deadline := time.Now().Add(30 * time.Second)
	for _, r := range replicas {
		for {
			resp, err := http.Get(r.url + "/api/v1/backlog")
			if err != nil {
				t.Fatal(err)
			}
			var bl struct{ Servers int }
			err = json.NewDecoder(resp.Body).Decode(&bl)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			if bl.Servers == 3 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("replica %s knows of %d servers, want 3", r.url, bl.Servers)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	messages := []map[string]string{{"role": "system", "content": "You are terse."}}
	for turn := range 4 {
		question := fmt.Sprintf("question %d", turn)
		messages = append(messages, map[string]string{"role": "user", "content": question})
		body, _ := json.Marshal(map[string]any{"model": "gpt-4o", "messages": messages})
		replica := replicas[turn%len(replicas)]
		req, _ := http.NewRequest("POST", replica.url+"/api/v1/gateway/conversation/openai/chat/completions", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer sk-test")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var out struct {
			Choices []struct{ Message struct{ Content string } }
		}
		err = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || len(out.Choices) != 1 {
			t.Fatalf("turn %d through replica %d: %s, %v", turn, turn%len(replicas), resp.Status, err)
		}
		messages = append(messages, map[string]string{"role": "assistant", "content": out.Choices[0].Message.Content})
	}
	c, id := datasetClient(t, replicas[1].url, "conversation")
	_, tr, _ := onlyTrace(t, c, id)
	var got []string
	for _, e := range tr.Events {
		got = append(got, e.Role+": "+e.Content.Text)
	}
	var want []string
	for _, m := range messages {
		want = append(want, m["role"]+": "+m["content"])
	}
	if !slices.Equal(got, want) {
		t.Errorf("the conversation's trace:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestReplicasSessionSteps: guarded steps of one session (POST
// /api/v1/gateway/{dataset}/steps, as `lookout mcp` sends them) sent at
// once through three replicas all land in the session's one trace: a step
// that another replica's step beat to the trace is read and checked again
// after it, not refused.
func TestReplicasSessionSteps(t *testing.T) {
	replicas := startReplicas(t, pgtest.URL(t), 3)
	step := func(replica int, text string) error {
		body := fmt.Sprintf(`{"session": "s-1", "events": [{"role": "user", "content": %q}]}`, text)
		resp, err := http.Post(replicas[replica].url+"/api/v1/gateway/stepped/steps", "application/json", strings.NewReader(body))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(resp.Body)
			return fmt.Errorf("%s: %s", resp.Status, b)
		}
		return nil
	}
	if err := step(0, "opening"); err != nil {
		t.Fatal(err)
	}
	const steps = 30
	var wg sync.WaitGroup
	for k := range steps {
		wg.Go(func() {
			if err := step(k%len(replicas), fmt.Sprintf("step %d", k)); err != nil {
				t.Errorf("step %d through replica %d: %v", k, k%len(replicas), err)
			}
		})
	}
	wg.Wait()
	c, id := datasetClient(t, replicas[2].url, "stepped")
	_, tr, _ := onlyTrace(t, c, id)
	events := tr.Events
	seen := map[string]int{}
	for _, e := range events {
		seen[e.Content.Text]++
	}
	if len(events) != steps+1 || seen["opening"] != 1 || events[0].Content.Text != "opening" {
		t.Fatalf("the session's trace holds %d events (opening first: %v), want %d", len(events), len(events) > 0 && events[0].Content.Text == "opening", steps+1)
	}
	for k := range steps {
		if n := seen[fmt.Sprintf("step %d", k)]; n != 1 {
			t.Errorf("step %d is in the trace %d times, want once", k, n)
		}
	}

	// A new session whose first steps reach three replicas at once: one
	// of them starts its trace, the others' steps extend it.
	for k := range steps {
		wg.Go(func() {
			body := fmt.Sprintf(`{"session": "s-2", "events": [{"role": "user", "content": "new %d"}]}`, k)
			resp, err := http.Post(replicas[k%len(replicas)].url+"/api/v1/gateway/fresh/steps", "application/json", strings.NewReader(body))
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("new session, step %d: %s", k, resp.Status)
			}
		})
	}
	wg.Wait()
	c, id = datasetClient(t, replicas[0].url, "fresh")
	_, tr, _ = onlyTrace(t, c, id)
	if len(tr.Events) != steps {
		t.Errorf("the new session's trace holds %d events, want %d", len(tr.Events), steps)
	}
}

// datasetClient is a client of base and the id of its dataset name.
func datasetClient(t *testing.T, base, name string) (*client.Client, string) {
	t.Helper()
	c, err := client.New(base)
	if err != nil {
		t.Fatal(err)
	}
	d, err := c.FindDataset(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return c, d.ID
}

// listed counts the times each trace id is listed in dataset id, every
// page.
func listed(t *testing.T, c *client.Client, id string) map[string]int {
	t.Helper()
	got := map[string]int{}
	for cursor := ""; ; {
		p, err := c.Traces(context.Background(), id, cursor, 1000)
		if err != nil {
			t.Fatal(err)
		}
		for _, tr := range p.Traces {
			got[tr.ID]++
		}
		if cursor = p.Next; cursor == "" {
			return got
		}
	}
}
