// Command gateway measures what Lookout's gateway adds to a model call. The
// same OpenAI Chat Completions calls go to a fake provider on loopback
// (internal/gateway/upstreamtest, which answers at once) directly and
// through a real Lookout server (POST /api/v1/gateway/{dataset}/openai/
// chat/completions with a Lookout key in Invariant-Authorization, the
// dataset's policy in block mode, every call recorded); the difference is
// the gateway's.
//
//	go run ./bench/gateway                           # the tables of bench/README.md
//	go run ./bench/gateway -calls 200 -duration 3s   # a quicker look
//
// Latency: one client, its calls alternating between the provider and
// Lookout so that both meet the same machine; p50 and p99 of each, and
// their difference. Non-streamed calls are timed to the whole answer,
// streamed ones to the first text delta (time to first token).
// Throughput: -clients concurrent clients for -duration, non-streamed,
// counting the calls answered 200.
//
// Conversations are agent runs (a system prompt, the user's request, then
// rounds of a tool call, its output, an answer and the user's next message)
// of about 10 or 500 events. Each starts with a call carrying its events so
// far (not timed: it creates the trace), then goes on as an agent does,
// each call adding the last answer and the user's next message: 4 calls
// for the short ones (10 to 16 events), 50 for the long ones (500 to 598).
// Policies: one tool-name rule (one-rule.iv) or ten rules of every kind,
// the secrets detector among them (ten-rules.iv).
// Figures go in bench/README.md.
package main

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"flag"
	"fmt"
	"github.com/lookout-dev/lookout/internal/gctune"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lookout-dev/lookout/bench/benchstore"
	"github.com/lookout-dev/lookout/internal/gateway/upstreamtest"
	"github.com/lookout-dev/lookout/internal/policy"
	"github.com/lookout-dev/lookout/internal/server"
	"github.com/lookout-dev/lookout/internal/store"
)

//go:embed one-rule.iv
var oneRule string

//go:embed ten-rules.iv
var tenRules string

const (
	providerKey = "sk-bench-provider-key"
	model       = "gpt-4o-mini"
	answer      = "It is 18 °C and cloudy in Paris, with a light west wind; take a jacket if you go out tonight."
)

// Goals of issue 18, on the project's 2-core machine.
const (
	goalP50        = time.Millisecond
	goalP99        = 5 * time.Millisecond
	goalThroughput = 2000.0
)

type rules struct{ name, dataset, src string }

var ruleSets = []rules{
	{"1 tool-name rule", "bench-one-rule", oneRule},
	{"10 rules", "bench-ten-rules", tenRules},
}

func main() {
	backend := flag.String("backend", "sqlite", "store: sqlite or postgres")
	pgURL := flag.String("pg", os.Getenv("LOOKOUT_TEST_POSTGRES"), "PostgreSQL URL (default: a throwaway cluster)")
	calls := flag.Int("calls", 500, "timed calls per latency row, each way")
	warmup := flag.Int("warmup", 50, "untimed calls before each latency row, each way")
	clients := flag.Int("clients", 16, "concurrent clients of the throughput rows")
	duration := flag.Duration("duration", 5*time.Second, "length of a throughput row")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the runs to FILE (client, server and provider share the process)")
	only := flag.String("only", "", "run only the rows whose label holds this text (such as \"10 rules\" or \"500-\" or \"first token\" or \"calls/s\")")
	peer := flag.Bool("peer", false, "with -backend postgres: a second server on the database, as a replica is, so that the gateway commits each call before it answers")
	flag.Parse()
	if *peer && *backend != "postgres" {
		fmt.Fprintln(os.Stderr, "bench/gateway: -peer needs -backend postgres")
		os.Exit(2)
	}
	if err := run(*backend, *pgURL, *calls, *warmup, *clients, *duration, *cpuprofile, *only, *peer); err != nil {
		fmt.Fprintln(os.Stderr, "bench/gateway:", err)
		os.Exit(1)
	}
}

