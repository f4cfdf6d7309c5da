// Package invariant reads every OpenAI/Invariant-style trace shape and writes
// Invariant Explorer JSONL.
//
// # Shapes
//
// The decoder reads the top-level JSON values of its input one at a time. An
// input holding one value is read by that value's own shape, decided by its
// structure; an input holding several values is JSONL and follows the
// Explorer's upload rules.
//
//	| input                                    | traces        | model                                             |
//	|------------------------------------------|---------------|---------------------------------------------------|
//	| [event, ...]                             | 1             | Events; a first element that is exactly           |
//	|                                          |               | {"metadata": {...}} is the trace Metadata         |
//	| [{task_id, reward, info, traj, trial},   | 1 per element | Events from "traj" (else "messages"); all other   |
//	|  ...] (tau-bench: a list whose first     |               | members, in input order, form Metadata            |
//	|  element holds a list under "traj" or    |               |                                                   |
//	|  "messages" and has no "role")           |               |                                                   |
//	| {role, content, tool_calls, ...}         | 1             | one Event                                         |
//	| {messages, metadata?, annotations?,      | 1             | Events, Metadata, Annotations, Index, Name, ID,   |
//	|  index?, name?, id?, spans?, ...}        |               | Spans (canonical span JSON); other members: Extra |
//	| SWE-agent .traj {history, trajectory?,   | 1             | Events from "history"; Metadata: the members of   |
//	|  info?, replay_config?, environment?}    |               | "info" and every other member but "history" and   |
//	|                                          |               | "trajectory" ("info" stays nested if a key would  |
//	|                                          |               | repeat); one Span per "trajectory" step           |
//	| {"metadata": {...}} alone                | 0             | DatasetMetadata                                   |
//	| JSONL                                    | 1 per line    | line kinds below; the metadata row gives          |
//	|                                          |               | DatasetMetadata                                   |
//
// A name, id, annotations, spans or metadata given as null is no such
// member; "index" must be an integer. Trace.Name is set only from a "name"
// member, never invented.
//
// Events are read by trace.DecodeEvent: tool-call arguments given as a JSON
// string become an object when they parse as one and are kept verbatim when
// they do not; unknown members (refusal, name, error, ...) are kept in
// Event.Extra. In a SWE-agent history a tool result points to its call with
// "tool_call_ids" (a list): when the list holds exactly one string and the
// message has no "tool_call_id", that string becomes ToolCallID; the list and
// the other SWE-agent keys (agent, message_type, thought, action) stay in
// Extra.
//
// A SWE-agent trajectory step n (counted from 0, as in "$.trajectory[n]")
// becomes this span, so that nothing of the step is lost:
//
//	| span field | from the step                                                    |
//	|------------|------------------------------------------------------------------|
//	| ID         | "step-<n>"                                                       |
//	| Kind       | "swe-agent.step"                                                 |
//	| Name       | the first word of "action" ("edit", "ls", ...), else "step <n>"  |
//	| Attributes | {execution_time, state, and any member not named in this table}  |
//	| Inputs     | {thought, action, response, messages}: those present, in order   |
//	| Outputs    | "observation"                                                    |
//
// # JSONL (Explorer upload rules)
//
// Each line is (a) a dataset-metadata row: an object with "metadata" and no
// "messages", only as the first row, at most once, and holding nothing else;
// its "metadata" object is DatasetMetadata; (b) a raw event list [...], whose
// first element may be {"metadata": {...}}; or (c) a trace object as above.
// A file must not mix kinds (b) and (c); "index" must be an integer, unique in
// the file, and present on all kind-(c) lines or on none. A line that breaks a
// rule is rejected with a Recoverable *decoding.Error naming the rule and the
// line: the caller may skip it and go on, though the file as a whole is then
// invalid. A line that is not well-formed JSON is skipped up to the next line
// break, when every value so far fitted on one line (true JSONL); in a
// stream of pretty-printed values it ends the input.
//
// Three single-value shapes cannot be JSONL lines: a single event and a
// SWE-agent object are rejected as line 1 when more values follow; a list of
// runs is decoded as it is read (so that a large one needs no second copy in
// memory), and a value after it is a fatal error reported after its traces.
package invariant

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/lookout-dev/lookout/internal/formats/decoding"
	"github.com/lookout-dev/lookout/internal/jsonscan"
	"github.com/lookout-dev/lookout/internal/trace"
)

