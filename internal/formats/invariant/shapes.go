package invariant

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"unicode"

	"github.com/lookout-dev/lookout/internal/formats/decoding"
	"github.com/lookout-dev/lookout/internal/jsonscan"
	"github.com/lookout-dev/lookout/internal/trace"
)

// rawField is a member kept as raw JSON; raw may alias the input.
type rawField struct {
	key string
	raw []byte
}

// objInfo records what a top-level object held, for the line rules.
type objInfo struct {
	messages, metadata, role bool
	other                    string // first member other than "metadata"
	otherOff                 int
	metadataOff              int
	indexOff                 int
}

// decodeTraceObject reads {messages, metadata?, annotations?, index?, name?,
// id?, spans?, ...}; other members go to Extra.
func (d *decoder) decodeTraceObject(s *jsonscan.Scanner, tr *trace.Trace, info *objInfo) error {
	if err := s.Expect(jsonscan.Object, "trace"); err != nil {
		return err
	}
	return s.Object(func(key string) error {
		if key != "metadata" && info.other == "" {
			info.other, info.otherOff = key, s.Offset()
		}
		switch key {
		case "messages":
			info.messages = true
			evs, err := d.events(s, "messages")
			tr.Events = evs
			return err
		case "events":
			// The canonical model's name for them (convert --to canonical,
			// export --format canonical), read back as messages are.
			if !info.messages && s.Peek() == jsonscan.Array {
				info.messages = true
				evs, err := d.events(s, "events")
				tr.Events = evs
				return err
			}
		case "metadata":
			info.metadata = true
			info.metadataOff = s.Offset()
			m, err := trace.DecodeObject(s, "metadata")
			tr.Metadata = m
			return err
		case "annotations":
			if s.Peek() == jsonscan.Null {
				tr.Annotations = nil
				return s.Null()
			}
			as, err := trace.DecodeAnnotations(s)
			tr.Annotations = as
			return err
		case "index":
			info.indexOff = s.Offset()
			if k := s.Peek(); k != jsonscan.Number {
				if k == jsonscan.Invalid {
					return s.Skip()
				}
				return s.Errorf("index must be an integer, not %s", kindName(k))
			}
			n, err := s.Int64("index")
			if err != nil {
				return err
			}
			tr.Index = &n
			return nil
		case "name":
			return traceString(s, &tr.Name, key)
		case "id":
			return traceString(s, &tr.ID, key)
		case "spans":
			if s.Peek() == jsonscan.Null {
				tr.Spans = nil
				return s.Null()
			}
			sp, err := trace.DecodeSpans(s)
			tr.Spans = sp
			return err
		case "role":
			info.role = true
		}
		raw, err := trace.DecodeRaw(s)
		if err != nil {
			return err
		}
		tr.Extra = append(tr.Extra, trace.Field{Key: key, Value: raw})
		return nil
	})
}

// traceString reads the trace's name or id: a string, or null for none. An
// empty string is no name, as in the canonical model.
func traceString(s *jsonscan.Scanner, dst *string, key string) error {
	switch k := s.Peek(); k {
	case jsonscan.String:
		v, err := s.String(key)
		*dst = v
		return err
	case jsonscan.Null:
		*dst = ""
		return s.Null()
	case jsonscan.Invalid:
		return s.Skip()
	default:
		return s.Errorf("%s must be a string, not %s", key, kindName(k))
	}
}

// events reads a JSON array of events. The events are gathered in a slice
// reused from trace to trace and copied out once, so a trace costs one
// allocation for its events whatever their number.
func (d *decoder) events(s *jsonscan.Scanner, what string) ([]trace.Event, error) {
	if err := s.Expect(jsonscan.Array, what); err != nil {
		return nil, err
	}
	d.scratch = d.scratch[:0]
	err := s.Array(func(int) error {
		d.scratch = append(d.scratch, trace.Event{})
		return trace.DecodeEvent(s, &d.scratch[len(d.scratch)-1])
	})
	return d.takeEvents(), err
}

func (d *decoder) takeEvents() []trace.Event {
	out := make([]trace.Event, len(d.scratch))
	copy(out, d.scratch)
	clear(d.scratch)
	if cap(d.scratch) > 1<<16 {
		d.scratch = nil // do not keep a huge trace's worth of memory
	} else {
		d.scratch = d.scratch[:0]
	}
	return out
}