func run(backend, pgURL string, calls, warmup, clients int, duration time.Duration, cpuprofile, only string, peer bool) error {
	// As lookout serve sets it (internal/gctune); GOGC in the environment
	// replaces it, as it does for the server.
	gc := gctune.Apply()
	for _, r := range ruleSets {
		if _, err := policy.ParseFile(r.name, r.src); err != nil {
			return fmt.Errorf("policy %s: %w", r.name, err)
		}
	}
	ctx := context.Background()
	st, closeStore, err := benchstore.Open(ctx, backend, pgURL)
	if err != nil {
		return err
	}
	defer closeStore()
	fake, err := upstreamtest.Start(upstreamtest.OpenAI, upstreamtest.Script{{Text: answer, InputTokens: 1200, OutputTokens: 28}},
		upstreamtest.Options{Key: providerKey, NoRecording: true, Lean: true})
	if err != nil {
		return err
	}
	defer fake.Close()

	// The server's warnings and errors (a call it failed to record) are
	// reported at the end: figures of a server that drops work are void.
	var logged lockedBuffer
	srv := server.New(server.Config{Store: st, Logger: slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Gateway: server.GatewayConfig{OpenAIURL: fake.URL()}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(ln)
	defer hs.Close()
	lookout := "http://" + ln.Addr().String()

	key, err := setup(ctx, st)
	if err != nil {
		return err
	}
	if peer {
		if err := startPeer(ctx, st, srv, lookout, key); err != nil {
			return err
		}
	}
	b := &bench{
		direct:     fake.URL() + "/chat/completions",
		lookout:    lookout,
		lookoutKey: key,
		client: &http.Client{Transport: &http.Transport{
			MaxIdleConnsPerHost: 2 * clients, DisableCompression: true, ResponseHeaderTimeout: 30 * time.Second,
		}},
	}
	stopProfile, err := benchstore.StartCPUProfile(cpuprofile)
	if err != nil {
		return err
	}
	defer stopProfile()

	fmt.Printf("machine: %s/%s, %d CPUs (%s), %s, store %s; %s\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), cpuModel(), runtime.Version(), backend, time.Now().UTC().Format("2006-01-02"))
	fmt.Printf("garbage collector: GOGC %s, soft limit %s (lookout serve's setting, internal/gctune)\n", gcSetting(gc.Percent, "GOGC"), gcSetting(int(gc.Limit>>20), "GOMEMLIMIT"))
	fmt.Printf("latency: %d timed calls per row each way (after %d untimed), one client alternating provider and Lookout\n\n", calls, warmup)
	fmt.Println("| call | policy | events | provider p50 / p99 | through Lookout p50 / p99 | added p50 / p99 |")
	fmt.Println("|---|---|---|---|---|---|")
	var worst50, worst99 time.Duration
	for _, stream := range []bool{false, true} {
		for _, r := range ruleSets {
			for _, events := range []int{10, 500} {
				what := "whole answer"
				if stream {
					what = "streamed, first token"
				}
				if !strings.Contains(what+" | "+r.name+" | "+eventsLabel(events), only) {
					continue
				}
				direct, via, err := b.latency(r, events, stream, calls, warmup)
				if err != nil {
					return err
				}
				d50, d99 := percentile(direct, 50), percentile(direct, 99)
				v50, v99 := percentile(via, 50), percentile(via, 99)
				worst50, worst99 = max(worst50, v50-d50), max(worst99, v99-d99)
				fmt.Printf("| %s | %s | %s | %s / %s | %s / %s | **%s / %s** |\n", what, r.name, eventsLabel(events),
					ms(d50), ms(d99), ms(v50), ms(v99), ms(v50-d50), ms(v99-d99))
			}
		}
	}

	fmt.Printf("\nthroughput: %d clients for %s per row, whole answers (provider alone for scale)\n\n", clients, duration)
	fmt.Println("| policy | events | provider calls/s | through Lookout calls/s |")
	fmt.Println("|---|---|---|---|")
	var worstRate float64 = -1
	for _, r := range ruleSets {
		for _, events := range []int{10, 500} {
			if !strings.Contains("calls/s | "+r.name+" | "+eventsLabel(events), only) {
				continue
			}
			direct, err := b.throughput("", events, clients, duration)
			if err != nil {
				return err
			}
			via, err := b.throughput(r.dataset, events, clients, duration)
			if err != nil {
				return err
			}
			if worstRate < 0 || via < worstRate {
				worstRate = via
			}
			fmt.Printf("| %s | %s | %.0f | **%.0f** |\n", r.name, eventsLabel(events), direct, via)
		}
	}

	// What the gateway still has to write once the answers are out.
	start := time.Now()
	srv.Close()
	fmt.Printf("\nrecorder: the calls still queued were written %s after the last answer\n", ms(time.Since(start)))
	if logged.Len() > 0 {
		fmt.Printf("server warnings and errors:\n%s", logged.String())
	}
	fmt.Printf("goals: added p50 < %s (worst row %s: %s), added p99 < %s (worst row %s: %s), >= %.0f calls/s (worst row %.0f: %s)\n",
		ms(goalP50), ms(worst50), verdict(worst50 < goalP50), ms(goalP99), ms(worst99), verdict(worst99 < goalP99),
		goalThroughput, worstRate, verdict(worstRate >= goalThroughput))
	return nil
}

// setup makes the bench user, its key, and a dataset per rule set with the
// policy in block mode.
func setup(ctx context.Context, st store.Store) (string, error) {
	hash, err := server.HashPassword("bench-password")
	if err != nil {
		return "", err
	}
	u, err := st.CreateUser(ctx, "bench", hash)
	if err != nil {
		return "", err
	}
	key, h, last4 := server.NewAPIKey()
	if _, err := st.CreateAPIKey(ctx, u.ID, "bench", h, last4); err != nil {
		return "", err
	}
	for _, r := range ruleSets {
		d, err := st.CreateDataset(ctx, store.Dataset{Name: r.dataset, OwnerID: u.ID})
		if err != nil {
			return "", err
		}
		if _, err := st.SavePolicy(ctx, store.Policy{DatasetID: d.ID, Name: r.name, Source: r.src, Mode: store.PolicyBlock}); err != nil {
			return "", err
		}
	}
	return key, nil
}

type bench struct {
	direct     string // the provider's chat completions URL
	lookout    string // the server's base URL
	lookoutKey string
	client     *http.Client
}

// url is where a call goes: the provider, or Lookout's gateway into
// dataset.
func (b *bench) url(dataset string) string {
	if dataset == "" {
		return b.direct
	}
	return b.lookout + "/api/v1/gateway/" + dataset + "/openai/chat/completions"
}

// call sends one conversation's next call and returns the time to its
// first text delta (streamed) or to the whole answer, and the answer.
func (b *bench) call(dataset string, c *conversation, stream bool) (time.Duration, string, error) {
	req, err := http.NewRequest(http.MethodPost, b.url(dataset), bytes.NewReader(c.body(stream)))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+providerKey)
	if dataset != "" {
		req.Header.Set("Invariant-Authorization", "Bearer "+b.lookoutKey)
	}
	start := time.Now()
	resp, err := b.client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return 0, "", fmt.Errorf("%s: status %d: %s", req.URL.Path, resp.StatusCode, body)
	}
	if !stream {
		body, err := io.ReadAll(resp.Body)
		took := time.Since(start)
		if err != nil {
			return 0, "", err
		}
		var out struct {
			Choices []struct {
				Message struct{ Content string } `json:"message"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(body, &out); err != nil || len(out.Choices) != 1 {
			return 0, "", fmt.Errorf("%s: not a completion: %s", req.URL.Path, body)
		}
		return took, out.Choices[0].Message.Content, nil
	}
	var first time.Duration
	var text strings.Builder
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	done := false
	for sc.Scan() {
		data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: "))
		if !ok {
			continue
		}
		if string(data) == "[DONE]" {
			done = true
			break
		}
		var chunk struct {
			Choices []struct {
				Delta struct{ Content string } `json:"delta"`
			} `json:"choices"`
			Error json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(data, &chunk); err != nil || chunk.Error != nil {
			return 0, "", fmt.Errorf("%s: stream event %s", req.URL.Path, data)
		}
		if len(chunk.Choices) > 0 && chunk.Choices[0].Delta.Content != "" {
			if first == 0 {
				first = time.Since(start)
			}
			text.WriteString(chunk.Choices[0].Delta.Content)
		}
	}
	if err := sc.Err(); err != nil || !done || first == 0 {
		return 0, "", fmt.Errorf("%s: stream ended early (%v)", req.URL.Path, err)
	}
	return first, text.String(), nil
}

// latency times calls of conversations of about events events, alternating
// between the provider and Lookout: a conversation's first call (events-2
// events, creating the trace) is not timed, the next ones carry events,
// events+2, and so on.
func (b *bench) latency(r rules, events int, stream bool, calls, warmup int) (direct, via []time.Duration, err error) {
	var dc, vc *conversation
	left, seq := 0, 0
	for i := 0; i < warmup+calls; i++ {
		if left == 0 {
			seq++
			id := fmt.Sprintf("latency %s %d %v %d", r.dataset, events, stream, seq)
			dc, vc = newConversation(id, events-2), newConversation(id, events-2)
			for _, x := range []struct {
				dataset string
				c       *conversation
			}{{"", dc}, {r.dataset, vc}} {
				_, ans, err := b.call(x.dataset, x.c, stream)
				if err != nil {
					return nil, nil, err
				}
				x.c.extend(ans)
			}
			left = extensions(events)
		}
		var d, v time.Duration
		for k := range 2 {
			if (i+k)%2 == 0 {
				took, ans, err := b.call("", dc, stream)
				if err != nil {
					return nil, nil, err
				}
				d = took
				dc.extend(ans)
			} else {
				took, ans, err := b.call(r.dataset, vc, stream)
				if err != nil {
					return nil, nil, err
				}
				v = took
				vc.extend(ans)
			}
		}
		left--
		if i >= warmup {
			direct, via = append(direct, d), append(via, v)
		}
	}
	return direct, via, nil
}

// throughput runs clients conversations at once for d, through Lookout
// into dataset (or to the provider for ""), and returns the calls answered
// per second, first calls of conversations included.
func (b *bench) throughput(dataset string, events, clients int, d time.Duration) (float64, error) {
	var n atomic.Int64
	var mu sync.Mutex
	var firstErr error
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for w := range clients {
		wg.Go(func() {
			var c *conversation
			left, seq := 0, 0
			for time.Now().Before(deadline) {
				if left == 0 {
					seq++
					c = newConversation(fmt.Sprintf("throughput %s %d client %d run %d %d", dataset, events, w, seq, start.UnixNano()), events-2)
					left = extensions(events) + 1
				}
				_, ans, err := b.call(dataset, c, false)
				if err != nil {
					mu.Lock()
					firstErr = firstOf(firstErr, err)
					mu.Unlock()
					return
				}
				c.extend(ans)
				left--
				n.Add(1)
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return 0, firstErr
	}
	return float64(n.Load()) / time.Since(start).Seconds(), nil
}

func firstOf(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// extensions is how many calls a conversation makes after its first.
func extensions(events int) int { return max(4, events/10) }

// conversation is an agent run as the messages of its next call.
type conversation struct {
	msgs [][]byte
	n    int // rounds so far, for varied follow-ups
	// joined is msgs joined by commas, grown as msgs grow: an agent's
	// client writes its whole conversation on each call, but the bench's
	// should not cost more than the thing measured.
	joined []byte
	done   int // messages in joined
}

var cities = []string{"Paris", "Lisbon", "Oslo", "Kyoto", "Lima", "Cairo", "Quito"}

// textMessage and jsonString write messages as json.Marshal writes a map
// (members sorted), without its reflection: the bench's client starts a
// 500-message conversation every 51 calls, and marshalling maps was a
// twentieth of the machine's CPU.
func textMessage(role, content string) []byte {
	return []byte(`{"content":` + jsonString(content) + `,"role":` + jsonString(role) + `}`)
}

func jsonString(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// newConversation is an agent run of events events ending with the user's
// message, so the model answers next; id makes it unlike any other.
func newConversation(id string, events int) *conversation {
	c := &conversation{}
	c.msgs = append(c.msgs,
		textMessage("system", "You are a travel assistant. Use the tools to look up weather and flights; answer briefly."),
		textMessage("user", "Plan my week ("+id+"): the weather first, then flights between the cities."))
	for i := 0; len(c.msgs)+4 <= events; i++ {
		city := cities[i%len(cities)]
		callID := fmt.Sprintf("call_%d_%x", i, len(id)*7919+i)
		tool, args, output := "get_weather", `{"city":"`+city+`"}`, `{"city":"`+city+`","temperature_c":18,"conditions":"cloudy","wind_kmh":12,"humidity":0.71}`
		if i%2 == 1 {
			tool, args = "search_flights", `{"from":"`+city+`","to":"`+cities[(i+1)%len(cities)]+`","date":"2026-12-0`+fmt.Sprint(i%9+1)+`"}`
			output = `{"flights":[{"number":"LK` + fmt.Sprint(100+i) + `","departs":"08:10","arrives":"11:45","price_eur":182},{"number":"LK` + fmt.Sprint(200+i) + `","departs":"17:30","arrives":"21:05","price_eur":139}]}`
		}
		c.msgs = append(c.msgs,
			[]byte(`{"content":null,"role":"assistant","tool_calls":[{"function":{"arguments":`+jsonString(args)+`,"name":`+jsonString(tool)+`},"id":`+jsonString(callID)+`,"type":"function"}]}`),
			[]byte(`{"content":`+jsonString(output)+`,"role":"tool","tool_call_id":`+jsonString(callID)+`}`),
			textMessage("assistant", "Here is what I found for "+city+": "+output[:40]+"... Shall I go on?"),
			textMessage("user", "Yes, go on with "+cities[(i+1)%len(cities)]+"."))
	}
	for len(c.msgs) < events {
		c.msgs = append(c.msgs, textMessage("user", "And keep it short, please."))
	}
	return c
}

// extend adds the model's answer and the user's next message.
func (c *conversation) extend(answer string) {
	c.n++
	c.msgs = append(c.msgs, textMessage("assistant", answer),
		textMessage("user", fmt.Sprintf("Thanks. And on day %d, in %s?", c.n, cities[c.n%len(cities)])))
}

func (c *conversation) body(stream bool) []byte {
	for ; c.done < len(c.msgs); c.done++ {
		if c.done > 0 {
			c.joined = append(c.joined, ',')
		}
		c.joined = append(c.joined, c.msgs[c.done]...)
	}
	b := make([]byte, 0, len(c.joined)+96)
	b = append(b, `{"model":"`+model+`","messages":[`...)
	b = append(b, c.joined...)
	b = append(b, ']')
	if stream {
		b = append(b, `,"stream":true,"stream_options":{"include_usage":true}`...)
	}
	return append(b, '}')
}

// lockedBuffer is a bytes.Buffer the server's goroutines may log into.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() > 64<<10 { // enough to see what went wrong
		return len(p), nil
	}
	return l.b.Write(p)
}

func (l *lockedBuffer) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Len()
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func percentile(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[min(len(s)-1, (len(s)*p+99)/100-1)]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }

func eventsLabel(events int) string {
	return fmt.Sprintf("%d-%d", events, events+2*(extensions(events)-1))
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	for line := range strings.Lines(string(b)) {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

// gcSetting names a collector setting: Apply's, or the environment's.
func gcSetting(v int, env string) string {
	if v == 0 {
		return "from $" + env + " (" + os.Getenv(env) + ")"
	}
	if env == "GOMEMLIMIT" {
		return fmt.Sprintf("%d MiB", v)
	}
	return fmt.Sprint(v)
}

// startPeer starts the server's change feed and a second server on its
// database, and waits until the first knows of the second (they tell each
// other over the feed): its gateway then records as with replicas.
func startPeer(ctx context.Context, st store.Store, srv *server.Server, lookout, key string) error {
	if err := srv.Start(ctx); err != nil {
		return err
	}
	other := server.New(server.Config{Store: st, Logger: slog.New(slog.DiscardHandler), NoBackground: true})
	if err := other.Start(ctx); err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		req, _ := http.NewRequestWithContext(ctx, "GET", lookout+"/api/v1/backlog", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		var bl struct{ Servers int }
		err = json.NewDecoder(resp.Body).Decode(&bl)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if bl.Servers >= 2 {
			fmt.Println("peer: a second server on the database; the gateway commits each call before it answers")
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the server did not hear of its peer in 30 s (it knows of %d servers)", bl.Servers)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
