package otlp

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"

	"github.com/lookout-dev/lookout/internal/formats/decoding"
	"github.com/lookout-dev/lookout/internal/jsonscan"
	"github.com/lookout-dev/lookout/internal/trace"
)

// NewDecoder returns a streaming decoder of OpenTelemetry files: OTLP JSON
// export requests, SDK span dumps and Langfuse trace exports (see the
// package documentation). file names r in errors.
func NewDecoder(r io.Reader, file string) decoding.Decoder {
	return &decoder{vr: decoding.NewValueReader(r, file), file: file}
}

type item struct {
	t   *trace.Trace
	err *decoding.Error
}

type decoder struct {
	vr    *decoding.ValueReader
	file  string
	index int // values read
	done  bool
	queue []item

	// Spans that may belong to traces continued in later values (OTLP
	// export requests, one SDK span per value) wait here until the end.
	pending    []located
	pendingLoc []loc
	badTraces  map[string]bool
	shape      string        // of the values gathered in pending
	dumpMeta   []trace.Field // members of a span dump beside its spans
	traceIndex int
}

// loc is where a span sits in the file.
type loc struct {
	line, col int
	path      string
	value     int
}

// cursor turns increasing offsets of one document into lines and columns
// in one pass.
type cursor struct {
	src       decoding.Source
	off       int
	line, col int // of off
}

func newCursor(src decoding.Source) *cursor {
	return &cursor{src: src, line: src.Line, col: src.Col}
}

func (c *cursor) at(off int) (line, col int) {
	if off < c.off {
		l, cl := jsonscan.LineCol(c.src.Data, off)
		if l == 1 {
			cl += c.src.Col - 1
		}
		return c.src.Line + l - 1, cl
	}
	seg := c.src.Data[c.off:min(off, len(c.src.Data))]
	if n := bytes.Count(seg, []byte{'\n'}); n > 0 {
		c.line += n
		c.col = len(seg) - bytes.LastIndexByte(seg, '\n')
	} else {
		c.col += len(seg)
	}
	c.off = off
	return c.line, c.col
}

// Next decodes the next trace. A trace that breaks a rule gives a
// recoverable error; JSON that does not parse is fatal.
func (d *decoder) Next() (*trace.Trace, error) {
	for {
		if len(d.queue) > 0 {
			it := d.queue[0]
			d.queue = d.queue[1:]
			if it.err != nil {
				return nil, it.err
			}
			return it.t, nil
		}
		if d.done {
			return nil, io.EOF
		}
		v, err := d.vr.Next(d.index)
		if err != nil {
			d.done = true
			if errors.Is(err, io.EOF) {
				d.flush()
				continue
			}
			d.pending = nil
			return nil, err // an *decoding.Error
		}
		d.index++
		if err := d.value(v); err != nil {
			d.done = true
			d.pending, d.queue = nil, nil
			return nil, err
		}
	}
}

// DatasetMetadata is always nil: these files have no dataset header.
func (d *decoder) DatasetMetadata() json.RawMessage { return nil }

// fatal turns a JSON syntax error into a fatal *decoding.Error.
func fatal(src decoding.Source, err error) *decoding.Error {
	return src.Wrap(err)
}

