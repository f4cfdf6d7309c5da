package server

import (
	"strconv"
	"sync"
	"time"

	"github.com/lookout-dev/lookout/internal/trace"
	"github.com/lookout-dev/lookout/internal/usage"
)

// usageReaders are reused between requests: a reader keeps its buffers.
var usageReaders sync.Pool

// appendUsage writes a trace's usage (internal/usage) as the "usage" member
// of GET /traces/{id}?usage=1:
//
//	{"input_tokens", "output_tokens", "total_tokens", "cost", "cost_estimated",
//	 "unpriced_spans", "duration_ms", "models", "prices_as_of",
//	 "spans": {"<span id>": {"model", "input_tokens", "output_tokens",
//	   "total_tokens", "cost", "cost_estimated", "latency_ms", "aggregate"}}}
//
// Members a trace or span did not record are left out.
func appendUsage(b []byte, t *trace.Trace, prices *usage.Prices) []byte {
	r, _ := usageReaders.Get().(*usage.Reader)
	if r == nil {
		r = usage.NewReader(nil)
	}
	r.Prices = prices
	defer usageReaders.Put(r)

	b = append(b, '{')
	n := len(b)
	spansAt := -1
	var spans []byte
	tot := r.Totals(t, func(i int, u *usage.Span) {
		if spansAt < 0 {
			spansAt = 0
			spans = append(spans, `"spans":{`...)
		} else {
			spans = append(spans, ',')
		}
		spans = trace.AppendString(spans, t.Spans[i].ID)
		spans = append(spans, ':')
		spans = appendSpanUsage(spans, u)
	})
	comma := func() {
		if len(b) > n {
			b = append(b, ',')
		}
	}
	b = appendTokens(b, n, tot.Has, tot.Input, tot.Output, tot.Total)
	if tot.Has&usage.HasCost != 0 {
		comma()
		b = append(b, `"cost":`...)
		b = strconv.AppendFloat(b, tot.Cost, 'g', -1, 64)
		b = append(b, `,"cost_estimated":`...)
		b = strconv.AppendBool(b, tot.Has&usage.CostEstimated != 0)
	}
	if tot.Unpriced > 0 {
		comma()
		b = append(b, `"unpriced_spans":`...)
		b = strconv.AppendInt(b, int64(tot.Unpriced), 10)
	}
	if tot.Has&usage.HasDuration != 0 {
		comma()
		b = append(b, `"duration_ms":`...)
		b = appendMs(b, tot.Duration)
	}
	if len(tot.Models) > 0 {
		comma()
		b = append(b, `"models":[`...)
		for i, m := range tot.Models {
			if i > 0 {
				b = append(b, ',')
			}
			b = trace.AppendString(b, m)
		}
		b = append(b, ']')
	}
	if prices != nil && prices.AsOf != "" {
		comma()
		b = append(b, `"prices_as_of":`...)
		b = trace.AppendString(b, prices.AsOf)
	}
	if spansAt >= 0 {
		comma()
		b = append(b, spans...)
		b = append(b, '}')
	}
	return append(b, '}')
}

// appendTokens appends the token counts has names, as members of the
// object whose members start at b[n:].
func appendTokens(b []byte, n int, has uint8, in, out, total int64) []byte {
	for _, x := range []struct {
		bit  uint8
		name string
		v    int64
	}{{usage.HasInput, `"input_tokens":`, in}, {usage.HasOutput, `"output_tokens":`, out}, {usage.HasTotal, `"total_tokens":`, total}} {
		if has&x.bit != 0 {
			if len(b) > n {
				b = append(b, ',')
			}
			b = append(b, x.name...)
			b = strconv.AppendInt(b, x.v, 10)
		}
	}
	return b
}

func appendSpanUsage(b []byte, u *usage.Span) []byte {
	b = append(b, '{')
	n := len(b)
	comma := func() {
		if len(b) > n {
			b = append(b, ',')
		}
	}
	if u.Model != "" {
		b = append(b, `"model":`...)
		b = trace.AppendString(b, u.Model)
	}
	b = appendTokens(b, n, u.Has, u.Input, u.Output, u.Total)
	if u.Has&usage.HasCost != 0 {
		comma()
		b = append(b, `"cost":`...)
		b = strconv.AppendFloat(b, u.Cost, 'g', -1, 64)
		if u.Has&usage.CostEstimated != 0 {
			b = append(b, `,"cost_estimated":true`...)
		}
	}
	if u.Has&usage.HasLatency != 0 {
		comma()
		b = append(b, `"latency_ms":`...)
		b = appendMs(b, u.Latency)
	}
	if u.Has&usage.Aggregate != 0 {
		comma()
		b = append(b, `"aggregate":true`...)
	}
	return append(b, '}')
}

func appendMs(b []byte, d time.Duration) []byte {
	return strconv.AppendFloat(b, float64(d)/float64(time.Millisecond), 'f', -1, 64)
}
