package spanstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/lookout-dev/lookout/internal/store"
)

// Packed spans read back as written, in order; a part of one span is not
// packed; a truncated or overlong part is an error, not a panic.
func TestSpanParts(t *testing.T) {
	spans := []store.StoredSpan{{SpanID: "a1", Data: []byte("first")}, {SpanID: "b2", Data: nil}, {SpanID: "c3", Data: bytes.Repeat([]byte{0xff}, compressAbove/2)}}
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

// A compressed part reads back as the spans packed in it; a span whose id
// is the mark of compressed parts is never written alone under it; a
// damaged compressed part, or one that would decompress past the bound,
// is an error.
func TestCompressedParts(t *testing.T) {
	spans := []store.StoredSpan{{SpanID: "a1", Data: bytes.Repeat([]byte("agent text "), 100)}, {SpanID: "b2", Data: []byte("second")}}
	id, data := CompressedPart(spans)
	if len(data) >= len(packSpans(spans)) {
		t.Errorf("compressed %d bytes, packed %d", len(data), len(packSpans(spans)))
	}
	var got []store.StoredSpan
	if err := unpackPart(id, data, func(id string, d []byte) { got = append(got, store.StoredSpan{SpanID: id, Data: d}) }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].SpanID != "a1" || !bytes.Equal(got[0].Data, spans[0].Data) || got[1].SpanID != "b2" || string(got[1].Data) != "second" {
		t.Errorf("read back: %+v", got)
	}
	parts := partsOf([]TraceSpans{{"t1", []store.StoredSpan{{SpanID: compressedSpans, Data: []byte("x")}}}})
	if len(parts) != 1 || parts[0].SpanID != "" {
		t.Fatalf("a span of the mark's id alone: %+v", parts)
	}
	got = nil
	if err := unpackPart(parts[0].SpanID, parts[0].Data, func(id string, d []byte) { got = append(got, store.StoredSpan{SpanID: id, Data: d}) }); err != nil || len(got) != 1 || got[0].SpanID != compressedSpans {
		t.Errorf("read back: %+v, %v", got, err)
	}
	for _, bad := range [][]byte{data[:len(data)/2], {0xff}} {
		if err := unpackPart(compressedSpans, bad, func(string, []byte) {}); err == nil {
			t.Errorf("%d damaged bytes read without an error", len(bad))
		}
	}
	huge := append(binary.AppendUvarint(nil, maxUnpacked+1), data[1:]...)
	if err := unpackPart(compressedSpans, huge, func(string, []byte) {}); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("a part past the bound: %v", err)
	}
}

// Parts are written compressed from compressAbove bytes when that saves
// an eighth; below, or when S2 saves less, packed as before (or alone).
func TestPartsWritten(t *testing.T) {
	text := bytes.Repeat([]byte("agent text "), 40)
	noise := make([]byte, 2*compressAbove)
	for i := range noise {
		noise[i] = byte(i*7919>>3) ^ byte(i*31)
	}
	cases := []struct {
		name   string
		spans  []store.StoredSpan
		spanID string // of the part written
	}{
		{"one small span", []store.StoredSpan{{SpanID: "a1", Data: []byte("first")}}, "a1"},
		{"one large span", []store.StoredSpan{{SpanID: "a1", Data: text}}, compressedSpans},
		{"one large span S2 cannot shrink", []store.StoredSpan{{SpanID: "a1", Data: noise}}, "a1"},
		{"small spans", []store.StoredSpan{{SpanID: "a1", Data: []byte("x")}, {SpanID: "b2", Data: []byte("y")}}, ""},
		{"large spans", []store.StoredSpan{{SpanID: "a1", Data: text}, {SpanID: "b2", Data: []byte("y")}}, compressedSpans},
		{"large spans S2 cannot shrink", []store.StoredSpan{{SpanID: "a1", Data: noise}, {SpanID: "b2", Data: []byte("y")}}, ""},
	}
	// Each part is read back once all are made (twice over): a buffer
	// given back for reuse while a part holds it would be written over.
	var parts []SpanPart
	for range 2 {
		for _, c := range cases {
			parts = append(parts, partOf("t", c.spans))
		}
	}
	for k, p := range parts {
		c := cases[k%len(cases)]
		if p.SpanID != c.spanID || p.TraceID != "t" {
			t.Errorf("%s: written as %q of %q, want %q", c.name, p.SpanID, p.TraceID, c.spanID)
		}
		var got []store.StoredSpan
		if err := unpackPart(p.SpanID, p.Data, func(id string, d []byte) { got = append(got, store.StoredSpan{SpanID: id, Data: d}) }); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if len(got) != len(c.spans) {
			t.Fatalf("%s: %d spans back, want %d", c.name, len(got), len(c.spans))
		}
		for i := range got {
			if got[i].SpanID != c.spans[i].SpanID || !bytes.Equal(got[i].Data, c.spans[i].Data) {
				t.Errorf("%s: span %d read back as %q", c.name, i, got[i].SpanID)
			}
		}
	}
}
