package spanstore

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/klauspost/compress/s2"

	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/internal/storeutil"
)

// Spans are stored in parts: a row per trace and request, not per span.
// A part holds one span (SpanID set, Data its mapped form), several
// packed (SpanID "", Data from packSpans), or, from compressAbove bytes,
// spans packed and compressed (SpanID compressedSpans). Parts are read in
// the order they were written, a later span replacing one of the same
// id, so that a span sent again (an exporter's retry) is taken as sent
// last. A row per span cost a B-tree descent and a statement's row a
// span, to write and to read: a quarter of the write path under OTLP
// load.

// SpanPart is one stored row of a trace's spans.
type SpanPart struct {
	TraceID string
	SpanID  string // "": Data packs several spans; compressedSpans: compressed
	Data    []byte
}

// compressedSpans is the SpanID of a part whose Data is packed spans
// compressed with S2 (github.com/klauspost/compress/s2), 4 times smaller
// on agents' spans. The release before this one reads such parts and
// writes none (so that it can run beside this one, or after it in a
// rollback); this one writes them, and migration 00023 records the
// format in stored_formats. No span has this id: OpenTelemetry's are 16
// hex digits, and a span of any other id that would be a part alone is
// packed instead (partOf).
const compressedSpans = ":s2"

// maxUnpacked bounds what one compressed part may decompress to, so that a
// damaged row cannot ask for any amount of memory: a part holds the
// spans of one trace in one request, whose body is 64 MiB by default.
const maxUnpacked = 1 << 30

// compressAbove is the size from which a part's spans are compressed: S2
// saves little on less, and a part that small costs little to write.
const compressAbove = 256

// partsOf makes the rows of traces' spans: a part a trace.
func partsOf(spans []TraceSpans) []SpanPart {
	parts := make([]SpanPart, 0, len(spans))
	for _, ts := range spans {
		if len(ts.Spans) > 0 {
			parts = append(parts, partOf(ts.TraceID, ts.Spans))
		}
	}
	return parts
}

// partOf makes the row of one trace's spans (at least one): compressed
// from compressAbove bytes when that saves an eighth, else packed, or the
// span alone.
func partOf(traceID string, spans []store.StoredSpan) SpanPart {
	alone := len(spans) == 1 && spans[0].SpanID != compressedSpans
	if alone && len(spans[0].Data) < compressAbove {
		return SpanPart{traceID, spans[0].SpanID, spans[0].Data}
	}
	packed := packSpans(spans)
	if len(packed) >= compressAbove {
		if z := s2.Encode(nil, packed); len(z) <= len(packed)-len(packed)/8 {
			storeutil.ReleaseScratch(packed)
			return SpanPart{traceID, compressedSpans, z}
		}
	}
	if alone {
		storeutil.ReleaseScratch(packed)
		return SpanPart{traceID, spans[0].SpanID, spans[0].Data}
	}
	return SpanPart{TraceID: traceID, Data: packed}
}

// packSpans packs spans: for each, its id's length and id, its data's
// length and data (lengths as uvarints).
func packSpans(spans []store.StoredSpan) []byte {
	n := 0
	for _, sp := range spans {
		n += 2*binary.MaxVarintLen64 + len(sp.SpanID) + len(sp.Data)
	}
	b := storeutil.Scratch(n)
	for _, sp := range spans {
		b = binary.AppendUvarint(b, uint64(len(sp.SpanID)))
		b = append(b, sp.SpanID...)
		b = binary.AppendUvarint(b, uint64(len(sp.Data)))
		b = append(b, sp.Data...)
	}
	return b
}

// CompressedPart is the SpanID and Data of a part holding spans packed and
// compressed, whatever their size (tests put such parts in the database).
func CompressedPart(spans []store.StoredSpan) (spanID string, data []byte) {
	return compressedSpans, s2.Encode(nil, packSpans(spans))
}

var errPacked = errors.New("malformed packed spans")

// errDamaged is a trace's stored spans that do not unpack: the trace
// cannot be built, and fails alone rather than every build with it.
var errDamaged = errors.New("a stored part of its spans is damaged")

// unpackPart calls fn with each span of a stored part (SpanID and Data as
// read), their data subslices of data or of its decompressed form.
func unpackPart(spanID string, data []byte, fn func(id string, data []byte)) error {
	switch spanID {
	case "":
		return unpackSpans(data, fn)
	case compressedSpans:
		n, err := s2.DecodedLen(data)
		if err != nil {
			return fmt.Errorf("compressed spans: %w", err)
		}
		if n > maxUnpacked {
			return fmt.Errorf("compressed spans: %d bytes decompressed, more than %d", n, maxUnpacked)
		}
		packed, err := s2.Decode(make([]byte, n), data)
		if err != nil {
			return fmt.Errorf("compressed spans: %w", err)
		}
		return unpackSpans(packed, fn)
	default:
		fn(spanID, data)
		return nil
	}
}

// unpackSpans calls fn with each span of a packed part, its data a
// subslice of b.
func unpackSpans(b []byte, fn func(id string, data []byte)) error {
	for i := 0; len(b) > 0; i++ {
		id, rest, ok := cut(b)
		if !ok {
			return fmt.Errorf("span %d: id: %w", i, errPacked)
		}
		data, rest, ok := cut(rest)
		if !ok {
			return fmt.Errorf("span %d: data: %w", i, errPacked)
		}
		fn(string(id), data)
		b = rest
	}
	return nil
}

// cut reads a length and that many bytes.
func cut(b []byte) (field, rest []byte, ok bool) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return nil, nil, false
	}
	return b[k : k+int(n)], b[k+int(n):], true
}
