package server

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/lookout-dev/lookout/internal/store/postgres"
	"github.com/lookout-dev/lookout/internal/store/postgres/pgtest"
)

// logLines is a log the server writes from many goroutines.
type logLines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// count is how many lines hold s.
func (l *logLines) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.buf.String(), s)
}

// TestDatabaseDown: a server over PostgreSQL whose database stops answers
// every request that needs it 503 with Retry-After (OTLP/HTTP in protobuf
// and JSON, OTLP/gRPC with UNAVAILABLE, a push, a read, readyz), which exporters
// retry; once the database is back the same requests succeed without a
// restart of the server, and the background builder of traces from spans,
// which waited the outage out, builds again.
func TestDatabaseDown(t *testing.T) {
	ctx := context.Background()
	cl := pgtest.NewCluster(t)
	st, err := postgres.Open(ctx, cl.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() }) // after the server's own cleanups
	logs := &logLines{}
	f := newFixture(t, st, Config{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	f.addUser("alice")
	dataset := f.createDataset("alice", "kept", false)

	// gRPC, as in TestOTLPTransports.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var protocols http.Protocols
	protocols.SetUnencryptedHTTP2(true)
	gs := &http.Server{Handler: f.srv.OTLPGRPC(), Protocols: &protocols}
	go gs.Serve(ln)
	defer gs.Close()
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var exportReq coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(otlpProto("agent", agentSpans()), &exportReq); err != nil {
		t.Fatal(err)
	}
	grpcExport := func() error {
		md := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+f.keys["alice"], "x-lookout-dataset", "via-grpc")
		_, err := coltracepb.NewTraceServiceClient(conn).Export(md, &exportReq)
		return err
	}

	// The requests, each with its answer when the database is up.
	const pushBody = `{"dataset": "kept", "messages": [[{"role": "user", "content": "hello"}]]}`
	requests := []struct {
		name string
		ok   int
		do   func() response
	}{
		{"OTLP protobuf", 200, func() response {
			return f.do("POST", "/v1/traces", "alice", bytes.NewReader(otlpProto("agent", agentSpans())),
				"Content-Type", "application/x-protobuf", "X-Lookout-Dataset", "via-proto")
		}},
		{"OTLP JSON", 200, func() response {
			return f.do("POST", "/v1/traces", "alice", bytes.NewReader(otlpJSON("agent", agentSpans())),
				"Content-Type", "application/json", "X-Lookout-Dataset", "via-json")
		}},
		{"push", 200, func() response { return f.doJSON("POST", "/api/v1/push/trace", "alice", pushBody) }},
		{"dataset", 200, func() response { return f.doJSON("GET", "/api/v1/datasets/"+dataset, "alice", "") }},
		{"traces", 200, func() response { return f.doJSON("GET", "/api/v1/datasets/"+dataset+"/traces", "alice", "") }},
		{"readyz", 200, func() response { return f.do("GET", "/readyz", "", nil) }},
	}
	for _, rq := range requests {
		if r := rq.do(); r.status != rq.ok {
			t.Fatalf("%s with the database up: %d %s", rq.name, r.status, r.body)
		}
	}
	if err := grpcExport(); err != nil {
		t.Fatalf("gRPC export with the database up: %v", err)
	}

	cl.Stop(t)
	// Twice: first on the pool's connections the shutdown ended, then
	// on connection attempts refused.
	for round := range 2 {
		for _, rq := range requests {
			r := rq.do()
			var body struct {
				Error struct{ Code, Message string }
			}
			json.Unmarshal(r.body, &body)
			if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") != "5" ||
				body.Error.Code != "unavailable" || !strings.Contains(body.Error.Message, "database is unreachable") {
				t.Errorf("%s with the database down (round %d): %d, Retry-After %q, %s; want 503, Retry-After 5, unavailable",
					rq.name, round, r.status, r.header.Get("Retry-After"), r.body)
			}
		}
		if err := grpcExport(); status.Code(err) != codes.Unavailable || !strings.Contains(status.Convert(err).Message(), "database is unreachable") {
			t.Errorf("gRPC export with the database down (round %d): %v; want Unavailable", round, err)
		}
	}
	// The span builder meets the outage, says so once and waits it out.
	const builderDown = "the database is unreachable; retrying"
	waitFor(t, "the span builder to log the outage", func() bool { return logs.count(builderDown) > 0 })

	cl.Start(t)
	// The pool may hand out a connection it has not yet found dead: the
	// first request may still be 503; poll with a generous deadline.
	deadline := time.Now().Add(time.Minute)
	for {
		r := requests[0].do()
		if r.status == 200 {
			break
		}
		if r.status != http.StatusServiceUnavailable || time.Now().After(deadline) {
			t.Fatalf("OTLP protobuf after the database came back: %d %s", r.status, r.body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, rq := range requests {
		if r := rq.do(); r.status != rq.ok {
			t.Errorf("%s after the database came back: %d %s", rq.name, r.status, r.body)
		}
	}
	if err := grpcExport(); err != nil {
		t.Errorf("gRPC export after the database came back: %v", err)
	}
	// The background builder builds the spans just sent, with no read to
	// build them first.
	waitFor(t, "the span builder to build after the outage", func() bool {
		n, err := st.PendingSpanTraces(ctx)
		return err == nil && n == 0 && logs.count("the database is reachable again") > 0
	})
	if n := logs.count(builderDown); n != 1 {
		t.Errorf("the span builder logged the outage %d times, want once", n)
	}
	var page struct{ Traces []struct{ ID string } }
	f.must(200, "GET", "/api/v1/datasets/"+dataset+"/traces", "alice", "").json(t, &page)
	if len(page.Traces) != 2 { // a push before the outage, one after
		t.Errorf("dataset kept holds %d traces, want 2", len(page.Traces))
	}
}

// waitFor polls cond until it holds, failing the test after a minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited a minute for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
