package otelgen

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// Load is what one load run sent and how it went.
type Load struct {
	Service, Token string
	Start          time.Time
	Elapsed        time.Duration // until the last answer
	Spans          int64         // acknowledged with 200
	Traces         int           // traces all of whose spans were acknowledged
	Requests       int
	Refused        int // 503 and 429 answers (the batch was sent again)
	Lat            []time.Duration
	// Last are the ids of the traces each exporter's last request
	// completed: the last to become readable.
	Last [][]byte
}

// Quantile is the p quantile (0 to 1) of the request latencies.
func (l *Load) Quantile(p float64) time.Duration {
	if len(l.Lat) == 0 {
		return 0
	}
	return l.Lat[min(len(l.Lat)-1, int(p*float64(len(l.Lat))))]
}

// RunLoad sends from n exporters for d, then each exporter sends the
// second parts of the traces it began, so that every trace is whole.
// With several urls each exporter sends each request to the next of them,
// as a balancer without affinity would: a trace's two parts reach
// different servers.
func RunLoad(ctx context.Context, urls []string, n int, d time.Duration, service, token string, seed uint64) (*Load, error) {
	tr := &http.Transport{MaxIdleConnsPerHost: n, MaxConnsPerHost: n, DisableCompression: true}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 5 * time.Minute}
	l := &Load{Service: service, Token: token, Start: time.Now()}
	deadline := l.Start.Add(d)
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	for c := range n {
		wg.Go(func() {
			g := NewGenerator(seed*1000+uint64(c), service, token)
			var lat []time.Duration
			var spans int64
			var traces, refused int
			var err error
			next := c
			send := func(b Batch) {
				var took []time.Duration
				var r int
				took, r, err = post(ctx, hc, urls[next%len(urls)], b.Body)
				next++
				lat = append(lat, took...)
				refused += r
				if err == nil {
					spans += int64(b.Spans)
					traces += len(b.Complete)
				}
			}
			for err == nil && time.Now().Before(deadline) {
				send(g.Next())
			}
			var last Batch
			if err == nil {
				if last = g.Flush(); last.Spans > 0 {
					send(last)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = err
			}
			l.Lat = append(l.Lat, lat...)
			l.Spans += spans
			l.Traces += traces
			l.Refused += refused
			l.Last = append(l.Last, last.Complete...)
		})
	}
	wg.Wait()
	l.Elapsed = time.Since(l.Start)
	if firstErr != nil {
		return nil, firstErr
	}
	l.Requests = len(l.Lat)
	slices.Sort(l.Lat)
	return l, nil
}

// post sends one request until it is taken, as an exporter does: a 503 or
// 429 is sent again after its Retry-After. It returns the latency of the
// answer that took it and how many refusals came before.
func post(ctx context.Context, hc *http.Client, url string, body []byte) ([]time.Duration, int, error) {
	var lat []time.Duration
	for refused := 0; ; refused++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return lat, refused, err
		}
		req.Header.Set("Content-Type", "application/x-protobuf")
		t0 := time.Now()
		resp, err := hc.Do(req)
		if err != nil {
			return lat, refused, err
		}
		msg, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		took := time.Since(t0)
		if err != nil {
			return lat, refused, err
		}
		switch resp.StatusCode {
		case http.StatusOK:
			lat = append(lat, took)
			if n, why := rejected(msg); n > 0 {
				return lat, refused, fmt.Errorf("%d spans rejected: %s", n, why)
			}
			return lat, refused, nil
		case http.StatusServiceUnavailable, http.StatusTooManyRequests:
			wait := time.Second
			if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s >= 0 {
				wait = min(time.Duration(s)*time.Second, 10*time.Second)
			}
			select {
			case <-ctx.Done():
				return lat, refused, ctx.Err()
			case <-time.After(wait):
			}
		default:
			return lat, refused, fmt.Errorf("%s answered %d: %.300s", url, resp.StatusCode, msg)
		}
	}
}

// rejected reads an ExportTraceServiceResponse's partial_success
// (field 1: rejected_spans = 1, error_message = 2).
func rejected(msg []byte) (int64, string) {
	var n int64
	var why string
	for len(msg) > 0 {
		num, typ, l := protowire.ConsumeTag(msg)
		if l < 0 {
			return 0, ""
		}
		msg = msg[l:]
		if num == 1 && typ == protowire.BytesType {
			ps, l := protowire.ConsumeBytes(msg)
			if l < 0 {
				return 0, ""
			}
			msg = msg[l:]
			for len(ps) > 0 {
				num, typ, l := protowire.ConsumeTag(ps)
				if l < 0 {
					break
				}
				ps = ps[l:]
				switch {
				case num == 1 && typ == protowire.VarintType:
					v, l := protowire.ConsumeVarint(ps)
					if l < 0 {
						return n, why
					}
					n, ps = int64(v), ps[l:]
				case num == 2 && typ == protowire.BytesType:
					v, l := protowire.ConsumeBytes(ps)
					if l < 0 {
						return n, why
					}
					why, ps = string(v), ps[l:]
				default:
					l := protowire.ConsumeFieldValue(num, typ, ps)
					if l < 0 {
						return n, why
					}
					ps = ps[l:]
				}
			}
			continue
		}
		l = protowire.ConsumeFieldValue(num, typ, msg)
		if l < 0 {
			return 0, ""
		}
		msg = msg[l:]
	}
	return n, why
}
