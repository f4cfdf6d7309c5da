package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/lookout-dev/lookout/bench/benchproc"
	"github.com/lookout-dev/lookout/bench/otelgen"
)

// The floor: an OTLP/HTTP receiver that reads and decodes each request
// and answers 200, storing nothing: what receiving costs before any
// storage. It runs as a child process of the bench (-floor-server), so
// that its CPU time is read as the other servers' is.

// serveFloor is the -floor-server mode: it prints the address it serves
// and serves until killed.
func serveFloor() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	var spans atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var req tracepb.TracesData // the wire form of ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		n := 0
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				n += len(ss.Spans)
			}
		}
		spans.Add(int64(n))
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK) // an empty ExportTraceServiceResponse
	})
	mux.HandleFunc("GET /spans", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, spans.Load())
	})
	fmt.Printf("floor: serving http://%s\n", ln.Addr())
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	return hs.Serve(ln)
}

type floorTarget struct{}

func (floorTarget) start(ctx context.Context, _ *bench, _ string) (server, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	c, addr, err := benchproc.Start("floor", exec.Command(exe, "-floor-server"), func(line string) string {
		return benchproc.AfterPrefix(line, "floor: serving ")
	})
	if err != nil {
		return nil, err
	}
	return &floorServer{c: c, base: addr}, nil
}

type floorServer struct {
	c    *benchproc.Child
	base string
}

func (s *floorServer) otlpURL() string { return s.base + "/v1/traces" }

func (s *floorServer) cpu() (cpuUse, error) {
	t, err := benchproc.ProcessCPU(s.c.PID())
	return cpuUse{server: t}, err
}

// settle has nothing to wait for: the floor stores nothing.
func (s *floorServer) settle(ctx context.Context, l *otelgen.Load) error { return s.c.Alive() }

func (s *floorServer) check(ctx context.Context, l *otelgen.Load) (string, error) {
	b, err := getBody(ctx, s.base+"/spans")
	if err != nil {
		return "", err
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return "", err
	}
	if n != l.Spans {
		return "", fmt.Errorf("the floor decoded %d spans, %d were acknowledged", n, l.Spans)
	}
	return fmt.Sprintf("%d spans decoded", n), nil
}

func (s *floorServer) stop() { s.c.Stop() }

// getBody GETs url and returns the body of a 200 answer.
func getBody(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return b, &statusError{url, resp.StatusCode, b}
	}
	return b, nil
}

type statusError struct {
	url  string
	code int
	body []byte
}

func (e *statusError) Error() string {
	return fmt.Sprintf("GET %s: %d %.300s", e.url, e.code, e.body)
}
