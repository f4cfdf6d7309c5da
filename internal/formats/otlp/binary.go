package otlp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/lookout-dev/lookout/internal/trace"
)

// The binary form of a Span, for a receiver that keeps spans to rebuild
// traces from (AppendBinary, DecodeBinary): protobuf wire format, written
// and read by hand, several times faster than JSON both ways. Field numbers
// are fixed once stored; add new ones, never renumber.
const (
	fTraceID = iota + 1
	fSpanID
	fParentID
	fName
	fKind
	fStart // unix ns, zigzag; absent for a zero time
	fEnd
	fStatus
	fStatusMessage
	fAttr     // repeated kv
	fEvent    // repeated: name 1, time 2, kv 3
	fLink     // repeated: trace 1, span 2, kv 3
	fResource // repeated kv
	fScope    // name 1, version 2, kv 3
	fInput
	fOutput
	fType
	fExtra // repeated kv
)

// kv is a key (1) and a JSON value (2).

// AppendBinary appends the binary form of sp to b.
func AppendBinary(b []byte, sp *Span) []byte {
	b = str(b, fTraceID, sp.TraceID)
	b = str(b, fSpanID, sp.SpanID)
	b = str(b, fParentID, sp.ParentID)
	b = str(b, fName, sp.Name)
	b = str(b, fKind, sp.Kind)
	b = tm(b, fStart, sp.Start)
	b = tm(b, fEnd, sp.End)
	b = str(b, fStatus, sp.Status)
	b = str(b, fStatusMessage, sp.StatusMessage)
	b = attrs(b, fAttr, sp.Attributes)
	for _, e := range sp.Events {
		var m []byte
		m = str(m, 1, e.Name)
		m = tm(m, 2, e.Time)
		m = attrs(m, 3, e.Attributes)
		b = protowire.AppendTag(b, fEvent, protowire.BytesType)
		b = protowire.AppendBytes(b, m)
	}
	for _, l := range sp.Links {
		var m []byte
		m = str(m, 1, l.TraceID)
		m = str(m, 2, l.SpanID)
		m = attrs(m, 3, l.Attributes)
		b = protowire.AppendTag(b, fLink, protowire.BytesType)
		b = protowire.AppendBytes(b, m)
	}
	b = attrs(b, fResource, sp.Resource)
	if sp.Scope.Name != "" || sp.Scope.Version != "" || len(sp.Scope.Attributes) > 0 {
		var m []byte
		m = str(m, 1, sp.Scope.Name)
		m = str(m, 2, sp.Scope.Version)
		m = attrs(m, 3, sp.Scope.Attributes)
		b = protowire.AppendTag(b, fScope, protowire.BytesType)
		b = protowire.AppendBytes(b, m)
	}
	b = raw(b, fInput, sp.Input)
	b = raw(b, fOutput, sp.Output)
	b = str(b, fType, sp.Type)
	for _, f := range sp.Extra {
		b = kv(b, fExtra, f.Key, f.Value)
	}
	return b
}

func str(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

// raw writes a JSON value; nil (absent) is left out, so it stays nil.
func raw(b []byte, num protowire.Number, v json.RawMessage) []byte {
	if v == nil {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, v)
}

func tm(b []byte, num protowire.Number, t time.Time) []byte {
	if t.IsZero() {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	var m []byte
	m = protowire.AppendVarint(m, protowire.EncodeZigZag(t.Unix()))
	m = protowire.AppendVarint(m, uint64(t.Nanosecond()))
	return protowire.AppendBytes(b, m)
}

func kv(b []byte, num protowire.Number, key string, v json.RawMessage) []byte {
	var m []byte
	m = protowire.AppendTag(m, 1, protowire.BytesType)
	m = protowire.AppendString(m, key)
	m = raw(m, 2, v)
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, m)
}

func attrs(b []byte, num protowire.Number, as []Attr) []byte {
	for _, a := range as {
		b = kv(b, num, a.Key, a.Value)
	}
	return b
}

var errBinary = errors.New("not a span in Lookout's binary form")

// DecodeBinary reads a span that AppendBinary wrote.
func DecodeBinary(b []byte) (Span, error) {
	var sp Span
	err := fields(b, func(num protowire.Number, v []byte) error {
		var err error
		switch num {
		case fTraceID:
			sp.TraceID = string(v)
		case fSpanID:
			sp.SpanID = string(v)
		case fParentID:
			sp.ParentID = string(v)
		case fName:
			sp.Name = string(v)
		case fKind:
			sp.Kind = string(v)
		case fStart:
			sp.Start, err = decodeTime(v)
		case fEnd:
			sp.End, err = decodeTime(v)
		case fStatus:
			sp.Status = string(v)
		case fStatusMessage:
			sp.StatusMessage = string(v)
		case fAttr:
			sp.Attributes, err = appendAttr(sp.Attributes, v)
		case fEvent:
			var e Event
			err = fields(v, func(n protowire.Number, x []byte) error {
				var err error
				switch n {
				case 1:
					e.Name = string(x)
				case 2:
					e.Time, err = decodeTime(x)
				case 3:
					e.Attributes, err = appendAttr(e.Attributes, x)
				}
				return err
			})
			sp.Events = append(sp.Events, e)
		case fLink:
			var l Link
			err = fields(v, func(n protowire.Number, x []byte) error {
				var err error
				switch n {
				case 1:
					l.TraceID = string(x)
				case 2:
					l.SpanID = string(x)
				case 3:
					l.Attributes, err = appendAttr(l.Attributes, x)
				}
				return err
			})
			sp.Links = append(sp.Links, l)
		case fResource:
			sp.Resource, err = appendAttr(sp.Resource, v)
		case fScope:
			err = fields(v, func(n protowire.Number, x []byte) error {
				var err error
				switch n {
				case 1:
					sp.Scope.Name = string(x)
				case 2:
					sp.Scope.Version = string(x)
				case 3:
					sp.Scope.Attributes, err = appendAttr(sp.Scope.Attributes, x)
				}
				return err
			})
		case fInput:
			sp.Input = json.RawMessage(bytes.Clone(v))
		case fOutput:
			sp.Output = json.RawMessage(bytes.Clone(v))
		case fType:
			sp.Type = string(v)
		case fExtra:
			var a []Attr
			if a, err = appendAttr(nil, v); err == nil {
				sp.Extra = append(sp.Extra, trace.Field{Key: a[0].Key, Value: a[0].Value})
			}
		}
		return err
	})
	return sp, err
}

// fields calls fn on each length-delimited field of b (the only kind the
// form writes).
func fields(b []byte, fn func(protowire.Number, []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || typ != protowire.BytesType {
			return errBinary
		}
		b = b[n:]
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return errBinary
		}
		b = b[n:]
		if err := fn(num, v); err != nil {
			return err
		}
	}
	return nil
}

func appendAttr(as []Attr, b []byte) ([]Attr, error) {
	var a Attr
	err := fields(b, func(n protowire.Number, x []byte) error {
		switch n {
		case 1:
			a.Key = string(x)
		case 2:
			a.Value = json.RawMessage(bytes.Clone(x))
		}
		return nil
	})
	return append(as, a), err
}

func decodeTime(b []byte) (time.Time, error) {
	s, n := protowire.ConsumeVarint(b)
	if n < 0 {
		return time.Time{}, errBinary
	}
	ns, m := protowire.ConsumeVarint(b[n:])
	if m < 0 || ns >= 1e9 {
		return time.Time{}, fmt.Errorf("%w: a time", errBinary)
	}
	return time.Unix(protowire.DecodeZigZag(s), int64(ns)).UTC(), nil
}
