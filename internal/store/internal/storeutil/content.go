package storeutil

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/trace"
)

// Trace content is the canonical JSON of the trace without its metadata (kept
// in a column of its own, for lists) and without annotations (kept in their
// own table). The name stays in the content, exact; the name column is a copy
// for lists, with what PostgreSQL's text cannot hold (NUL, invalid UTF-8)
// taken out. Content of CompressAbove bytes or more is stored compressed
// with zstd at its fastest level (github.com/klauspost/compress/zstd, pure
// Go); rows written before it are deflated (compress/flate at BestSpeed)
// and read as they are.
//
// Measured over the 244 traces the shared corpus decodes to (4.7 MB of
// content, mostly tau-bench traces of 8-32 KB) on the 2-core machine:
// go test -run XXX -bench Content ./internal/store/internal/storeutil
// deflate at BestSpeed stores 28.8% at 171 MB/s, zstd's fastest level
// 26.0% at 394 MB/s. On bench/peers' GenAI agent traces (36 KB of content
// a trace) zstd stores 12.0% (deflate 14.3%), compresses at 650 MB/s
// against 295 and decompresses at 1,700 MB/s against 380: deflate had been
// a tenth of the CPU of OTLP ingest. Leaving contents under 4 KiB plain
// keeps small rows within one SQLite page.
const CompressAbove = 4096

// Content encodings, kept in the rows beside the content.
const (
	EncPlain   = 0 // canonical JSON
	EncDeflate = 1 // canonical JSON, raw deflate (RFC 1951); written before EncZstd
	EncZstd    = 3 // canonical JSON, a zstd frame (RFC 8878)
	// EncAppended is a trace grown by appends (a gateway conversation, a
	// call at a time), kept as the parts written rather than decoded and
	// encoded whole on every append: parts, each uvarint(length),
	// byte(encoding: plain, deflate or zstd), data; the first is the trace as
	// EncodeContent stores it, each later one {"events": [...], "spans":
	// [...]} of what an append added, likewise encoded.
	EncAppended = 2
)

// CompactAbove: an append encodes the trace whole again, as one part, once
// the parts appended since the last whole encoding exceed this many bytes
// and twice the stored size of that encoding. Whole encodings then happen
// as the trace's size grows geometrically, so an append costs in
// proportion to what it adds, and a long trace stays mostly compressed.
const CompactAbove = 32 << 10

// AppendContent returns the stored form of a trace's content (content,
// stored with encoding enc) with events and spans appended; see
// EncAppended.
func AppendContent(content []byte, enc int, events []trace.Event, spans []trace.Span) ([]byte, int, error) {
	part, partEnc := EncodeContent(&trace.Trace{Events: events, Spans: spans})
	var out []byte
	switch enc {
	case EncPlain, EncDeflate, EncZstd:
		out = make([]byte, 0, len(content)+len(part)+2*binary.MaxVarintLen64)
		out = appendPart(out, content, enc)
	case EncAppended:
		first, _, rest, err := nextPart(content)
		if err != nil {
			return nil, 0, err
		}
		if tail := len(rest) + len(part); tail > CompactAbove && tail > 2*len(first) {
			t, err := DecodeContent(content, enc, nil)
			if err != nil {
				return nil, 0, err
			}
			t.Events = append(t.Events, events...)
			t.Spans = append(t.Spans, spans...)
			c, e := EncodeContent(t)
			return c, e, nil
		}
		out = make([]byte, 0, len(content)+len(part)+binary.MaxVarintLen64+1)
		out = append(out, content...)
	default:
		return nil, 0, fmt.Errorf("stored trace content: unknown encoding %d", enc)
	}
	return appendPart(out, part, partEnc), EncAppended, nil
}

func appendPart(b, data []byte, enc int) []byte {
	b = binary.AppendUvarint(b, uint64(len(data)))
	b = append(b, byte(enc))
	return append(b, data...)
}

// nextPart splits the first part off parts of appended content.
func nextPart(parts []byte) (data []byte, enc int, rest []byte, err error) {
	n, k := binary.Uvarint(parts)
	if k <= 0 || uint64(len(parts)-k) < n+1 {
		return nil, 0, nil, errors.New("stored trace content: a part of appended content is cut short")
	}
	enc = int(parts[k])
	if enc != EncPlain && enc != EncDeflate && enc != EncZstd {
		return nil, 0, nil, fmt.Errorf("stored trace content: a part of appended content has encoding %d", enc)
	}
	end := k + 1 + int(n)
	return parts[k+1 : end], enc, parts[end:], nil
}

