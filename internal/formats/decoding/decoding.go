// Package decoding holds what every format decoder shares: the Decoder
// contract, errors that carry their place in the input (file, line, column,
// JSON path), and a reader that streams top-level JSON values.
package decoding

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/lookout-dev/lookout/internal/jsonscan"
	"github.com/lookout-dev/lookout/internal/trace"
)

// Decoder yields the traces of one input, one at a time.
//
// Next returns io.EOF after the last trace. Any other error is an *Error; when
// its Recoverable field is set only that trace was rejected and Next may be
// called again for the next one (skip-and-report); otherwise the input cannot
// be read further and Next keeps returning io.EOF.
type Decoder interface {
	Next() (*trace.Trace, error)
	// DatasetMetadata is the input's dataset-level metadata object, or nil.
	// It is known once Next has returned the first trace (or io.EOF).
	DatasetMetadata() json.RawMessage
}

// Placer is a Decoder that tells where in its input the trace Next last
// returned starts (1-based line and column), or 0, 0 when it cannot say.
type Placer interface {
	Place() (line, col int)
}

// Error is a problem in the input, with its place.
type Error struct {
	File        string
	Line, Col   int    // 1-based; 0 when unknown
	Path        string // JSON path such as $[3].messages[2].content; "" when none
	Msg         string
	Trace       int  // index of the trace in the input, -1 when the error is not about one trace
	Recoverable bool // only this trace was rejected; decoding can go on
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteByte(':')
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, "%d:%d:", e.Line, e.Col)
	}
	if b.Len() > 0 {
		b.WriteByte(' ')
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Source describes where a document sits in its input, so that offsets in the
// document become positions in the file.
type Source struct {
	File string
	Data []byte // the document
	Line int    // line of Data[0] in the file, 1-based
	Col  int    // column of Data[0] on that line, 1-based
}

// Errorf returns an error placed at offset in src.
func (src Source) Errorf(offset int, path, format string, args ...any) *Error {
	line, col := jsonscan.LineCol(src.Data, offset)
	if line == 1 {
		col += src.Col - 1
	}
	return &Error{File: src.File, Line: src.Line + line - 1, Col: col, Path: path, Msg: fmt.Sprintf(format, args...), Trace: -1}
}

// Wrap turns err into an *Error placed in src: a *jsonscan.Error keeps its
// offset and path, an *Error is returned as is, anything else is placed at
// the start of the document.
func (src Source) Wrap(err error) *Error {
	if err == nil {
		return nil
	}
	var de *Error
	if errors.As(err, &de) {
		return de
	}
	var se *jsonscan.Error
	if errors.As(err, &se) {
		return src.Errorf(se.Offset, se.Path, "%s", se.Msg)
	}
	return src.Errorf(0, "", "%s", err.Error())
}

// Unsupported is returned for an input in a known format Lookout cannot read
// yet, or in no format it knows.
type Unsupported struct {
	File   string
	Format string // the name of the recognised format, "" when unknown
	Why    string
}

func (e *Unsupported) Error() string {
	prefix := ""
	if e.File != "" {
		prefix = e.File + ": "
	}
	if e.Format != "" {
		return fmt.Sprintf("%sunsupported format %s: %s", prefix, e.Format, e.Why)
	}
	return fmt.Sprintf("%sunrecognised format: %s", prefix, e.Why)
}