// value reads one top-level value.
func (d *decoder) value(v decoding.Value) *decoding.Error {
	// JSON that does not parse is fatal, wherever it is; shapeOf reads the
	// whole value.
	shape, err := shapeOf(v.Data)
	if err != nil {
		return fatal(v.Source, err)
	}
	if d.shape != "" && shape != d.shape {
		e := v.Source.Errorf(0, "$", "a %s value after %s values: a file holds one kind of OpenTelemetry data", shapeName(shape), shapeName(d.shape))
		return e
	}
	switch shape {
	case "otlp", "span", "spans":
		d.shape = shape
		d.gather(v, shape)
		if shape == "spans" {
			// A dump wrapper holds whole traces: map them now.
			d.flush()
			d.shape = ""
		}
		return nil
	case "langfuse":
		t, err := langfuseValue(v.Data)
		if err != nil {
			e := v.Source.Wrap(err)
			e.Trace, e.Recoverable = d.traceIndex, true
			d.traceIndex++
			d.queue = append(d.queue, item{err: e})
			return nil
		}
		d.traceIndex++
		d.queue = append(d.queue, item{t: t})
		return nil
	}
	e := v.Source.Errorf(0, "$", "not OpenTelemetry data: expected an OTLP export {\"resourceSpans\": [...]}, an SDK span dump ({\"spans\": [...]}, or span objects with \"context\"), or a Langfuse export {\"trace\", \"observations\"}")
	e.Trace, e.Recoverable = d.traceIndex, true
	d.traceIndex++
	d.queue = append(d.queue, item{err: e})
	return nil
}

func shapeName(s string) string {
	switch s {
	case "otlp":
		return "OTLP export"
	case "span":
		return "span"
	}
	return s
}

// shapeOf tells which kind of value data is from its top-level keys. It
// reads the whole value: an error is JSON that does not parse.
func shapeOf(data []byte) (string, error) {
	s := jsonscan.New(data)
	var keys map[string]bool
	switch s.Peek() {
	case jsonscan.Array:
		if err := s.Skip(); err != nil {
			return "", err
		}
		return "spans", s.End()
	case jsonscan.Object:
		keys = map[string]bool{}
		err := s.Object(func(k string) error {
			keys[k] = true
			return s.Skip()
		})
		if err != nil {
			return "", err
		}
	default:
		if err := s.Skip(); err != nil {
			return "", err
		}
	}
	if err := s.End(); err != nil {
		return "", err
	}
	switch {
	case keys["resourceSpans"] || keys["resource_spans"]:
		return "otlp", nil
	case keys["observations"] && keys["trace"]:
		return "langfuse", nil
	case keys["spans"]:
		return "spans", nil
	case keys["context"] || keys["span_id"] && keys["trace_id"]:
		return "span", nil
	}
	return "", nil
}

// gather reads the spans of one value into pending.
func (d *decoder) gather(v decoding.Value, shape string) {
	cur := newCursor(v.Source)
	add := func(l located) {
		line, col := cur.at(l.off)
		d.pending = append(d.pending, l)
		d.pendingLoc = append(d.pendingLoc, loc{line: line, col: col, path: l.path, value: v.Index})
	}
	bad := func(e *jsonscan.Error, traceID string) {
		line, col := cur.at(e.Offset)
		de := &decoding.Error{File: v.File, Line: line, Col: col, Path: e.Path, Msg: e.Msg, Trace: -1, Recoverable: true}
		if traceID != "" {
			if d.badTraces == nil {
				d.badTraces = map[string]bool{}
			}
			d.badTraces[traceID] = true
		}
		d.queue = append(d.queue, item{err: de})
	}
	s := jsonscan.NewStrict(v.Data)
	var err error
	switch shape {
	case "otlp":
		err = parseOTLP(s, add, bad)
	case "span":
		err = d.sdkSpans(s, "$", add, bad, nil)
	case "spans":
		var meta []trace.Field
		if s.Peek() == jsonscan.Array {
			err = d.sdkSpans(s, "$", add, bad, nil)
		} else {
			err = s.Object(func(k string) error {
				if k == "spans" {
					return d.sdkSpans(s, s.Path(), add, bad, nil)
				}
				raw, err := s.Raw()
				if err == nil {
					meta = append(meta, trace.Field{Key: k, Value: trace.Compact(raw)})
				}
				return err
			})
		}
		d.dumpMeta = meta
	}
	if e, ok := err.(*jsonscan.Error); ok {
		// The value has a shape error outside any span: reject what it holds.
		line, col := cur.at(e.Offset)
		d.queue = append(d.queue, item{err: &decoding.Error{File: v.File, Line: line, Col: col, Path: e.Path, Msg: e.Msg, Trace: -1, Recoverable: true}})
		// Drop the spans of this value: the value is broken.
		n := len(d.pending)
		for n > 0 && d.pendingLoc[n-1].value == v.Index {
			n--
		}
		d.pending, d.pendingLoc = d.pending[:n], d.pendingLoc[:n]
	}
}

