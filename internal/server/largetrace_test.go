package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/lookout-dev/lookout/internal/formats/otlp"
	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/postgres"
	"github.com/lookout-dev/lookout/internal/store/postgres/pgtest"
	"github.com/lookout-dev/lookout/internal/store/sqlite"
)

// Large traces on the write path (this file): one trace of many spans, or
// of many identical events, is written in time linear in its size and
// does not hold up the small writes beside it. The tests bound a small
// push's latency generously; the benchmarks give the time a span or an
// event at two sizes, which are equal when the work is linear.

// stallBound is how long a small push may take while a large trace is
// written beside it: generous, for a loaded machine (the goal is 1 s).
const stallBound = 5 * time.Second

// oneNameSpans is a trace of n spans, all named "step" under one root, as
// requests of per spans each.
func oneNameSpans(traceID string, n, per int) [][]byte {
	const root = "eee19b7ec3c1b174"
	var out [][]byte
	for k := 0; k < n; k += per {
		var sp []tspan
		for i := k; i < min(n, k+per); i++ {
			id, parent := fmt.Sprintf("%016x", i+1), root
			if i == 0 {
				id, parent = root, ""
			}
			start := uint64(1_000_000_000 + i*1000)
			sp = append(sp, tspan{traceID, id, parent, "step", start, start + 500, [][2]string{{"step.number", fmt.Sprintf("int:%d", i)}}})
		}
		out = append(out, otlpProto("agent", sp))
	}
	return out
}