// eventList reads a raw event list [event, ...] into tr. A first element
// that is exactly {"metadata": {...}} is the trace's metadata.
func (d *decoder) eventList(s *jsonscan.Scanner, tr *trace.Trace) error {
	if err := s.Expect(jsonscan.Array, "event list"); err != nil {
		return err
	}
	d.scratch = d.scratch[:0]
	err := s.Array(func(i int) error {
		d.scratch = append(d.scratch, trace.Event{})
		e := &d.scratch[len(d.scratch)-1]
		start := s.Offset()
		if err := trace.DecodeEvent(s, e); err != nil {
			return err
		}
		if i == 0 && metadataOnly(e) {
			switch v := e.Extra[0].Value; v[0] {
			case '{':
				tr.Metadata = v
			case 'n':
			default:
				return s.ErrorAt(start, "a first element {\"metadata\": ...} holds the trace metadata, which must be an object, not %s", describeValue(v))
			}
			clear(d.scratch)
			d.scratch = d.scratch[:0]
		}
		return nil
	})
	tr.Events = d.takeEvents()
	return err
}

// metadataOnly reports whether e was the object {"metadata": ...}.
func metadataOnly(e *trace.Event) bool {
	return e.Role == "" && e.Content.Kind == trace.ContentAbsent && len(e.ToolCalls) == 0 &&
		e.ToolCallID == "" && e.SpanID == "" && len(e.Extra) == 1 && e.Extra[0].Key == "metadata"
}

var errStop = errors.New("stop")

// probeScanner returns the look-ahead scanner set on data.
func (d *decoder) probeScanner(data []byte) *jsonscan.Scanner {
	if d.probe == nil {
		d.probe = jsonscan.New(nil)
	}
	d.probe.Reset(data)
	return d.probe
}

// isRunList reports whether data is an array whose first element is an
// object holding a list under "traj" or "messages" and no "role": a list of
// runs rather than of events.
func isRunList(data []byte) bool {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '[' {
		return false
	}
	return isRun(data, skipSpace(data, i+1))
}

// isRun tells whether the object at data[i:] is a run: it holds its events
// under "traj" or "messages" and is not itself an event.
func isRun(data []byte, i int) bool {
	var role, list bool
	ok := scanKeys(data, i, func(key []byte, value byte) {
		switch string(key) {
		case "role":
			role = true
		case "traj", "messages":
			list = list || value == '['
		}
	})
	return ok && list && !role
}

// topKeys tells which members a top-level object has.
type topKeys struct {
	messages, metadata, role, history, trajectory bool
}

// probeKeys lists the members of the object data (as far as it is
// well-formed).
func probeKeys(data []byte) topKeys {
	var k topKeys
	scanKeys(data, skipSpace(data, 0), func(key []byte, _ byte) {
		switch string(key) {
		case "messages":
			k.messages = true
		case "metadata":
			k.metadata = true
		case "role":
			k.role = true
		case "history":
			k.history = true
		case "trajectory":
			k.trajectory = true
		}
	})
	return k
}

// scanKeys calls fn with the key and the first byte of the value of each
// member of the object at data[i], without decoding (nor allocating for) the
// values: a look at the structure only, made before the real decoding,
// which reports any error. It reports whether the object was well-formed
// as far as it looked.
func scanKeys(data []byte, i int, fn func(key []byte, value byte)) bool {
	if i >= len(data) || data[i] != '{' {
		return false
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return true
	}
	for {
		if i >= len(data) || data[i] != '"' {
			return false
		}
		start, end := i, skipStringAt(data, i)
		if end < 0 {
			return false
		}
		key := data[start+1 : end-1]
		i = skipSpace(data, end)
		if i >= len(data) || data[i] != ':' {
			return false
		}
		i = skipSpace(data, i+1)
		if i >= len(data) {
			return false
		}
		if bytes.IndexByte(key, '\\') >= 0 {
			k, err := jsonscan.New(data[start:end]).String("key")
			if err != nil {
				return false
			}
			key = []byte(k)
		}
		fn(key, data[i])
		if i = skipValueAt(data, i); i < 0 {
			return false
		}
		i = skipSpace(data, i)
		if i >= len(data) {
			return false
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case '}':
			return true
		default:
			return false
		}
	}
}

