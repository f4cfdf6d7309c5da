package otlp

import (
	"fmt"
	"strings"
	"testing"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// batch is an OTLP/JSON request of n traces shaped like otlpJSON (3 spans
// each: an agent, a chat call with GenAI messages, a tool call).
func batch(n int) []byte {
	i := strings.Index(otlpJSON, `"spans": [`) + len(`"spans": [`)
	j := strings.LastIndex(otlpJSON, "]}]}]}")
	spans := otlpJSON[i:j]
	var b strings.Builder
	b.WriteString(otlpJSON[:i])
	for k := range n {
		if k > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strings.ReplaceAll(spans, tid, fmt.Sprintf("%032x", k+1)))
	}
	b.WriteString(otlpJSON[j:])
	return []byte(b.String())
}

// BenchmarkOTLPJSON parses an OTLP/JSON request of 512 spans and maps it,
// as a receiver does.
func BenchmarkOTLPJSON(b *testing.B) {
	body := batch(512 / 3)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	spans := 0
	for b.Loop() {
		s, err := ParseJSON(body)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Map(s); err != nil {
			b.Fatal(err)
		}
		spans += len(s)
	}
	b.ReportMetric(float64(spans)/b.Elapsed().Seconds(), "spans/s")
}

// BenchmarkOTLPProto unmarshals the same request as protobuf and maps it.
func BenchmarkOTLPProto(b *testing.B) {
	s, err := ParseJSON(batch(512 / 3))
	if err != nil {
		b.Fatal(err)
	}
	var rs []*tracepb.ResourceSpans
	for k := 0; k < len(s); k += 3 {
		one := otlpProto(b)
		for _, sp := range one[0].ScopeSpans[0].Spans {
			sp.TraceId = hexBytes(b, s[k].TraceID)
		}
		rs = append(rs, one...)
	}
	wire, err := proto.Marshal(&tracepb.TracesData{ResourceSpans: rs})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(wire)))
	b.ReportAllocs()
	spans := 0
	for b.Loop() {
		var td tracepb.TracesData
		if err := proto.Unmarshal(wire, &td); err != nil {
			b.Fatal(err)
		}
		s, err := FromResourceSpans(td.ResourceSpans)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Map(s); err != nil {
			b.Fatal(err)
		}
		spans += len(s)
	}
	b.ReportMetric(float64(spans)/b.Elapsed().Seconds(), "spans/s")
}
