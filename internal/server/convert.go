package server

import (
	"bytes"
	"encoding/json"

	"github.com/lookout-dev/lookout/internal/formats/invariant"
	"github.com/lookout-dev/lookout/internal/jsonscan"
	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/trace"
)

// Annotations live apart from trace content in the store. In a trace (the
// canonical JSON, Invariant files) an annotation is {address, content,
// ...other members}; the store keeps the other members verbatim, in order,
// as the JSON object Annotation.Extra, and takes the source from a string
// "source" member ("user" when there is none). Writing a stored annotation
// back into a trace restores the members and adds "source" when it is not
// "user" and not already there, so a trace round-trips unchanged.

const defaultSource = "user"

// fromTraceAnnotations converts a trace's annotations for the store.
func fromTraceAnnotations(as []trace.Annotation, author string) []store.Annotation {
	if len(as) == 0 {
		return nil
	}
	out := make([]store.Annotation, len(as))
	for i, a := range as {
		out[i] = store.Annotation{Address: a.Address, Content: a.Content, Source: defaultSource, Author: author, Extra: fieldsObject(a.Extra)}
		if src := a.Extra.Get("source"); src != nil {
			var s string
			if json.Unmarshal(src, &s) == nil && s != "" {
				out[i].Source = s
			}
		}
	}
	return out
}

// toTraceAnnotations converts stored annotations back.
func toTraceAnnotations(as []store.Annotation) []trace.Annotation {
	if len(as) == 0 {
		return nil
	}
	out := make([]trace.Annotation, len(as))
	for i, a := range as {
		extra := objectFields(a.Extra)
		if a.Source != "" && a.Source != defaultSource && extra.Get("source") == nil {
			extra = append(extra, trace.Field{Key: "source", Value: json.RawMessage(trace.AppendString(nil, a.Source))})
		}
		out[i] = trace.Annotation{Address: a.Address, Content: a.Content, Extra: extra}
	}
	return out
}

// fieldsObject writes fields as a JSON object, in order.
func fieldsObject(f trace.Fields) json.RawMessage {
	b := []byte{'{'}
	for i, x := range f {
		if i > 0 {
			b = append(b, ',')
		}
		b = trace.AppendString(b, x.Key)
		b = append(b, ':')
		b = append(b, x.Value...)
	}
	return append(b, '}')
}

// objectFields reads a JSON object's members in order; anything else gives
// none.
func objectFields(obj json.RawMessage) trace.Fields {
	if len(obj) == 0 {
		return nil
	}
	s := jsonscan.New(obj)
	if s.Peek() != jsonscan.Object {
		return nil
	}
	var f trace.Fields
	err := s.Object(func(key string) error {
		raw, err := trace.DecodeRaw(s)
		f = append(f, trace.Field{Key: key, Value: raw})
		return err
	})
	if err != nil {
		return nil
	}
	return f
}

// fullTrace is a stored trace as the API shows it: the stored id, its index
// in its dataset, and its annotations.
func fullTrace(st store.StoredTrace, anns []store.Annotation) *trace.Trace {
	t := *st.Trace
	t.ID = st.ID
	if st.DatasetID != "" {
		idx := st.Index
		t.Index = &idx
	}
	t.Annotations = toTraceAnnotations(anns)
	return &t
}

// invariantLine encodes t as one Invariant JSON line.
func invariantLine(t *trace.Trace) ([]byte, error) {
	var buf bytes.Buffer
	enc := invariant.NewEncoder(&buf)
	if err := enc.Encode(t); err != nil {
		return nil, err
	}
	if err := enc.Flush(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