// NewDecoder returns a streaming decoder over r; file names r in errors.
func NewDecoder(r io.Reader, file string) decoding.Decoder {
	return &decoder{vr: decoding.NewValueReader(r, file), file: file, s: jsonscan.NewStrict(nil)}
}

// result is a trace or an error waiting to be handed out.
type result struct {
	tr  *trace.Trace
	err *decoding.Error
	at  [2]int // line and column where the trace starts; 0, 0 when not known
}

// Line kinds of an Explorer JSONL file.
const (
	kindNone   = 0
	kindList   = 'b' // raw event list
	kindObject = 'c' // {"messages": ...}
)

type decoder struct {
	vr   *decoding.ValueReader
	file string
	s    *jsonscan.Scanner
	meta json.RawMessage

	started bool
	done    bool     // nothing more to read (after ready is drained)
	ready   []result // handed out before reading on, from readyAt
	readyAt int
	runs    *runList // a top-level list of runs being read

	// Several top-level values: Explorer JSONL rules apply.
	multi      bool
	oneLine    bool              // every value so far fitted on one line
	pending    *decoding.Value   // read ahead, to decode next
	pendingErr *decoding.Error   // structural error read ahead
	resync     bool              // drop the rest of a broken line first
	rows       int               // values (rows) read, broken ones included
	traces     int               // trace rows seen, rejected ones included
	metaSeen   bool              // a metadata row was seen
	kind       byte              // kind of the first trace line
	kindLine   int               // its line
	index      int8              // kind-(c) lines: 1 index present, -1 absent, 0 not known yet
	indexLine  int               // line that set index
	indices    map[int64]int     // index → line
	scratch    []trace.Event     // reused while reading an event list
	fieldsTmp  []rawField        // reused while collecting members
	probe      *jsonscan.Scanner // second scanner for look-ahead
	rs         *jsonscan.Scanner // scanner for the elements of a list of runs
	at         [2]int            // where the row being decoded starts
	last       [2]int            // where the trace Next last returned starts
}

// Place is where the trace Next last returned starts: its line (JSONL) or
// its value; 0, 0 for the elements of a list of runs and a SWE-agent file.
func (d *decoder) Place() (line, col int) { return d.last[0], d.last[1] }

func (d *decoder) DatasetMetadata() json.RawMessage { return d.meta }

// Next returns the next trace; see decoding.Decoder.
func (d *decoder) Next() (*trace.Trace, error) {
	for {
		if d.readyAt < len(d.ready) {
			r := d.ready[d.readyAt]
			d.ready[d.readyAt] = result{}
			d.readyAt++
			if d.readyAt == len(d.ready) {
				d.ready, d.readyAt = d.ready[:0], 0
			}
			d.last = r.at
			if r.err != nil {
				if !r.err.Recoverable {
					d.done, d.ready, d.readyAt, d.runs, d.pending, d.pendingErr = true, nil, 0, nil, nil, nil
				}
				return nil, r.err
			}
			return r.tr, nil
		}
		if d.done {
			return nil, io.EOF
		}
		switch {
		case d.runs != nil:
			d.nextRun()
		case !d.started:
			d.start()
		default:
			d.readLine()
		}
	}
}

func (d *decoder) push(tr *trace.Trace, err *decoding.Error) {
	d.ready = append(d.ready, result{tr, err, d.at})
}

func (d *decoder) fatal(err *decoding.Error) {
	err.Recoverable = false
	d.push(nil, err)
	d.done = true
}