// identicalEvents is a push of one trace of n identical user messages.
func identicalEvents(dataset string, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, `{"dataset": %q, "messages": [[`, dataset)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"role": "user", "content": "the same text every time"}`)
	}
	b.WriteString(`]]}`)
	return b.String()
}

// smallPushes pushes a one-event trace as user every 20 ms until stop is
// closed, and returns how many it pushed and the longest one took.
func smallPushes(f *fixture, user string, stop <-chan struct{}) (n int, worst time.Duration, err error) {
	body := `{"dataset": "small", "messages": [[{"role": "user", "content": "hello"}]]}`
	for {
		select {
		case <-stop:
			return n, worst, nil
		case <-time.After(20 * time.Millisecond):
		}
		req, err := http.NewRequest("POST", f.hs.URL+"/api/v1/push/trace", strings.NewReader(body))
		if err != nil {
			return n, worst, err
		}
		req.Header.Set("Authorization", "Bearer "+f.keys[user])
		req.Header.Set("Content-Type", "application/json")
		t0 := time.Now()
		resp, err := f.hs.Client().Do(req)
		if err != nil {
			return n, worst, err
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return n, worst, fmt.Errorf("small push: %d %s", resp.StatusCode, msg)
		}
		n++
		worst = max(worst, time.Since(t0))
	}
}

// beside runs write while small pushes go on beside it, and fails t when
// one of them took longer than stallBound or none ran.
func beside(t *testing.T, f *fixture, write func()) {
	t.Helper()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var n int
	var worst time.Duration
	var err error
	wg.Go(func() { n, worst, err = smallPushes(f, "alice", stop) })
	time.Sleep(50 * time.Millisecond) // the first small push is under way
	t0 := time.Now()
	write()
	took := time.Since(t0)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the large write took %s; %d small pushes beside it, the longest %s", took, n, worst)
	if n == 0 {
		t.Error("no small push ran beside the large write")
	}
	if worst > stallBound {
		t.Errorf("a small push took %s beside the large write (bound %s)", worst, stallBound)
	}
}

// TestOTLPLargeTraceNoStall: a trace of 40,000 spans with one name, sent in
// 8 requests and built, is stored whole while small pushes beside it each
// finish within stallBound.
func TestOTLPLargeTraceNoStall(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st storeUnderTest) {
		f := newFixture(t, st, Config{})
		f.addUser("alice")
		const n = 40_000
		beside(t, f, func() {
			for _, body := range oneNameSpans(otelTrace, n, n/8) {
				if r := f.do("POST", "/v1/traces", "alice", bytes.NewReader(body), "Content-Type", "application/x-protobuf", "X-Lookout-Dataset", "large"); r.status != 200 {
					t.Fatalf("spans: %d %s", r.status, r.body)
				}
			}
			_, body, _ := firstTrace(t, f, "large") // a read builds the trace
			var got struct{ Spans []struct{ Name string } }
			if err := json.Unmarshal([]byte(body), &got); err != nil {
				t.Fatal(err)
			}
			if len(got.Spans) != n || got.Spans[n-1].Name != "step" {
				t.Errorf("the trace has %d spans, want %d named step", len(got.Spans), n)
			}
		})
	})
}

// TestPushIdenticalEventsNoStall: one pushed trace of 60,000 identical
// events is stored whole while small pushes beside it each finish within
// stallBound.
func TestPushIdenticalEventsNoStall(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st storeUnderTest) {
		f := newFixture(t, st, Config{})
		f.addUser("alice")
		const n = 60_000
		beside(t, f, func() {
			ids := f.push("alice", identicalEvents("large", n))
			st, err := f.st.Trace(context.Background(), ids[0])
			if err != nil {
				t.Fatal(err)
			}
			if len(st.Trace.Events) != n || st.Trace.Events[n-1].Content.Text != "the same text every time" {
				t.Errorf("the trace has %d events, want %d", len(st.Trace.Events), n)
			}
		})
	})
}

// eachBackendB runs fn against a fresh store of each backend, as
// forEachBackend does for tests.
func eachBackendB(b *testing.B, fn func(b *testing.B, st store.Store)) {
	b.Run("sqlite", func(b *testing.B) {
		st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "lookout.db"))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { st.Close() })
		fn(b, st)
	})
	b.Run("postgres", func(b *testing.B) {
		st, err := postgres.Open(context.Background(), pgtest.URL(b))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { st.Close() })
		fn(b, st)
	})
}

// benchDataset makes a server over st and a user's dataset in it. Its
// background builder waits an hour, so that reads alone build traces.
func benchDataset(b *testing.B, st store.Store, name string) (*Server, *principal, store.Dataset) {
	b.Helper()
	srv := New(Config{Store: st, SpanQuiet: time.Hour, SpanMaxDelay: time.Hour})
	b.Cleanup(srv.Close)
	ctx := context.Background()
	u, err := st.CreateUser(ctx, name, "not a hash")
	if err != nil {
		b.Fatal(err)
	}
	d, err := st.CreateDataset(ctx, store.Dataset{OwnerID: u.ID, Name: name})
	if err != nil {
		b.Fatal(err)
	}
	return srv, &principal{User: u, Via: "key"}, d
}

// ingestProto takes an OTLP protobuf request as the receiver does, past
// HTTP.
func ingestProto(ctx context.Context, s *Server, p *principal, dataset string, body []byte) error {
	var req tracepb.TracesData
	if err := proto.Unmarshal(body, &req); err != nil {
		return err
	}
	spans, err := otlp.FromResourceSpans(req.GetResourceSpans())
	if err != nil {
		return err
	}
	if rejected, msg, err := s.ingestSpans(ctx, p, dataset, spans, nil); err != nil || rejected > 0 {
		return fmt.Errorf("%d spans rejected (%s): %v", rejected, msg, err)
	}
	return nil
}

// BenchmarkOTLPLargeTrace stores one trace of n spans with one name, sent
// in 8 requests, and builds it: the time a span, the same at both sizes
// when the write path is linear (-benchtime 1x is enough). The background
// builder waits (benchDataset): the read that settles the trace builds it,
// once.
func BenchmarkOTLPLargeTrace(b *testing.B) {
	eachBackendB(b, func(b *testing.B, st store.Store) {
		for _, n := range []int{10_000, 40_000} {
			b.Run(fmt.Sprintf("spans=%d", n), func(b *testing.B) {
				srv, p, d := benchDataset(b, st, fmt.Sprintf("large%d", n))
				ctx := context.Background()
				k := 0
				for b.Loop() {
					k++
					for _, body := range oneNameSpans(fmt.Sprintf("%032x", k), n, n/8) {
						if err := ingestProto(ctx, srv, p, d.Name, body); err != nil {
							b.Fatal(err)
						}
					}
					if err := srv.settleDataset(ctx, d.ID); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/span")
			})
		}
	})
}

// BenchmarkPushIdenticalEvents pushes one trace of n identical events: the
// time an event, the same at both sizes when the write path is linear.
func BenchmarkPushIdenticalEvents(b *testing.B) {
	eachBackendB(b, func(b *testing.B, st store.Store) {
		for _, n := range []int{15_000, 60_000} {
			b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
				_, p, d := benchDataset(b, st, fmt.Sprintf("large%d", n))
				body := identicalEvents(d.Name, n)
				ctx := context.Background()
				for b.Loop() {
					req, err := decodePush(httptest.NewRequest("POST", "/api/v1/push/trace", strings.NewReader(body)))
					if err != nil {
						b.Fatal(err)
					}
					batch, err := req.newTraces(p.User.Name)
					if err != nil {
						b.Fatal(err)
					}
					if _, err := st.AddTraces(ctx, p.User.ID, d.ID, batch); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
			})
		}
	})
}

// genAISpans is one agent run of n spans as requests of per spans each: an
// agent span, and chat and tool spans in turn under it with GenAI
// attributes, as bench/otlp sends.
func genAISpans(traceID string, n, per int) [][]otlp.Span {
	const root = "eee19b7ec3c1b174"
	var all []tspan
	for i := 1; i < n; i++ {
		id, start := fmt.Sprintf("%016x", i+1), uint64(1_000_000_000+i*1_000_000)
		if i%2 == 1 {
			all = append(all, tspan{traceID, id, root, "chat gpt-4o", start, start + 500_000, [][2]string{
				{"gen_ai.operation.name", "chat"}, {"gen_ai.request.model", "gpt-4o"}, {"gen_ai.usage.input_tokens", fmt.Sprintf("int:%d", 100+i)},
				{"gen_ai.input.messages", fmt.Sprintf(`[{"role":"user","parts":[{"type":"text","content":"step %d: look up the reservation"}]}]`, i)},
				{"gen_ai.output.messages", fmt.Sprintf(`[{"role":"assistant","parts":[{"type":"tool_call","id":"call_%d","name":"get_reservation_details","arguments":{"reservation_id":"R%d"}}]}]`, i, i)},
			}})
		} else {
			all = append(all, tspan{traceID, id, root, "execute_tool get_reservation_details", start, start + 500_000, [][2]string{
				{"gen_ai.operation.name", "execute_tool"}, {"gen_ai.tool.name", "get_reservation_details"}, {"gen_ai.tool.call.id", fmt.Sprintf("call_%d", i-1)},
				{"gen_ai.tool.call.result", fmt.Sprintf(`{"reservation_id":"R%d","status":"confirmed","flights":2}`, i-1)},
			}})
		}
	}
	all = append(all, tspan{traceID, root, "", "invoke_agent support", 1_000_000_000, uint64(1_000_000_000 + n*1_000_000), [][2]string{
		{"gen_ai.operation.name", "invoke_agent"}, {"gen_ai.agent.name", "support"}}})
	var out [][]otlp.Span
	for k := 0; k < n; k += per {
		var req tracepb.TracesData
		if err := proto.Unmarshal(otlpProto("agent", all[k:min(n, k+per)]), &req); err != nil {
			panic(err)
		}
		spans, err := otlp.FromResourceSpans(req.GetResourceSpans())
		if err != nil {
			panic(err)
		}
		out = append(out, spans)
	}
	return out
}

// BenchmarkSpanTraceRebuild builds an agent run of 4,096 spans after each of
// its 8 requests, as the builder does when the requests come apart, from
// its spans as the receiver stores them (mapped once, when received) and,
// for comparison, as an earlier Lookout stored them (Span's binary form,
// decoded and mapped again at every build). ns/span is the time a span
// stored, for the 8 builds.
func BenchmarkSpanTraceRebuild(b *testing.B) {
	const n, per = 4096, 512
	reqs := genAISpans(otelTrace, n, per)
	for _, form := range []string{"mapped", "binary"} {
		b.Run("stored="+form, func(b *testing.B) {
			for b.Loop() {
				var stored [][]byte
				for _, spans := range reqs {
					if form == "binary" {
						for i := range spans {
							stored = append(stored, otlp.AppendBinary(nil, &spans[i]))
						}
					} else {
						ps := make([]*otlp.Span, len(spans))
						for i := range spans {
							ps[i] = &spans[i]
						}
						ms, err := mapSpanGroup(ps)
						if err != nil {
							b.Fatal(err)
						}
						for _, m := range ms {
							stored = append(stored, m.AppendBinary(nil))
						}
					}
					if _, err := buildSpanTrace(otelTrace, stored); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/span")
		})
	}
}

// TestSpanBuilderLater: a trace whose last build took long is left by the
// background builder while its spans keep coming, the traces beside it
// are built as usual, a read builds it at once, and it is built once quiet.
func TestSpanBuilderLater(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st storeUnderTest) {
		ctx := context.Background()
		u, err := st.CreateUser(ctx, "alice", "not a hash")
		if err != nil {
			t.Fatal(err)
		}
		d, err := st.CreateDataset(ctx, store.Dataset{OwnerID: u.ID, Name: "agent"})
		if err != nil {
			t.Fatal(err)
		}
		const large, small = "0af7651916cd43dd8448eb211c80319c", "4bf92f3577b34da6a3ce929d0e0e4736"
		k := 0
		accept := func(otelIDs ...string) []string {
			t.Helper()
			var groups []store.SpanGroup
			for _, id := range otelIDs {
				k++
				ms, err := otlp.MapSpans([]otlp.Span{{TraceID: id, SpanID: fmt.Sprintf("%016x", k), Name: fmt.Sprintf("step %d", k)}})
				if err != nil {
					t.Fatal(err)
				}
				groups = append(groups, store.SpanGroup{OTelTraceID: id, Spans: []store.StoredSpan{{SpanID: ms[0].SpanID(), Data: ms[0].AppendBinary(nil)}}})
			}
			ids, err := st.AcceptSpans(ctx, u.ID, d.ID, groups)
			if err != nil {
				t.Fatal(err)
			}
			return ids
		}
		spans := func(id string) int {
			t.Helper()
			tr, err := st.Trace(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			return len(tr.Trace.Spans)
		}
		// Never quiet, stale after 3 s: a build of these small traces takes
		// far less than half of it (a loaded machine's PostgreSQL took more
		// than half of 1 s), and leaves none for later.
		const stale = 3 * time.Second
		b := newSpanBuilder(st, time.Hour, stale, slog.New(slog.DiscardHandler), func(...string) {})
		buildNow := func() {
			t.Helper()
			if err := b.build(ctx); err != nil {
				t.Fatal(err)
			}
		}
		build := func() {
			t.Helper()
			time.Sleep(stale + 100*time.Millisecond)
			buildNow()
		}
		ids := accept(large, small)
		tl, ts := ids[0], ids[1]
		build()
		if n := b.backlog.Load(); n != 0 || spans(tl) != 1 || len(b.leftLater(time.Now())) != 0 {
			t.Fatalf("first build: %d pending, %d spans, later %v", n, spans(tl), b.leftLater(time.Now()))
		}
		// The large trace's build took 10 s (so it is told): left for 40 s.
		b.leaveLater([]store.PendingBuild{{TraceID: tl, Spans: 1000}}, 10*time.Second)
		accept(large, small)
		build()
		if n := b.backlog.Load(); n != 1 || spans(tl) != 1 || spans(ts) != 2 {
			t.Errorf("stale, the large trace left: %d pending, %d and %d spans", n, spans(tl), spans(ts))
		}
		// A read builds it all the same.
		if err := b.settle(ctx, store.PendingFilter{TraceIDs: []string{tl}}); err != nil || spans(tl) != 2 {
			t.Errorf("settled: %d spans, %v", spans(tl), err)
		}
		// Quiet, it is built.
		b.leaveLater([]store.PendingBuild{{TraceID: tl, Spans: 1000}}, 10*time.Second)
		accept(large)
		build()
		if spans(tl) != 2 {
			t.Errorf("stale again: the large trace was built")
		}
		b.quiet = time.Millisecond
		buildNow()
		if n := b.backlog.Load(); n != 0 || spans(tl) != 3 {
			t.Errorf("quiet: %d pending, %d spans", n, spans(tl))
		}
		// Its time come, it is forgotten.
		b.later[tl] = time.Now().Add(-time.Second)
		if ids := b.leftLater(time.Now()); len(ids) != 0 || len(b.later) != 0 {
			t.Errorf("after its time: later %v", ids)
		}
	})
}
