package otlp

import (
	"encoding/json"
	"reflect"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"time"

	"github.com/lookout-dev/lookout/internal/trace"
)

// TestBinaryRoundTrip: every field of a span survives AppendBinary and
// DecodeBinary, absent ones stay absent, and truncated input is an error.
func TestBinaryRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 24, 3, 4, 5, 123456789, time.UTC)
	full := Span{
		TraceID: "5b8efff798038103d269b633813fc60c", SpanID: "eee19b7ec3c1b174", ParentID: "aaa19b7ec3c1b175",
		Name: "chat gpt-4o", Kind: "client", Start: at, End: at.Add(time.Second), Status: "ERROR", StatusMessage: "boom",
		Attributes: []Attr{{"gen_ai.operation.name", json.RawMessage(`"chat"`)}, {"n", json.RawMessage(`12`)}, {"empty", json.RawMessage(`null`)}},
		Events:     []Event{{Name: "gen_ai.choice", Time: at, Attributes: []Attr{{"x", json.RawMessage(`{"a":[1,2]}`)}}}, {Name: "bare"}},
		Links:      []Link{{TraceID: "0af7651916cd43dd8448eb211c80319c", SpanID: "b7ad6b7169203331", Attributes: []Attr{{"k", json.RawMessage(`true`)}}}},
		Resource:   []Attr{{"service.name", json.RawMessage(`"agent"`)}},
		Scope:      Scope{Name: "openinference", Version: "1.2", Attributes: []Attr{{"s", json.RawMessage(`"v"`)}}},
		Input:      json.RawMessage(`{"messages":[]}`), Output: json.RawMessage(`""`), Type: "GENERATION",
		Extra: trace.Fields{{Key: "level", Value: json.RawMessage(`"DEFAULT"`)}},
	}
	before := Span{SpanID: "0000000000000001", Start: time.Unix(-62135596800, 0).UTC()} // year 1, a negative Unix time
	for name, sp := range map[string]Span{"every field": full, "almost nothing": {SpanID: "1"}, "an early time": before} {
		b := AppendBinary(nil, &sp)
		got, err := DecodeBinary(b)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(got, sp) {
			t.Errorf("%s: round trip\n got %+v\nwant %+v", name, got, sp)
		}
		// Cut anywhere but between top-level fields, the input is an error.
		bounds := map[int]bool{0: true}
		for at := 0; at < len(b); {
			_, _, n := protowire.ConsumeField(b[at:])
			at += n
			bounds[at] = true
		}
		for cut := 1; cut < len(b); cut++ {
			if _, err := DecodeBinary(b[:cut]); (err == nil) != bounds[cut] {
				t.Errorf("%s: %d of %d bytes: error %v", name, cut, len(b), err)
			}
		}
	}
}

// FuzzDecodeBinary: any bytes decode or fail without a panic, and what
// decodes writes back to a form that decodes the same.
func FuzzDecodeBinary(f *testing.F) {
	at := time.Date(2026, 11, 24, 3, 4, 5, 6, time.UTC)
	f.Add(AppendBinary(nil, &Span{TraceID: "5b8efff798038103d269b633813fc60c", SpanID: "eee19b7ec3c1b174", Name: "x", Start: at,
		Attributes: []Attr{{"k", json.RawMessage(`1`)}}, Events: []Event{{Name: "e", Time: at}}, Scope: Scope{Name: "s"}}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		sp, err := DecodeBinary(b)
		if err != nil {
			return
		}
		again, err := DecodeBinary(AppendBinary(nil, &sp))
		if err != nil || !reflect.DeepEqual(again, sp) {
			t.Fatalf("re-encoded span differs: %v\n%+v\n%+v", err, again, sp)
		}
	})
}