// asError turns an error of the ValueReader into *decoding.Error.
func (d *decoder) asError(err error) *decoding.Error {
	var de *decoding.Error
	if errors.As(err, &de) {
		return de
	}
	return &decoding.Error{File: d.file, Msg: err.Error(), Trace: -1}
}

// start reads the first value and decides the shape of the input.
func (d *decoder) start() {
	d.started = true
	if c, err := d.vr.PeekByte(); err == nil && c == '[' && d.streamRuns() {
		return
	}
	v0, err := d.vr.Next(0)
	if err == io.EOF {
		d.done = true
		return
	}
	if err != nil {
		d.startBroken(d.asError(err))
		return
	}
	d.rows = 1
	d.oneLine = !multiLine(v0.Data)
	switch firstByte(v0.Data) {
	case '[':
		// Not a list of runs (streamRuns would have taken it): an event list.
	case '{':
		k := probeKeys(v0.Data)
		if k.messages {
			break
		}
		if k.history || k.trajectory {
			tr, derr := d.decodeSWE(v0)
			if d.lookahead() {
				tr, derr = nil, errorAt(v0.Source, 0, "$", "a SWE-agent trajectory (an object with \"history\") must be the whole file, but more JSON values follow it; in JSONL each line must be a trace object {\"messages\": [...]} or an event list [...]")
				derr.Trace = 0
				d.traces = 1
			}
			d.finishFirst(tr, derr)
			return
		}
		// An event, a metadata row or neither: what it is depends on
		// whether more values follow, so keep it past the look-ahead.
		v0.Data = append([]byte(nil), v0.Data...)
		if !d.lookahead() && k.role {
			tr := &trace.Trace{Events: make([]trace.Event, 1)}
			d.s.Reset(v0.Data)
			var derr *decoding.Error
			if err := trace.DecodeEvent(d.s, &tr.Events[0]); err != nil {
				tr, derr = nil, v0.Wrap(err)
				derr.Trace = 0
			}
			d.finishFirst(tr, derr)
			return
		}
		tr, derr := d.line(v0, 0)
		d.finishFirst(tr, derr)
		return
	default:
		v0.Data = append([]byte(nil), v0.Data...)
		d.lookahead()
		tr, derr := d.line(v0, 0)
		d.finishFirst(tr, derr)
		return
	}
	// A trace object or an event list: the same in a single document and as
	// the first line of JSONL, and decoded into memory of its own, so the
	// look-ahead may reuse the reader's buffer.
	tr, derr := d.line(v0, 0)
	d.lookahead()
	d.finishFirst(tr, derr)
}

// finishFirst hands out the result of the first value.
func (d *decoder) finishFirst(tr *trace.Trace, err *decoding.Error) {
	if err != nil {
		if d.multi {
			err.Recoverable = true
			d.push(nil, err)
		} else {
			d.fatal(err)
		}
		return
	}
	if tr != nil {
		d.push(tr, nil)
	}
	if !d.multi {
		d.done = true
	}
}

// startBroken handles a first value that is not well-formed. When the next
// line holds a one-line value the input is JSONL, and only the broken line is
// lost; otherwise (one pretty-printed document) the error is fatal.
func (d *decoder) startBroken(err *decoding.Error) {
	err.Trace = 0
	if d.vr.Resync() {
		v1, err1 := d.vr.Next(1)
		if err1 == nil && !multiLine(v1.Data) {
			d.multi, d.oneLine, d.rows = true, true, 1
			d.traces = 1
			err.Recoverable = true
			d.push(nil, err)
			d.pending = &v1
			return
		}
	}
	d.fatal(err)
}

// lookahead reads the value after the first one and reports whether there
// is one (or a broken one): then the input is JSONL.
func (d *decoder) lookahead() bool {
	v1, err := d.vr.Next(1)
	if err == io.EOF {
		return false
	}
	d.multi = true
	if err != nil {
		d.pendingErr = d.asError(err)
	} else {
		d.pending = &v1
	}
	return true
}

