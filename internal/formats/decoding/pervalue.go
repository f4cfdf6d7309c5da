package decoding

import (
	"encoding/json"
	"io"

	"github.com/lookout-dev/lookout/internal/jsonscan"
	"github.com/lookout-dev/lookout/internal/trace"
)

// PerValue is a Decoder of inputs in which each top-level JSON value is
// one trace (MLflow traces, Bedrock invocations), with no dataset header.
type PerValue struct {
	vr     *ValueReader
	decode func(data []byte) (*trace.Trace, error)
	// syntaxFatal: a value that is not JSON ends the input; otherwise it
	// rejects that trace only.
	syntaxFatal bool
	index       int
	done        bool
}

// NewPerValue returns a decoder over r that reads each value with decode,
// whose errors (a *jsonscan.Error or any error, placed at the value's
// start) reject that trace only. With syntaxFatal, a value that is not
// JSON is a fatal error instead, wherever decode failed first. file names
// r in errors.
func NewPerValue(r io.Reader, file string, decode func(data []byte) (*trace.Trace, error), syntaxFatal bool) *PerValue {
	return &PerValue{vr: NewValueReader(r, file), decode: decode, syntaxFatal: syntaxFatal}
}

// Next decodes the next value's trace.
func (d *PerValue) Next() (*trace.Trace, error) {
	if d.done {
		return nil, io.EOF
	}
	v, err := d.vr.Next(d.index)
	if err != nil {
		d.done = true
		return nil, err // io.EOF or an *Error
	}
	d.index++
	t, err := d.decode(v.Data)
	if err == nil {
		return t, nil
	}
	if d.syntaxFatal {
		// The check costs a pass only for a trace that failed.
		s := jsonscan.New(v.Data)
		serr := s.Skip()
		if serr == nil {
			serr = s.End()
		}
		if serr != nil {
			d.done = true
			return nil, v.Source.Wrap(serr)
		}
	}
	return nil, v.Reject(err)
}

// DatasetMetadata is always nil: these inputs have no dataset header.
func (d *PerValue) DatasetMetadata() json.RawMessage { return nil }