// zstdMaxDecoded bounds what one stored content may decompress to: a row
// that claims more is an error, not an allocation.
const zstdMaxDecoded = 1 << 30

var (
	zstdEncoder = sync.OnceValue(func() *zstd.Encoder {
		e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)),
			zstd.WithLowerEncoderMem(true), zstd.WithEncoderCRC(false))
		if err != nil {
			panic(err) // only for invalid options
		}
		return e
	})
	zstdDecoder = sync.OnceValue(func() *zstd.Decoder {
		d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(runtime.GOMAXPROCS(0)), zstd.WithDecoderMaxMemory(zstdMaxDecoded))
		if err != nil {
			panic(err) // only for invalid options
		}
		return d
	})
)

// EncodeContent returns the stored form of t and its encoding.
func EncodeContent(t *trace.Trace) ([]byte, int) {
	c := *t
	c.Metadata, c.Annotations = nil, nil
	raw := trace.AppendTrace(Scratch(trace.SizeHint(&c)), &c)
	if len(raw) < CompressAbove {
		return raw, EncPlain
	}
	z := zstdEncoder().EncodeAll(raw, make([]byte, 0, len(raw)/4))
	if len(z) >= len(raw) {
		return raw, EncPlain
	}
	ReleaseScratch(raw)
	return z, EncZstd
}

// Scratch returns an empty buffer of at least n bytes' capacity, for bytes
// that are compressed and then dropped: one released (ReleaseScratch) is
// taken again. The uncompressed form of each built trace and of each
// request's spans was a tenth of the bytes the server allocated under
// bench/peers' load, each buffer zeroed when allocated.
func Scratch(n int) []byte {
	if p, ok := scratch.Get().(*[]byte); ok && cap(*p) >= n {
		return (*p)[:0]
	}
	return make([]byte, 0, n)
}

// ReleaseScratch gives b back for Scratch to return again: nothing may
// hold b, or any part of it, after.
func ReleaseScratch(b []byte) {
	if cap(b) > maxScratch {
		return
	}
	b = b[:0]
	scratch.Put(&b)
}

var scratch sync.Pool // of *[]byte

// maxScratch bounds the buffers kept: a rare large trace's is dropped.
const maxScratch = 1 << 20

var readers = sync.Pool{New: func() any { return flate.NewReader(nil) }}

// DecodeContent rebuilds a trace from its stored form and its metadata
// column.
func DecodeContent(data []byte, enc int, meta []byte) (*trace.Trace, error) {
	if enc == EncAppended {
		first, fenc, rest, err := nextPart(data)
		if err != nil {
			return nil, err
		}
		t, err := DecodeContent(first, fenc, meta)
		if err != nil {
			return nil, err
		}
		for len(rest) > 0 {
			var part []byte
			part, fenc, rest, err = nextPart(rest)
			if err != nil {
				return nil, err
			}
			p, err := DecodeContent(part, fenc, nil)
			if err != nil {
				return nil, err
			}
			t.Events = append(t.Events, p.Events...)
			t.Spans = append(t.Spans, p.Spans...)
		}
		return t, nil
	}
	switch enc {
	case EncPlain:
	case EncDeflate:
		r := readers.Get().(io.ReadCloser)
		r.(flate.Resetter).Reset(bytes.NewReader(data), nil)
		var buf bytes.Buffer
		buf.Grow(len(data) * 4)
		_, err := buf.ReadFrom(r)
		readers.Put(r)
		if err != nil {
			return nil, fmt.Errorf("stored trace content: %w", err)
		}
		data = buf.Bytes()
	case EncZstd:
		var err error
		if data, err = zstdDecoder().DecodeAll(data, make([]byte, 0, 8*len(data))); err != nil {
			return nil, fmt.Errorf("stored trace content: %w", err)
		}
	default:
		return nil, fmt.Errorf("stored trace content: unknown encoding %d", enc)
	}
	t := new(trace.Trace)
	if err := t.UnmarshalJSON(data); err != nil {
		return nil, fmt.Errorf("stored trace content: %w", err)
	}
	if meta != nil {
		t.Metadata = json.RawMessage(meta)
	}
	return t, nil
}

