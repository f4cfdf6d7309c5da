package main

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

// load is what one load run sent and how it went.
type load struct {
	service, token string
	start          time.Time
	elapsed        time.Duration // until the last answer
	spans          int64         // acknowledged with 200
	traces         int           // traces all of whose spans were acknowledged
	requests       int
	refused        int // 503 and 429 answers (the batch was sent again)
	lat            []time.Duration
	// last are the ids of the traces each exporter's last request
	// completed: the last to become readable.
	last [][]byte
}

func (l *load) quantile(p float64) time.Duration {
	if len(l.lat) == 0 {
		return 0
	}
	return l.lat[min(len(l.lat)-1, int(p*float64(len(l.lat))))]
}

// runLoad sends from n exporters for d, then each exporter sends the
// second parts of the traces it began, so that every trace is whole.
func runLoad(ctx context.Context, url string, n int, d time.Duration, service, token string, seed uint64) (*load, error) {
	tr := &http.Transport{MaxIdleConnsPerHost: n, MaxConnsPerHost: n, DisableCompression: true}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 5 * time.Minute}
	l := &load{service: service, token: token, start: time.Now()}
	deadline := l.start.Add(d)
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	for c := range n {
		wg.Go(func() {
			g := newGenerator(seed*1000+uint64(c), service, token)
			var lat []time.Duration
			var spans int64
			var traces, refused int
			var err error
			send := func(b batch) {
				var took []time.Duration
				var r int
				took, r, err = post(ctx, hc, url, b.body)
				lat = append(lat, took...)
				refused += r
				if err == nil {
					spans += int64(b.spans)
					traces += len(b.complete)
				}
			}
			for err == nil && time.Now().Before(deadline) {
				send(g.next())
			}
			var last batch
			if err == nil {
				if last = g.flush(); last.spans > 0 {
					send(last)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = err
			}
			l.lat = append(l.lat, lat...)
			l.spans += spans
			l.traces += traces
			l.refused += refused
			l.last = append(l.last, last.complete...)
		})
	}
	wg.Wait()
	l.elapsed = time.Since(l.start)
	if firstErr != nil {
		return nil, firstErr
	}
	l.requests = len(l.lat)
	slices.Sort(l.lat)
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