// readLine reads and decodes one JSONL row.
func (d *decoder) readLine() {
	var v decoding.Value
	var err *decoding.Error
	switch {
	case d.pending != nil:
		v, d.pending = *d.pending, nil
	case d.pendingErr != nil:
		err, d.pendingErr = d.pendingErr, nil
	default:
		if d.resync {
			d.resync = false
			if !d.vr.Resync() {
				d.done = true
				return
			}
		}
		var e error
		v, e = d.vr.Next(d.rows)
		if e == io.EOF {
			d.done = true
			return
		}
		if e != nil {
			err = d.asError(e)
		}
	}
	row := d.rows
	d.rows++
	if err != nil {
		// Not well-formed: skip to the next line if this is true JSONL.
		err.Trace = d.traces
		d.traces++
		if d.oneLine {
			err.Recoverable = true
			d.resync = true
			d.push(nil, err)
		} else {
			d.fatal(err)
		}
		return
	}
	if d.oneLine && multiLine(v.Data) {
		d.oneLine = false
	}
	tr, derr := d.line(v, row)
	if derr != nil {
		derr.Recoverable = true
		d.push(nil, derr)
		return
	}
	if tr != nil {
		d.push(tr, nil)
	}
}

// line decodes one row under the Explorer rules; it returns nil, nil for
// the metadata row. Errors are placed but not yet marked Recoverable.
func (d *decoder) line(v decoding.Value, row int) (*trace.Trace, *decoding.Error) {
	d.at = [2]int{v.Line, v.Col}
	switch firstByte(v.Data) {
	case '{':
		return d.objectLine(v, row)
	case '[':
		return d.listLine(v, row)
	}
	n := d.traces
	d.traces++
	what := describeValue(v.Data)
	var err *decoding.Error
	if d.multi {
		err = errorAt(v.Source, 0, "$", "this line is %s; each line must be a trace object {\"messages\": [...]}, an event list [...] or, as the first line only, a metadata row {\"metadata\": {...}}", what)
	} else {
		err = errorAt(v.Source, 0, "$", "the input is %s; it must be a JSON array (events or runs) or object (a trace, an event or a SWE-agent trajectory)", what)
	}
	err.Trace = n
	return nil, err
}

// objectLine decodes a trace object or a metadata row.
func (d *decoder) objectLine(v decoding.Value, row int) (*trace.Trace, *decoding.Error) {
	s := d.s
	s.Reset(v.Data)
	tr := &trace.Trace{}
	var info objInfo
	err := d.decodeTraceObject(s, tr, &info)
	if err != nil {
		// The error may come before the members that tell what the
		// object is; look at all its keys.
		k := probeKeys(v.Data)
		info.messages = info.messages || k.messages
		info.metadata = info.metadata || k.metadata
		info.role = info.role || k.role
	}
	if !info.messages {
		if info.metadata {
			return nil, d.metadataRow(v, row, tr, &info, err)
		}
		if err == nil {
			n := d.traces
			d.traces++
			msg := "this object has no \"messages\" list; a trace object is {\"messages\": [...], ...}"
			if info.role {
				msg = "this object is a single event; in JSONL an event must be inside an event list [...] or the \"messages\" of a trace object"
			}
			e := errorAt(v.Source, 0, "$", "%s", msg)
			e.Trace = n
			return nil, e
		}
	}
	n := d.traces
	d.traces++
	line := v.Line
	if info.messages {
		if e := d.checkKind(v, kindObject); e != nil {
			e.Trace = n
			return nil, e
		}
	}
	if err != nil {
		e := v.Wrap(err)
		e.Trace = n
		return nil, e
	}
	// Index rules: present on every kind-(c) line or none; unique.
	present := int8(-1)
	if tr.Index != nil {
		present = 1
	}
	switch {
	case d.index == 0:
		d.index, d.indexLine = present, line
	case d.index != present:
		var e *decoding.Error
		if present > 0 {
			e = errorAt(v.Source, info.indexOff, "$.index", "\"index\" is given here but not on line %d; it must be on every trace object or on none", d.indexLine)
		} else {
			e = errorAt(v.Source, 0, "$", "this trace object has no \"index\", but line %d has one; it must be on every trace object or on none", d.indexLine)
		}
		e.Trace = n
		return nil, e
	}
	if tr.Index != nil {
		if d.indices == nil {
			d.indices = make(map[int64]int)
		}
		if prev, dup := d.indices[*tr.Index]; dup {
			e := errorAt(v.Source, info.indexOff, "$.index", "duplicate index found: %d (also on line %d)", *tr.Index, prev)
			e.Trace = n
			return nil, e
		}
		d.indices[*tr.Index] = line
	}
	return tr, nil
}