// sdkSpans reads one span object, or a list of them.
func (d *decoder) sdkSpans(s *jsonscan.Scanner, path string, add func(located), bad func(*jsonscan.Error, string), _ any) error {
	one := func(p string) error {
		if k := s.Peek(); k != jsonscan.Object {
			return s.Errorf("a span must be an object, not %s", jsonscan.Article(k))
		}
		start := s.Offset()
		if err := s.Skip(); err != nil {
			return err
		}
		var l located
		l.off, l.path = start, p
		err := sub(s.Data(), start, s.Offset(), p, func(ss *jsonscan.Scanner) error { return sdkSpan(ss, &l.Span) })
		if e, ok := err.(*jsonscan.Error); ok {
			bad(e, l.TraceID)
			return nil
		}
		if err != nil {
			return err
		}
		add(l)
		return nil
	}
	if s.Peek() == jsonscan.Array {
		return s.Array(func(int) error { return one(s.Path()) })
	}
	return one(path)
}

// flush maps the gathered spans and queues the traces.
func (d *decoder) flush() {
	if len(d.pending) == 0 {
		d.dumpMeta = nil
		return
	}
	spans := make([]Span, 0, len(d.pending))
	locs := make([]loc, 0, len(d.pending))
	for i, l := range d.pending {
		if d.badTraces[l.TraceID] {
			continue
		}
		spans = append(spans, l.Span)
		locs = append(locs, d.pendingLoc[i])
	}
	d.pending, d.pendingLoc = nil, nil
	traces, err := Map(spans)
	var probs map[string]*Problem
	if e, ok := err.(*Error); ok {
		probs = map[string]*Problem{}
		for _, p := range e.Problems {
			probs[p.TraceID] = p
		}
	}
	// Traces and rejections in the order trace ids first appear.
	byID := make(map[string]*trace.Trace, len(traces))
	for _, t := range traces {
		byID[t.ID] = t
	}
	seen := map[string]bool{}
	for _, sp := range spans {
		if seen[sp.TraceID] {
			continue
		}
		seen[sp.TraceID] = true
		if p := probs[sp.TraceID]; p != nil {
			l := loc{}
			if p.Span >= 0 && p.Span < len(locs) {
				l = locs[p.Span]
			}
			msg := p.Msg
			if p.SpanID != "" {
				msg = "span " + p.SpanID + ": " + msg
			}
			d.queue = append(d.queue, item{err: &decoding.Error{File: d.file, Line: l.line, Col: l.col, Path: l.path,
				Msg: "trace " + sp.TraceID + ": " + msg, Trace: d.traceIndex, Recoverable: true}})
			d.traceIndex++
			continue
		}
		t := byID[sp.TraceID]
		if t == nil {
			continue
		}
		if len(d.dumpMeta) > 0 {
			t.Metadata = trace.Fields(withSessionFields(d.dumpMeta, t)).Object()
		}
		d.queue = append(d.queue, item{t: t})
		d.traceIndex++
	}
	d.dumpMeta = nil
}

// ---- Langfuse exports ----

