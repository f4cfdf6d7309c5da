// Command otlp measures the OTLP/HTTP receiver: spans per second accepted
// at POST /v1/traces into SQLite and PostgreSQL, sent by a load generator on
// loopback as OpenTelemetry exporters send them (protobuf batches of 512
// spans), with the p50/p99 request latency; then how long after the last
// request every trace is built from its spans (the server answers before it
// builds them), and the end-to-end rate that gives.
//
//	go run ./bench/otlp                       # both backends
//	go run ./bench/otlp -backend sqlite -duration 20s -clients 4
//
// An agent run is 64 spans: an agent span, and chat and tool spans with
// GenAI attributes under it. A run's spans come in two batches, as a batch
// span processor sends them when spans end (the agent span, ending last, in
// the second): each batch holds the second halves of the 8 runs begun in the
// one before and the first halves of 8 new runs, so every request both
// starts traces and extends traces stored before.
// The CPU a span is this process's (server and load generator) over the
// run and the wait, per span sent.
// PostgreSQL: -pg URL, else $LOOKOUT_TEST_POSTGRES, else a throwaway cluster.
// Figures go in bench/README.md.
package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/lookout-dev/lookout/bench/benchstore"
)

const (
	batchSpans  = 512
	spansPerRun = 64
)

func main() {
	backend := flag.String("backend", "both", "sqlite, postgres or both")
	duration := flag.Duration("duration", 15*time.Second, "how long to send per backend")
	clients := flag.Int("clients", 4, "concurrent exporters")
	pgURL := flag.String("pg", os.Getenv("LOOKOUT_TEST_POSTGRES"), "PostgreSQL URL (default: a throwaway cluster)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the runs to FILE")
	flag.Parse()
	stopProfile, err := benchstore.StartCPUProfile(*cpuprofile)
	if err != nil {
		fail(err)
	}
	defer stopProfile()

	backends, err := benchstore.Backends(*backend)
	if err != nil {
		fail(err)
	}
	fmt.Printf("machine: %s/%s, %d CPUs, %s; %s\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version(), time.Now().UTC().Format("2006-01-02"))
	fmt.Printf("load: %d exporters on loopback, protobuf batches of %d spans (halves of runs of %d spans), %s per backend\n\n",
		*clients, batchSpans, spansPerRun, *duration)
	ctx := context.Background()
	for _, b := range backends {
		st, cleanup, err := benchstore.Open(ctx, b, *pgURL)
		if err != nil {
			fail(err)
		}
		url, stop, err := benchstore.Serve(st)
		if err != nil {
			fail(err)
		}
		cpu0 := cpuTime()
		res, err := run(url+"/v1/traces", *clients, *duration)
		var drain time.Duration
		var left int64
		if err == nil {
			// The traces are built after their requests are answered: wait
			// for the last ones, for the rate at which spans become traces.
			t0 := time.Now()
			for {
				if left, err = st.PendingSpanTraces(ctx); err != nil || left == 0 || time.Since(t0) > 10*time.Minute {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			drain = time.Since(t0)
		}
		cpu := cpuTime() - cpu0
		stop()
		cleanup()
		if err != nil {
			fail(fmt.Errorf("%s: %w", b, err))
		}
		if left > 0 {
			fail(fmt.Errorf("%s: %d traces still not built %s after the last request", b, left, drain))
		}
		total := res.spansPerSec * res.elapsed.Seconds()
		fmt.Printf("%-8s %8.0f spans/s  %6d requests  latency p50 %5.1f ms  p99 %6.1f ms  max %6.1f ms;  all built %5.2f s after the last request: %8.0f spans/s end to end;  process CPU %5.1f µs a span\n",
			b, res.spansPerSec, res.requests, ms(res.p50), ms(res.p99), ms(res.max),
			drain.Seconds(), total/(res.elapsed+drain).Seconds(), float64(cpu.Microseconds())/total)
	}
}

type result struct {
	elapsed       time.Duration
	spansPerSec   float64
	requests      int
	p50, p99, max time.Duration
}

// cpuTime is the CPU time of this process so far, user and system: the
// server's, and the load generator's beside it (PostgreSQL's is not in it).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// run sends batches from n exporters for d and measures them.
func run(url string, n int, d time.Duration) (result, error) {
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n}}
	var spans atomic.Int64
	var mu sync.Mutex
	var lat []time.Duration
	var firstErr error
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(d)
	for c := range n {
		wg.Go(func() {
			gen := newGenerator(uint64(c))
			for time.Now().Before(deadline) {
				body := gen.next()
				t0 := time.Now()
				resp, err := hc.Post(url, "application/x-protobuf", bytes.NewReader(body))
				if err == nil {
					msg, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 || len(msg) != 0 {
						err = fmt.Errorf("status %d: %s", resp.StatusCode, msg)
					}
				}
				took := time.Since(t0)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				lat = append(lat, took)
				mu.Unlock()
				if err != nil {
					return
				}
				spans.Add(batchSpans)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if firstErr != nil {
		return result{}, firstErr
	}
	slices.Sort(lat)
	q := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	return result{elapsed: elapsed, spansPerSec: float64(spans.Load()) / elapsed.Seconds(), requests: len(lat), p50: q(0.5), p99: q(0.99), max: lat[len(lat)-1]}, nil
}

// generator makes batches: each holds the second halves of the previous
// batch's runs and the first halves of new ones.
type generator struct {
	rng     *rand.Rand
	seq     uint64
	pending []*tracepb.Span // second halves of the last batch's runs
	res     *resourcepb.Resource
}

func newGenerator(seed uint64) *generator {
	return &generator{
		rng: rand.New(rand.NewPCG(seed, 42)),
		res: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{str("service.name", "bench-agent")}},
	}
}

func str(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

func num(k string, v int64) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v}}}
}

func (g *generator) id(n int) []byte {
	b := make([]byte, n)
	for i := 0; i < n; i += 8 {
		binary.BigEndian.PutUint64(b[i:], g.rng.Uint64()|1)
	}
	return b
}

// runSpans is one agent run: the agent span, then chat and tool spans in
// turn under it. The agent span ends last, so it is in the second half.
func (g *generator) runSpans() (first, second []*tracepb.Span) {
	traceID := g.id(16)
	root := g.id(8)
	t0 := uint64(time.Now().UnixNano())
	var kids []*tracepb.Span
	for i := 1; i < spansPerRun; i++ {
		g.seq++
		sp := &tracepb.Span{TraceId: traceID, SpanId: g.id(8), ParentSpanId: root, StartTimeUnixNano: t0 + uint64(i)*1e6, EndTimeUnixNano: t0 + uint64(i)*1e6 + 5e5}
		if i%2 == 1 {
			sp.Name = "chat gpt-4o"
			sp.Attributes = []*commonpb.KeyValue{str("gen_ai.operation.name", "chat"), str("gen_ai.request.model", "gpt-4o"),
				num("gen_ai.usage.input_tokens", int64(100+i)), num("gen_ai.usage.output_tokens", 20),
				str("gen_ai.input.messages", fmt.Sprintf(`[{"role":"user","parts":[{"type":"text","content":"step %d of request %d: look up the reservation"}]}]`, i, g.seq)),
				str("gen_ai.output.messages", fmt.Sprintf(`[{"role":"assistant","parts":[{"type":"tool_call","id":"call_%d_%d","name":"get_reservation_details","arguments":{"reservation_id":"R%d"}}]}]`, g.seq, i, g.seq))}
		} else {
			sp.Name = "execute_tool get_reservation_details"
			sp.Attributes = []*commonpb.KeyValue{str("gen_ai.operation.name", "execute_tool"), str("gen_ai.tool.name", "get_reservation_details"),
				str("gen_ai.tool.call.id", fmt.Sprintf("call_%d_%d", g.seq-1, i-1)), str("gen_ai.tool.call.result", fmt.Sprintf(`{"reservation_id":"R%d","status":"confirmed","flights":2}`, g.seq))}
		}
		kids = append(kids, sp)
	}
	agent := &tracepb.Span{TraceId: traceID, SpanId: root, Name: "invoke_agent support", StartTimeUnixNano: t0, EndTimeUnixNano: t0 + uint64(spansPerRun)*1e6,
		Attributes: []*commonpb.KeyValue{str("gen_ai.operation.name", "invoke_agent"), str("gen_ai.agent.name", "support")}}
	half := spansPerRun / 2
	return kids[:half], append(kids[half:], agent)
}

func (g *generator) next() []byte {
	spans := g.pending
	g.pending = nil
	for len(spans) < batchSpans {
		first, second := g.runSpans()
		spans = append(spans, first...)
		g.pending = append(g.pending, second...)
	}
	req := &tracepb.TracesData{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource:   g.res,
		ScopeSpans: []*tracepb.ScopeSpans{{Scope: &commonpb.InstrumentationScope{Name: "bench"}, Spans: spans}},
	}}}
	b, err := proto.Marshal(req)
	if err != nil {
		fail(err)
	}
	return b
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "otlp bench:", err)
	os.Exit(1)
}
