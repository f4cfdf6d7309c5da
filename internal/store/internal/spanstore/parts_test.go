package spanstore

import (
	"bytes"
	"errors"
	"testing"

	"github.com/lookout-dev/lookout/internal/store"
)

// Packed spans read back as written, in order; a part of one span is not
// packed; a truncated or overlong part is an error, not a panic.
func TestSpanParts(t *testing.T) {
	spans := []store.StoredSpan{{SpanID: "a1", Data: []byte("first")}, {SpanID: "b2", Data: nil}, {SpanID: "c3", Data: bytes.Repeat([]byte{0xff}, 300)}}
	parts := partsOf([]TraceSpans{{"t1", spans}, {"t2", spans[:1]}, {"t3", nil}})
	if len(parts) != 2 || parts[1].SpanID != "a1" || string(parts[1].Data) != "first" || parts[0].SpanID != "" {
		t.Fatalf("parts: %+v", parts)
	}
	var got []store.StoredSpan
	if err := unpackSpans(parts[0].Data, func(id string, d []byte) { got = append(got, store.StoredSpan{SpanID: id, Data: d}) }); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(spans) {
		t.Fatalf("%d spans back, want %d", len(got), len(spans))
	}
	for i := range spans {
		if got[i].SpanID != spans[i].SpanID || !bytes.Equal(got[i].Data, spans[i].Data) {
			t.Errorf("span %d: %q %q, want %q %q", i, got[i].SpanID, got[i].Data, spans[i].SpanID, spans[i].Data)
		}
	}
	packed := parts[0].Data
	for n := 1; n < len(packed); n++ {
		err := unpackSpans(packed[:n], func(string, []byte) {})
		// A cut that falls between two spans reads as fewer spans.
		if err != nil && !errors.Is(err, errPacked) {
			t.Fatalf("cut at %d: %v", n, err)
		}
	}
	if err := unpackSpans([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, func(string, []byte) {}); !errors.Is(err, errPacked) {
		t.Errorf("overlong length: %v", err)
	}
	if err := unpackSpans(packed[:len(packed)-1], func(string, []byte) {}); !errors.Is(err, errPacked) {
		t.Errorf("last byte cut: %v", err)
	}
}