// metadataRow applies the rules of the dataset-metadata row.
func (d *decoder) metadataRow(v decoding.Value, row int, tr *trace.Trace, info *objInfo, err error) *decoding.Error {
	seen := d.metaSeen
	d.metaSeen = true
	switch {
	case seen:
		return errorAt(v.Source, 0, "$", "metadata row can appear at most once (a row with \"metadata\" and no \"messages\" is the dataset metadata)")
	case row != 0:
		return errorAt(v.Source, 0, "$", "metadata row must be the first row (a row with \"metadata\" and no \"messages\" is the dataset metadata)")
	case err != nil:
		return v.Wrap(err)
	case info.other != "":
		return errorAt(v.Source, info.otherOff, "$", "a metadata row holds only \"metadata\", but it has %q too; move it into the metadata object", info.other)
	case tr.Metadata == nil:
		return errorAt(v.Source, info.metadataOff, "$.metadata", "the dataset metadata must be an object, not null")
	}
	d.meta = tr.Metadata
	return nil
}

// checkKind enforces that raw event lists and trace objects do not mix.
func (d *decoder) checkKind(v decoding.Value, k byte) *decoding.Error {
	if d.kind == kindNone {
		d.kind, d.kindLine = k, v.Line
		return nil
	}
	if d.kind == k {
		return nil
	}
	if k == kindList {
		return errorAt(v.Source, 0, "$", "this line is a raw event list, but line %d is a trace object {\"messages\": [...]}; a file cannot contain both raw event lists and trace objects", d.kindLine)
	}
	return errorAt(v.Source, 0, "$", "this line is a trace object {\"messages\": [...]}, but line %d is a raw event list; a file cannot contain both raw event lists and trace objects", d.kindLine)
}

// listLine decodes a raw event list.
func (d *decoder) listLine(v decoding.Value, row int) (*trace.Trace, *decoding.Error) {
	n := d.traces
	d.traces++
	if d.multi && isRunList(v.Data) {
		e := errorAt(v.Source, 0, "$", "this line is a list of runs (objects holding \"traj\" or \"messages\"); such a list must be the whole file, and in JSONL each line must be one trace")
		e.Trace = n
		return nil, e
	}
	if e := d.checkKind(v, kindList); e != nil {
		e.Trace = n
		return nil, e
	}
	s := d.s
	s.Reset(v.Data)
	tr := &trace.Trace{}
	if err := d.eventList(s, tr); err != nil {
		e := v.Wrap(err)
		e.Trace = n
		return nil, e
	}
	return tr, nil
}

// errorAt places an error at offset of src with the given JSON path.
func errorAt(src decoding.Source, offset int, path, format string, args ...any) *decoding.Error {
	return src.Errorf(offset, path, format, args...)
}

func firstByte(b []byte) byte {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return c
	}
	return 0
}

func multiLine(b []byte) bool { return bytes.IndexByte(b, '\n') >= 0 }

// describeValue names a top-level scalar for messages.
func describeValue(b []byte) string {
	s := jsonscan.New(b)
	switch k := s.Peek(); k {
	case jsonscan.Invalid:
		c := firstByte(b)
		if c == 0 {
			return "empty"
		}
		return fmt.Sprintf("not JSON (it starts with %q)", c)
	case jsonscan.Null:
		return "null"
	default:
		return "a " + k.String()
	}
}