// skipStringAt returns the offset just past the string at data[i], or -1.
func skipStringAt(data []byte, i int) int {
	for j := i + 1; j < len(data); {
		k := bytes.IndexByte(data[j:], '"')
		if k < 0 {
			return -1
		}
		q := j + k
		bs := 0 // a quote after an odd number of backslashes is escaped
		for p := q - 1; p > i && data[p] == '\\'; p-- {
			bs++
		}
		if bs%2 == 0 {
			return q + 1
		}
		j = q + 1
	}
	return -1
}

// skipValueAt returns the offset just past the value at data[i] by its
// structure (brackets and strings), or -1.
func skipValueAt(data []byte, i int) int {
	depth := 0
	for i < len(data) {
		switch data[i] {
		case '"':
			if i = skipStringAt(data, i); i < 0 {
				return -1
			}
			if depth == 0 {
				return i
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i
			}
			depth--
			if depth == 0 {
				return i + 1
			}
		case ',', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return i
			}
		}
		i++
	}
	if depth == 0 {
		return i
	}
	return -1
}

// runList is a top-level list of runs, read one element per Next straight
// from the reader, so that the list is never in memory whole.
type runList struct {
	first *decoding.Value // element 0, read to tell the shape
	i     int
}

// streamRuns starts reading a top-level array as a list of runs if its first
// element is a run; otherwise it leaves the reader where it was.
func (d *decoder) streamRuns() bool {
	d.vr.Mark()
	d.vr.EnterArray()
	v, err := d.vr.NextElement(0, "the list of runs")
	if err != nil || firstByte(v.Data) != '{' || !isRun(v.Data, 0) {
		d.vr.Rewind()
		return false
	}
	d.vr.Unmark()
	d.rows = 1
	d.runs = &runList{first: &v}
	if d.rs == nil {
		d.rs = jsonscan.NewStrict(nil)
	}
	return true
}

// nextRun decodes one element of the list of runs.
func (d *decoder) nextRun() {
	r := d.runs
	var v decoding.Value
	if r.first != nil {
		v, r.first = *r.first, nil
	} else {
		err := d.vr.StartElement(r.i, "the list of runs")
		if err == nil {
			if tr, ok := d.runInPlace(r.i); ok {
				r.i++
				d.push(tr, nil)
				return
			}
			v, err = d.vr.TakeElement(r.i)
		}
		if err == io.EOF {
			d.endRuns()
			return
		}
		if err != nil {
			d.runs = nil
			d.fatal(d.asError(err))
			return
		}
	}
	s := d.rs
	s.Reset(v.Data)
	s.SetRoot("$[" + strconv.Itoa(r.i) + "]")
	tr := &trace.Trace{}
	err := d.decodeRun(s, tr)
	n := r.i
	r.i++
	if err == nil {
		d.push(tr, nil)
		return
	}
	e := placeAt(v.Source, 0, err)
	e.Trace = n
	// Go on after a well-formed element that broke a rule.
	s.Reset(v.Data)
	if s.Skip() != nil {
		d.runs = nil
		d.fatal(e)
		return
	}
	e.Recoverable = true
	d.push(nil, e)
}

// runInPlace decodes element i of the list of runs straight from the
// reader's buffer, skipping the structural pass that finds the element's end
// first (a fifth of the time of a check of a list of runs). When the bytes
// in memory end inside the element, it reads more and tries again, up to
// maxInPlace. Any failure (a broken element, or a larger one) returns false
// with the reader unmoved, and the caller takes the element the usual way,
// which places the error exactly as before.
func (d *decoder) runInPlace(i int) (*trace.Trace, bool) {
	s := d.rs
	for ahead := minInPlace; ahead <= maxInPlace; ahead *= 4 {
		data, complete := d.vr.Ahead(ahead)
		s.Reset(data)
		s.SetRoot("$[" + strconv.Itoa(i) + "]")
		tr := &trace.Trace{}
		err := d.decodeRun(s, tr)
		if err == nil {
			d.vr.Consume(s.Offset())
			return tr, true
		}
		var se *jsonscan.Error
		if complete || len(data) < ahead || !errors.As(err, &se) || se.Offset < len(data) {
			return nil, false // not for want of bytes
		}
	}
	return nil, false
}

// Bytes read ahead for decoding a run in place: runs are some kilobytes
// (tau-bench's average 20 KB), and the buffer is reused for every run.
const (
	minInPlace = 128 << 10
	maxInPlace = 8 << 20
)

