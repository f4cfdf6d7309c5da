package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/lookout-dev/lookout/bench/benchproc"
	"github.com/lookout-dev/lookout/bench/otelgen"
)

// Jaeger, the peer: v1.76.0, the OpenTelemetry-collector-based binary,
// with its Badger storage on local disk, as cmd/jaeger/config-badger.yaml
// sets it up (OTLP receiver → batch processor → jaeger_storage_exporter;
// jaeger_query for reads), on free loopback ports.
const jaegerVersion = "v1.76.0"

// jaegerGoMod builds Jaeger from the module proxy. `go install
// …/cmd/jaeger@v1.76.0` refuses a module whose go.mod has replace
// directives, and Jaeger's has one (sarama): a throwaway module requires
// Jaeger and repeats it, so the build list is Jaeger's own.
const jaegerGoMod = `module lookoutbench/jaeger

go 1.24.6

require github.com/jaegertracing/jaeger ` + jaegerVersion + `

replace github.com/Shopify/sarama => github.com/Shopify/sarama v1.33.0
`

// ensureJaeger returns the Jaeger binary in the cache directory, built
// there first when missing.
func ensureJaeger(cache string) (string, error) {
	bin := filepath.Join(cache, "jaeger-"+jaegerVersion)
	if fi, err := os.Stat(bin); err == nil && fi.Mode().IsRegular() {
		return bin, nil
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "lookout-bench-jaeger-build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(jaegerGoMod), 0o644); err != nil {
		return "", err
	}
	fmt.Printf("building Jaeger %s from the Go module proxy into %s (once; minutes on 2 cores)\n", jaegerVersion, bin)
	t0 := time.Now()
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin+".tmp", "github.com/jaegertracing/jaeger/cmd/jaeger")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building Jaeger: %w\n%s", err, out)
	}
	if err := os.Rename(bin+".tmp", bin); err != nil {
		return "", err
	}
	fmt.Printf("built Jaeger in %s\n", time.Since(t0).Round(time.Second))
	return bin, nil
}

const jaegerConfig = `# Written by bench/peers, after Jaeger's cmd/jaeger/config-badger.yaml.
service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    resource:
      service.name: jaeger
    metrics:
      level: none
    logs:
      level: warn

extensions:
  jaeger_query:
    storage:
      traces: bench_store
    # Jaeger traces its own queries by default, to localhost:4317.
    enable_tracing: false
    http:
      endpoint: 127.0.0.1:%d
    grpc:
      endpoint: 127.0.0.1:%d

  jaeger_storage:
    backends:
      bench_store:
        badger:
          directories:
            keys: %q
            values: %q
          ephemeral: false
          ttl:
            spans: 48h

receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:%d

processors:
  batch:

exporters:
  jaeger_storage_exporter:
    trace_storage: bench_store
`

type jaegerTarget struct{}

func (jaegerTarget) start(ctx context.Context, b *bench, _ string) (server, error) {
	bin, err := b.jaeger()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "lookout-bench-jaeger-")
	if err != nil {
		return nil, err
	}
	var ports [3]int
	for i := range ports {
		if ports[i], err = benchproc.FreePort(); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	otlp, query, grpc := ports[0], ports[1], ports[2]
	cfg := fmt.Sprintf(jaegerConfig, query, grpc, filepath.Join(dir, "keys"), filepath.Join(dir, "values"), otlp)
	path := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	c, _, err := benchproc.Start("jaeger", exec.Command(bin, "--config", path), nil)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s := &jaegerServer{c: c, dir: dir, otlp: fmt.Sprintf("http://127.0.0.1:%d/v1/traces", otlp),
		query: fmt.Sprintf("http://127.0.0.1:%d", query)}
	// Ready when the query API answers and the receiver listens.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		err := c.Alive()
		if err == nil {
			_, err = getBody(ctx, s.query+"/api/services")
		}
		if err == nil {
			var conn net.Conn
			if conn, err = net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", otlp)); err == nil {
				conn.Close()
				return s, nil
			}
		}
		if c.Alive() != nil || time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("jaeger did not start: %v\n%s", err, c.Tail())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

type jaegerServer struct {
	c           *benchproc.Child
	dir         string
	otlp, query string
}

func (s *jaegerServer) otlpURL() string { return s.otlp }

func (s *jaegerServer) cpu() (cpuUse, error) {
	t, err := benchproc.ProcessCPU(s.c.PID())
	return cpuUse{server: t}, err
}

// jaegerTraces is the answer of Jaeger's query API (/api/traces...),
// what the bench reads of it.
type jaegerTraces struct {
	Data []struct {
		TraceID string     `json:"traceID"`
		Spans   []struct{} `json:"spans"`
	} `json:"data"`
}

// settle waits until the traces each exporter completed last are whole
// in Jaeger's query API: the receiver answers before the batch processor
// hands spans to storage, in the order they came.
func (s *jaegerServer) settle(ctx context.Context, l *otelgen.Load) error {
	left := l.Last
	for len(left) > 0 {
		if err := s.c.Alive(); err != nil {
			return err
		}
		var tr jaegerTraces
		err := getJSON(ctx, s.query+"/api/traces/"+otelgen.TraceHex(left[0]), &tr)
		var se *statusError
		switch {
		case err == nil && len(tr.Data) == 1 && len(tr.Data[0].Spans) == otelgen.TraceSpans:
			left = left[1:]
			continue
		case err == nil, errors.As(err, &se) && se.code == http.StatusNotFound:
		default:
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d traces still not readable: %w", len(left), ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// check counts the run's traces by service name, and their spans; should
// some be missing, it counts again for up to a minute, and says how much
// later they were all there (the end-to-end time did not wait for them).
func (s *jaegerServer) check(ctx context.Context, l *otelgen.Load) (string, error) {
	t0 := time.Now()
	first := -1 // whole traces at the first count
	for try := 1; ; try++ {
		t1 := time.Now()
		q := url.Values{
			"service": {l.Service},
			"limit":   {strconv.Itoa(l.Traces + 1000)},
			"start":   {strconv.FormatInt(l.Start.Add(-2*time.Minute).UnixMicro(), 10)},
			"end":     {strconv.FormatInt(time.Now().Add(time.Minute).UnixMicro(), 10)},
		}
		var tr jaegerTraces
		if err := getJSON(ctx, s.query+"/api/traces?"+q.Encode(), &tr); err != nil {
			return "", err
		}
		whole := 0
		for _, t := range tr.Data {
			if len(t.Spans) == otelgen.TraceSpans {
				whole++
			}
		}
		if first < 0 {
			first = whole
		}
		if len(tr.Data) == l.Traces && whole == l.Traces {
			msg := fmt.Sprintf("%d traces of %d spans found by service", whole, otelgen.TraceSpans)
			if try > 1 {
				msg += fmt.Sprintf(" (%d at the end-to-end time, all only %.1f s later)", first, t1.Sub(t0).Seconds())
			}
			return msg, nil
		}
		if len(tr.Data) > l.Traces || time.Since(t0) > time.Minute {
			return fmt.Sprintf("WARNING: %d traces of service %s (%d whole), %d were sent", len(tr.Data), l.Service, whole, l.Traces), nil
		}
		time.Sleep(time.Second)
	}
}

func (s *jaegerServer) stop() {
	s.c.Stop()
	os.RemoveAll(s.dir)
}

func getJSON(ctx context.Context, url string, v any) error {
	b, err := getBody(ctx, url)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	return nil
}
