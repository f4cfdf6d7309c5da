package invariant

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/lookout-dev/lookout/internal/jsonscan"
	"github.com/lookout-dev/lookout/internal/trace"
)

// Encoder writes Invariant Explorer JSONL: an optional dataset-metadata row
// {"metadata": {...}} first, then one line per trace:
//
//	{"messages": [...], "metadata"?, "annotations"?, "index"?, "name"?, "id"?, "spans"?, ...Extra}
//
// Events are written in their canonical shape (the OpenAI/Invariant one plus
// "span_id"), spans in canonical span JSON. The output is a file the
// Explorer accepts and that Decoder reads back into traces with the same
// canonical JSON. So that it stays so, Encode refuses a trace that would
// break an upload rule: "index" on some traces and not on others, an index
// used twice, or an Extra member that would be read back as a model field.
// Output is buffered: call Flush at the end.
type Encoder struct {
	w       io.Writer
	buf     []byte
	traces  int
	meta    bool
	index   int8 // 1: traces have an index; -1: they do not; 0: no trace yet
	indices map[int64]int
	err     error
}

// NewEncoder returns an encoder writing to w.
func NewEncoder(w io.Writer) *Encoder { return &Encoder{w: w} }

const flushSize = 256 << 10

// WriteDatasetMetadata writes the dataset-metadata row {"metadata": meta}.
// It must come before any trace and at most once; meta must be a JSON
// object. nil writes nothing.
func (e *Encoder) WriteDatasetMetadata(meta json.RawMessage) error {
	if e.err != nil {
		return e.err
	}
	if meta == nil {
		return nil
	}
	if e.meta {
		return fmt.Errorf("invariant: the dataset metadata row can appear at most once")
	}
	if e.traces > 0 {
		return fmt.Errorf("invariant: the dataset metadata row must be the first row, but %d traces were written before it", e.traces)
	}
	if firstByte(meta) != '{' || !jsonscan.Valid(meta) {
		return fmt.Errorf("invariant: dataset metadata must be a JSON object")
	}
	e.meta = true
	e.buf = append(e.buf, `{"metadata":`...)
	e.buf = jsonscan.AppendCompact(e.buf, meta)
	e.buf = append(e.buf, "}\n"...)
	return e.maybeFlush()
}

// traceKeys are the members of an Invariant trace object, which an Extra
// member cannot be written under.
var traceKeys = [...]string{"messages", "metadata", "annotations", "index", "name", "id", "spans"}

// Encode writes one trace as one line.
func (e *Encoder) Encode(t *trace.Trace) error {
	if e.err != nil {
		return e.err
	}
	if err := e.check(t); err != nil {
		return err
	}
	start := len(e.buf)
	b := append(e.buf, `{"messages":`...)
	b = trace.AppendEvents(b, t.Events)
	if t.Metadata != nil {
		b = append(b, `,"metadata":`...)
		b = append(b, t.Metadata...)
	}
	if len(t.Annotations) > 0 {
		b = append(b, `,"annotations":`...)
		b = trace.AppendAnnotations(b, t.Annotations)
	}
	if t.Index != nil {
		b = append(b, `,"index":`...)
		b = strconv.AppendInt(b, *t.Index, 10)
	}
	if t.Name != "" {
		b = append(b, `,"name":`...)
		b = trace.AppendString(b, t.Name)
	}
	if t.ID != "" {
		b = append(b, `,"id":`...)
		b = trace.AppendString(b, t.ID)
	}
	if len(t.Spans) > 0 {
		b = append(b, `,"spans":`...)
		b = trace.AppendSpans(b, t.Spans)
	}
	for _, f := range t.Extra {
		if written(t, f.Key) {
			continue // the model's own member wins, as in canonical JSON
		}
		b = append(b, ',')
		b = trace.AppendString(b, f.Key)
		b = append(b, ':')
		b = append(b, f.Value...)
	}
	b = append(b, '}')
	// Raw values are compact in the model; one that is not would break the
	// line apart.
	if i := bytes.IndexByte(b[start:], '\n'); i >= 0 {
		e.buf = b[:start]
		return fmt.Errorf("invariant: trace %d holds raw JSON that is not compact (a line break at byte %d of its line)", e.traces, i)
	}
	e.buf = append(b, '\n')
	e.commit(t)
	return e.maybeFlush()
}

// written reports whether Encode wrote key from the model.
func written(t *trace.Trace, key string) bool {
	switch key {
	case "messages":
		return true
	case "metadata":
		return t.Metadata != nil
	case "annotations":
		return len(t.Annotations) > 0
	case "index":
		return t.Index != nil
	case "name":
		return t.Name != ""
	case "id":
		return t.ID != ""
	case "spans":
		return len(t.Spans) > 0
	}
	return false
}

// check refuses a trace whose line would not decode back to it, or that
// would make the file break an Explorer upload rule.
func (e *Encoder) check(t *trace.Trace) error {
	if t.Metadata != nil && (firstByte(t.Metadata) != '{') {
		return fmt.Errorf("invariant: trace %d: metadata must be a JSON object", e.traces)
	}
	for _, f := range t.Extra {
		for _, k := range traceKeys {
			if f.Key != k {
				continue
			}
			// An Extra member under a trace key is dropped where the model
			// has that member (canonical JSON drops it too) but would be
			// read back as the model's field where it has not.
			if k == "messages" || !written(t, k) {
				return fmt.Errorf("invariant: trace %d: extra member %q cannot be written: it would be read back as the trace's own %q", e.traces, k, k)
			}
		}
	}
	for i := range t.Spans {
		sp := &t.Spans[i]
		if !sp.Start.IsZero() && !writableYear(sp.Start) || !sp.End.IsZero() && !writableYear(sp.End) {
			return fmt.Errorf("invariant: trace %d: span %q has a time outside the years 0000-9999 in UTC, which RFC 3339 cannot write", e.traces, sp.ID)
		}
	}
	has := int8(-1)
	if t.Index != nil {
		has = 1
	}
	if e.index != 0 && e.index != has {
		if has > 0 {
			return fmt.Errorf("invariant: trace %d has an index but the traces before it have none; the Explorer requires \"index\" on every trace or on none", e.traces)
		}
		return fmt.Errorf("invariant: trace %d has no index but the traces before it have one; the Explorer requires \"index\" on every trace or on none", e.traces)
	}
	if t.Index != nil {
		if prev, dup := e.indices[*t.Index]; dup {
			return fmt.Errorf("invariant: trace %d: duplicate index %d (trace %d has it too)", e.traces, *t.Index, prev)
		}
	}
	return nil
}

// commit records a written trace for the index rules.
func (e *Encoder) commit(t *trace.Trace) {
	if t.Index != nil {
		e.index = 1
		if e.indices == nil {
			e.indices = make(map[int64]int)
		}
		e.indices[*t.Index] = e.traces
	} else {
		e.index = -1
	}
	e.traces++
}

func (e *Encoder) maybeFlush() error {
	if len(e.buf) >= flushSize {
		return e.Flush()
	}
	return nil
}

// Flush writes what is buffered.
func (e *Encoder) Flush() error {
	if e.err != nil {
		return e.err
	}
	if len(e.buf) > 0 {
		_, err := e.w.Write(e.buf)
		e.buf = e.buf[:0]
		if err != nil {
			e.err = fmt.Errorf("invariant: write: %w", err)
			return e.err
		}
	}
	return nil
}

// writableYear reports whether RFC 3339 can write t once in UTC, as
// canonical JSON does: only four-digit years.
func writableYear(t time.Time) bool {
	y := t.UTC().Year()
	return y >= 0 && y <= 9999
}
