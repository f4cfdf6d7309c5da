package main

import (
	"bytes"
	"compress/flate"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/lookout-dev/lookout/internal/formats/otlp"
	"github.com/lookout-dev/lookout/internal/trace"
)

func TestZZCodec(t *testing.T) {
	g := newGenerator(1, "agent-test", "tok7q2zx9")
	byTrace := map[string][]otlp.Span{}
	var order []string
	for range 20 {
		b := g.next()
		var req tracepb.TracesData
		proto.Unmarshal(b.body, &req)
		sp, _ := otlp.FromResourceSpans(req.ResourceSpans)
		for _, s := range sp {
			if _, ok := byTrace[s.TraceID]; !ok { order = append(order, s.TraceID) }
			byTrace[s.TraceID] = append(byTrace[s.TraceID], s)
		}
	}
	var raws [][]byte
	total := 0
	for _, id := range order {
		if len(byTrace[id]) != 20 { continue }
		ms, _ := otlp.MapSpans(byTrace[id])
		tr, _ := otlp.AssembleTrace(ms)
		raw := trace.AppendTrace(nil, tr)
		raws = append(raws, raw); total += len(raw)
	}
	t.Logf("%d traces, raw %d B/trace", len(raws), total/len(raws))
	fw, _ := flate.NewWriter(nil, flate.BestSpeed)
	zw, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1), zstd.WithLowerEncoderMem(true))
	zr, _ := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	type codec struct{ name string; enc func([]byte) []byte; dec func([]byte) []byte }
	codecs := []codec{
		{"flate1", func(b []byte) []byte { var buf bytes.Buffer; fw.Reset(&buf); fw.Write(b); fw.Close(); return buf.Bytes() },
			func(b []byte) []byte { var out bytes.Buffer; out.ReadFrom(flate.NewReader(bytes.NewReader(b))); return out.Bytes() }},
		{"zstd-fastest", func(b []byte) []byte { return zw.EncodeAll(b, nil) }, func(b []byte) []byte { o, _ := zr.DecodeAll(b, nil); return o }},
		{"s2", func(b []byte) []byte { return s2.Encode(nil, b) }, func(b []byte) []byte { o, _ := s2.Decode(nil, b); return o }},
		{"s2better", func(b []byte) []byte { return s2.EncodeBetter(nil, b) }, func(b []byte) []byte { o, _ := s2.Decode(nil, b); return o }},
	}
	for _, c := range codecs {
		var encs [][]byte
		t0 := time.Now(); sz := 0
		for r := 0; r < 5; r++ { encs = encs[:0]; sz = 0; for _, raw := range raws { e := c.enc(raw); encs = append(encs, append([]byte(nil), e...)); sz += len(e) } }
		te := time.Since(t0) / 5
		t1 := time.Now()
		for r := 0; r < 5; r++ { for _, e := range encs { c.dec(e) } }
		td := time.Since(t1) / 5
		t.Logf("%-13s ratio %.2f  enc %6.1f MB/s (%5.1f us/trace)  dec %6.1f MB/s (%5.1f us/trace)", c.name, float64(total)/float64(sz), float64(total)/te.Seconds()/1e6, float64(te.Microseconds())/float64(len(raws)), float64(total)/td.Seconds()/1e6, float64(td.Microseconds())/float64(len(raws)))
	}
}