// endRuns checks that the list of runs, now closed, was all the input.
func (d *decoder) endRuns() {
	d.runs = nil
	if d.lookahead() {
		var e *decoding.Error
		if d.pending != nil {
			e = d.pending.Errorf(0, "", "a list of runs must be the only JSON value in the input, but another value starts here")
		} else {
			pe := d.pendingErr
			e = &decoding.Error{File: pe.File, Line: pe.Line, Col: pe.Col, Msg: "unexpected data after the list of runs: " + pe.Msg, Trace: -1}
		}
		d.fatal(e)
		return
	}
	d.done = true
}

// placeAt places an error of a scanner that read src.Data[base:].
func placeAt(src decoding.Source, base int, err error) *decoding.Error {
	var se *jsonscan.Error
	if errors.As(err, &se) {
		return src.Errorf(base+se.Offset, se.Path, "%s", se.Msg)
	}
	var de *decoding.Error
	if errors.As(err, &de) {
		return de
	}
	return src.Errorf(base, "", "%s", err.Error())
}

func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
			continue
		}
		break
	}
	return i
}

// decodeRun reads one run {..., traj: [...], ...}: the events come from
// "traj", else from "messages"; every other member goes to the metadata.
func (d *decoder) decodeRun(s *jsonscan.Scanner, tr *trace.Trace) error {
	if k := s.Peek(); k != jsonscan.Object {
		if k == jsonscan.Invalid {
			return s.Skip()
		}
		return s.Errorf("an element of a list of runs must be an object holding a \"traj\" or \"messages\" list of events, not %s", kindName(k))
	}
	start := s.Offset()
	fields := d.fieldsTmp[:0]
	defer func() {
		clear(fields)
		d.fieldsTmp = fields[:0]
	}()
	var traj, msgs []trace.Event
	trajAt, msgsAt := -1, -1
	err := s.Object(func(key string) error {
		if (key == "traj" || key == "messages") && s.Peek() == jsonscan.Array {
			begin := s.Offset()
			evs, err := d.events(s, key)
			if err != nil {
				return err
			}
			fields = append(fields, rawField{key, s.Data()[begin:s.Offset()]})
			if key == "traj" {
				traj, trajAt = evs, len(fields)-1
			} else {
				msgs, msgsAt = evs, len(fields)-1
			}
			return nil
		}
		raw, err := s.Raw()
		fields = append(fields, rawField{key, raw})
		return err
	})
	if err != nil {
		return err
	}
	skip := -1
	switch {
	case trajAt >= 0:
		tr.Events, skip = traj, trajAt
	case msgsAt >= 0:
		tr.Events, skip = msgs, msgsAt
	default:
		return s.ErrorAt(start, "this run has no \"traj\" or \"messages\" list of events")
	}
	tr.Metadata = buildObject(fields, skip)
	return nil
}

// buildObject writes fields (but the one at skip) as a compact JSON object
// of its own memory; nil when there is none.
func buildObject(fields []rawField, skip int) json.RawMessage {
	size := 2
	n := 0
	for i, f := range fields {
		if i != skip {
			size += len(f.key) + len(f.raw) + 8
			n++
		}
	}
	if n == 0 {
		return nil
	}
	b := make(json.RawMessage, 0, size)
	b = append(b, '{')
	n = 0
	for i, f := range fields {
		if i == skip {
			continue
		}
		if n > 0 {
			b = append(b, ',')
		}
		n++
		b = trace.AppendString(b, f.key)
		b = append(b, ':')
		b = jsonscan.AppendCompact(b, f.raw)
	}
	return append(b, '}')
}

// decodeSWE reads a SWE-agent trajectory file.
func (d *decoder) decodeSWE(v decoding.Value) (*trace.Trace, *decoding.Error) {
	s := d.s
	s.Reset(v.Data)
	tr := &trace.Trace{}
	var fields []rawField
	info := -1
	err := s.Object(func(key string) error {
		switch key {
		case "history":
			evs, err := d.events(s, "history")
			if err != nil {
				return err
			}
			linkToolResults(evs)
			tr.Events = evs
			return nil
		case "trajectory":
			spans, err := steps(s)
			tr.Spans = spans
			return err
		}
		raw, err := s.Raw()
		if err != nil {
			return err
		}
		if key == "info" {
			info = len(fields)
		}
		fields = append(fields, rawField{key, raw})
		return nil
	})
	if err != nil {
		e := v.Wrap(err)
		e.Trace = 0
		return nil, e
	}
	if tr.Events == nil {
		tr.Events = []trace.Event{}
	}
	tr.Metadata = d.sweMetadata(fields, info)
	return tr, nil
}