// Row is a trace ready to be written: everything a backend inserts.
type Row struct {
	ID         string
	Index      int64
	Given      *int64 // the index the trace came with
	Name       string // for lists: see ListName
	Metadata   []byte // nil for none
	Hierarchy  []byte // nil for none
	EventCount int
	Content    []byte
	Encoding   int
	Summary    []byte             // the digest, as EncodeDigest stores it
	Keys       Keys               // the digest's sort keys
	Anns       []store.Annotation // with ids and times set
}

// PrepareTraces checks and encodes a batch of new traces (on several cores
// when the batch is large), before any transaction starts.
func PrepareTraces(ts []store.NewTrace, now time.Time) ([]Row, error) {
	rows := make([]Row, len(ts))
	for i := range ts {
		nt := &ts[i]
		if nt.Trace == nil {
			return nil, fmt.Errorf("trace %d: no trace: %w", i, store.ErrInvalid)
		}
		if len(nt.Trace.Annotations) > 0 {
			return nil, fmt.Errorf("trace %d: annotations go in NewTrace.Annotations, not in the trace: %w", i, store.ErrInvalid)
		}
		if err := CheckObject(nt.Trace.Metadata, fmt.Sprintf("trace %d: metadata", i), true); err != nil {
			return nil, err
		}
		if nt.Trace.Index != nil && *nt.Trace.Index < 0 {
			return nil, fmt.Errorf("trace %d: negative index %d: %w", i, *nt.Trace.Index, store.ErrInvalid)
		}
		anns, err := PrepareAnnotations(nt.Annotations, "", now)
		if err != nil {
			return nil, fmt.Errorf("trace %d: %w", i, err)
		}
		rows[i] = Row{
			ID:         NewID(),
			Given:      nt.Trace.Index,
			Name:       ListName(nt.Trace.Name),
			Hierarchy:  HierarchyJSON(nt.Hierarchy),
			EventCount: len(nt.Trace.Events),
			Anns:       anns,
		}
		if nt.Trace.Metadata != nil {
			rows[i].Metadata = FixUTF8(nt.Trace.Metadata)
		}
		for j := range anns {
			anns[j].TraceID = rows[i].ID
		}
	}
	encode := func(i int) {
		rows[i].Content, rows[i].Encoding = EncodeContent(ts[i].Trace)
		d := StoredDigestOf(ts[i].Trace)
		rows[i].Summary, rows[i].Keys = EncodeDigest(d), KeysOf(d.Digest)
	}
	workers := min(runtime.GOMAXPROCS(0), len(ts)/8)
	if workers < 2 {
		for i := range ts {
			encode(i)
		}
		return rows, nil
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	nextJob := 0
	for range workers {
		wg.Go(func() {
			for {
				mu.Lock()
				i := nextJob
				nextJob++
				mu.Unlock()
				if i >= len(ts) {
					return
				}
				encode(i)
			}
		})
	}
	wg.Wait()
	return rows, nil
}

// PrepareAnnotations checks annotations and gives them ids and times; a
// traceID given is set on each.
func PrepareAnnotations(as []store.Annotation, traceID string, now time.Time) ([]store.Annotation, error) {
	if len(as) == 0 {
		return nil, nil
	}
	out := make([]store.Annotation, len(as))
	for i, a := range as {
		if err := CheckAnnotation(a, fmt.Sprintf("annotation %d", i)); err != nil {
			return nil, err
		}
		a.Extra = FixUTF8(a.Extra)
		a.ID = NewID()
		if traceID != "" {
			a.TraceID = traceID
		}
		a.CreatedAt, a.UpdatedAt = now, now
		out[i] = a
	}
	return out, nil
}

// CheckAnnotation checks what the store requires of an annotation.
func CheckAnnotation(a store.Annotation, what string) error {
	if a.Source == "" {
		return fmt.Errorf("%s: no source: %w", what, store.ErrInvalid)
	}
	for _, f := range [...]struct{ name, s string }{{"address", a.Address}, {"content", a.Content}, {"source", a.Source}, {"author", a.Author}} {
		if err := CheckText(what+": "+f.name, f.s); err != nil {
			return err
		}
	}
	return CheckObject(a.Extra, what+": extra", true)
}