// langfuseValue reads {"trace": {...}, "observations": [...]}: one trace.
func langfuseValue(data []byte) (*trace.Trace, error) {
	lf, err := langfuseSpans(data)
	if err != nil {
		return nil, err
	}
	neutral := make([]Span, len(lf.spans))
	for i := range lf.spans {
		neutral[i] = lf.spans[i].Span
	}
	t, err := MapTrace(neutral)
	if err != nil {
		p := err.(*Problem)
		l := located{off: 0, path: "$"}
		if p.Span >= 0 {
			l = lf.spans[p.Span]
		}
		return nil, &jsonscan.Error{Offset: l.off, Path: l.path, Msg: p.Msg}
	}
	t.ID = lf.traceID
	t.Name = lf.name
	t.Metadata = trace.Fields(withSessionFields(lf.meta, t)).Object()
	return t, nil
}

type langfuseExport struct {
	spans         []located
	traceID, name string
	meta          []trace.Field
}

// langfuseSpans reads the spans of a Langfuse export. The trace object,
// less its copy of the observations, is the trace's metadata.
func langfuseSpans(data []byte) (*langfuseExport, error) {
	s := jsonscan.NewStrict(data)
	lf := &langfuseExport{}
	var obsStart, obsEnd int
	obsPath := ""
	hasObs := false
	err := s.Object(func(k string) error {
		switch k {
		case "trace":
			if err := s.Expect(jsonscan.Object, "trace"); err != nil {
				return err
			}
			return s.Object(func(tk string) error {
				switch tk {
				case "observations":
					return s.Skip() // a copy of the observations without input and output
				case "id", "name":
					if s.Peek() == jsonscan.String {
						v, err := s.String(tk)
						if tk == "id" {
							lf.traceID = v
						} else {
							lf.name = v
						}
						lf.meta = append(lf.meta, trace.Field{Key: tk, Value: trace.AppendString(nil, v)})
						return err
					}
				}
				raw, err := s.Raw()
				if err == nil {
					lf.meta = append(lf.meta, trace.Field{Key: tk, Value: trace.Compact(raw)})
				}
				return err
			})
		case "observations":
			if err := s.Expect(jsonscan.Array, "observations"); err != nil {
				return err
			}
			hasObs = true
			obsPath = s.Path()
			obsStart = s.Offset()
			if err := s.Skip(); err != nil {
				return err
			}
			obsEnd = s.Offset()
			return nil
		}
		return s.Skip()
	})
	if err != nil {
		return nil, err
	}
	if !hasObs {
		return nil, s.ErrorAt(0, `a Langfuse export needs "observations"`)
	}
	if lf.traceID == "" {
		return nil, s.ErrorAt(0, `a Langfuse export needs trace.id, a string`)
	}
	err = sub(data, obsStart, obsEnd, obsPath, func(ss *jsonscan.Scanner) error {
		return ss.Array(func(int) error {
			ss.Peek()
			l := located{off: obsStart + ss.Offset(), path: ss.Path()}
			if err := langfuseObservation(ss, &l.Span, lf.traceID); err != nil {
				return err
			}
			lf.spans = append(lf.spans, l)
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return lf, nil
}

// langfuseObservation reads one observation into a span.
func langfuseObservation(s *jsonscan.Scanner, sp *Span, traceID string) error {
	if k := s.Peek(); k != jsonscan.Object {
		return s.Errorf("an observation must be an object, not %s", jsonscan.Article(k))
	}
	start := s.Offset()
	var level, statusMsg *trace.Field
	err := s.Object(func(k string) error {
		var err error
		switch k {
		case "id":
			sp.SpanID, err = s.String("observation id")
			return err
		case "traceId":
			off := s.Offset()
			var v string
			v, err = optString(s, k)
			if err == nil && v != "" && v != traceID {
				return s.ErrorAt(off, "traceId %q differs from the trace's id %q", v, traceID)
			}
			return err
		case "parentObservationId":
			sp.ParentID, err = optString(s, k)
			return err
		case "name":
			sp.Name, err = optString(s, k)
			return err
		case "type":
			sp.Type, err = optString(s, k)
			return err
		case "startTime", "endTime":
			off := s.Offset()
			var v string
			if v, err = optString(s, k); err != nil || v == "" {
				return err
			}
			t, ok := parseISO(v)
			if !ok {
				return s.ErrorAt(off, "%s must be an ISO 8601 time, not %q", k, v)
			}
			if k == "startTime" {
				sp.Start = t
			} else {
				sp.End = t
			}
			return nil
		case "input", "output":
			raw, err := s.Raw()
			if err != nil {
				return err
			}
			p := oneLevel(raw)
			if k == "input" {
				sp.Input = p
			} else {
				sp.Output = p
			}
			return nil
		case "metadata":
			raw, err := s.Raw()
			if err != nil {
				return err
			}
			langfuseMetadata(oneLevel(raw), sp)
			return nil
		case "level", "statusMessage":
			raw, err := s.Raw()
			if err != nil {
				return err
			}
			f := &trace.Field{Key: k, Value: trace.Compact(raw)}
			if k == "level" {
				level = f
			} else {
				statusMsg = f
			}
			sp.Extra = append(sp.Extra, *f)
			return nil
		}
		raw, err := s.Raw()
		if err == nil {
			sp.Extra = append(sp.Extra, trace.Field{Key: k, Value: trace.Compact(raw)})
		}
		return err
	})
	if err != nil {
		return err
	}
	if sp.SpanID == "" {
		return s.ErrorAt(start, "the observation has no id")
	}
	sp.TraceID = traceID
	if level != nil && string(level.Value) == `"ERROR"` {
		sp.Status = "ERROR"
		if statusMsg != nil {
			if v := parseVal(statusMsg.Value); v.isStr() {
				sp.StatusMessage = v.str
			}
		}
	}
	return nil
}

// oneLevel decodes a Langfuse field that holds JSON as text; text that is
// not JSON stays a string; null is nil. raw is valid JSON.
func oneLevel(raw []byte) json.RawMessage {
	s := jsonscan.New(raw)
	switch s.Peek() {
	case jsonscan.Null:
		return nil
	case jsonscan.String:
		t, err := s.String("value")
		if err != nil {
			return nil
		}
		if b := []byte(strings.TrimSpace(t)); len(b) > 0 && jsonscan.CheckStrict(b) == nil {
			return trace.Compact(b)
		}
	}
	return trace.Compact(raw)
}

// langfuseMetadata spreads an observation's metadata: attributes,
// resourceAttributes and scope are the OpenTelemetry span's; the rest is
// kept in Extra "metadata".
func langfuseMetadata(raw json.RawMessage, sp *Span) {
	v := parseVal(raw)
	if !v.isObj() {
		if v != nil && !v.isNull() {
			sp.Extra = append(sp.Extra, trace.Field{Key: "metadata", Value: trace.Compact(raw)})
		}
		return
	}
	var rest []trace.Field
	for _, m := range v.obj {
		switch {
		case m.key == "attributes" && m.v.isObj():
			for _, a := range m.v.obj {
				sp.Attributes = append(sp.Attributes, Attr{Key: a.key, Value: a.v.compact()})
			}
		case m.key == "resourceAttributes" && m.v.isObj():
			for _, a := range m.v.obj {
				sp.Resource = append(sp.Resource, Attr{Key: a.key, Value: a.v.compact()})
			}
		case m.key == "scope" && m.v.isObj():
			sp.Scope.Name = m.v.getStr("name")
			sp.Scope.Version = m.v.getStr("version")
			if a := m.v.get("attributes"); a.isObj() {
				for _, x := range a.obj {
					sp.Scope.Attributes = append(sp.Scope.Attributes, Attr{Key: x.key, Value: x.v.compact()})
				}
			}
		default:
			rest = append(rest, trace.Field{Key: m.key, Value: m.v.compact()})
		}
	}
	if len(rest) > 0 {
		sp.Extra = append(sp.Extra, trace.Field{Key: "metadata", Value: trace.Fields(rest).Object()})
	}
}