// sweMetadata builds the metadata of a SWE-agent trace: the members of
// "info" in its place, and every other member. When a key would appear twice
// (or "info" is not a non-empty object) "info" stays one nested member.
func (d *decoder) sweMetadata(fields []rawField, info int) json.RawMessage {
	if info < 0 || firstByte(fields[info].raw) != '{' {
		return buildObject(fields, -1)
	}
	var members []rawField
	p := d.probeScanner(fields[info].raw)
	err := p.Object(func(key string) error {
		raw, err := p.Raw()
		members = append(members, rawField{key, raw})
		return err
	})
	if err != nil || len(members) == 0 {
		return buildObject(fields, -1)
	}
	merged := make([]rawField, 0, len(fields)+len(members))
	merged = append(merged, fields[:info]...)
	merged = append(merged, members...)
	merged = append(merged, fields[info+1:]...)
	seen := make(map[string]bool, len(merged))
	for _, f := range merged {
		if seen[f.key] {
			return buildObject(fields, -1)
		}
		seen[f.key] = true
	}
	return buildObject(merged, -1)
}

// linkToolResults sets ToolCallID from a SWE-agent "tool_call_ids" list
// holding exactly one id, when the message has no "tool_call_id" of its own.
func linkToolResults(evs []trace.Event) {
	for i := range evs {
		e := &evs[i]
		if e.ToolCallID != "" || e.Extra.Get("tool_call_id") != nil {
			continue
		}
		raw := e.Extra.Get("tool_call_ids")
		if raw == nil || raw[0] != '[' {
			continue
		}
		s := jsonscan.New(raw)
		var ids []string
		err := s.Array(func(int) error {
			if s.Peek() != jsonscan.String {
				return errStop
			}
			id, err := s.String("tool call id")
			ids = append(ids, id)
			return err
		})
		if err == nil && len(ids) == 1 && ids[0] != "" {
			e.ToolCallID = ids[0]
		}
	}
}

// steps turns the SWE-agent trajectory into spans, one per step.
func steps(s *jsonscan.Scanner) ([]trace.Span, error) {
	if err := s.Expect(jsonscan.Array, "trajectory"); err != nil {
		return nil, err
	}
	var spans []trace.Span
	err := s.Array(func(i int) error {
		if err := s.Expect(jsonscan.Object, "trajectory step"); err != nil {
			return err
		}
		n := strconv.Itoa(i)
		sp := trace.Span{ID: "step-" + n, Kind: "swe-agent.step"}
		var attrs, inputs []rawField
		action := ""
		err := s.Object(func(key string) error {
			raw, err := s.Raw()
			if err != nil {
				return err
			}
			switch key {
			case "action":
				if raw[0] == '"' {
					action, _ = jsonscan.New(raw).String("action")
				}
				inputs = append(inputs, rawField{key, raw})
			case "thought", "response", "messages":
				inputs = append(inputs, rawField{key, raw})
			case "observation":
				sp.Outputs = trace.Compact(raw)
			default:
				attrs = append(attrs, rawField{key, raw})
			}
			return nil
		})
		if err != nil {
			return err
		}
		sp.Name = firstWord(action)
		if sp.Name == "" {
			sp.Name = "step " + n
		}
		sp.Attributes = buildObject(attrs, -1)
		sp.Inputs = buildObject(inputs, -1)
		spans = append(spans, sp)
		return nil
	})
	return spans, err
}

// firstWord is the command of a SWE-agent action ("edit 1:5\n..." → "edit").
func firstWord(s string) string {
	s = strings.TrimLeftFunc(s, unicode.IsSpace)
	if i := strings.IndexFunc(s, unicode.IsSpace); i >= 0 {
		s = s[:i]
	}
	return s
}

// kindName names a kind of JSON value with its article, for messages.
func kindName(k jsonscan.Kind) string {
	switch k {
	case jsonscan.Null:
		return "null"
	case jsonscan.Array, jsonscan.Object:
		return "an " + k.String()
	case jsonscan.Invalid:
		return "invalid JSON"
	}
	return "a " + k.String()
}
