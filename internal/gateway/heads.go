package gateway

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"

	"github.com/lookout-dev/lookout/internal/trace"
)

// Heads are the hashes of a conversation's prefixes: Heads(events)[k] is
// the head of events[:k+1]. A gateway conversation's trace is stored with
// the head of all its events; the next call of the conversation re-sends
// those events first, so one of its prefix heads names the trace it extends.
//
// The hash covers what a client re-sends faithfully — role, content text,
// non-text parts, tool call ids, names and arguments (compacted), and the
// tool call an output answers — and not what SDKs add or drop on the way
// back (refusal: null, annotations: [], content as a string or as one text
// part), so that a re-sent message hashes as the recorded one.
func Heads(events []trace.Event) []string { return ExtendHeads("", events) }

// ExtendHeads are the heads of events that follow a conversation whose
// head is last ("" for none): ExtendHeads(Heads(a)[len(a)-1], b) equals
// the heads of a+b from len(a) on.
func ExtendHeads(last string, events []trace.Event) []string {
	out := make([]string, len(events))
	var prev [16]byte
	hex.Decode(prev[:], []byte(last))
	var buf []byte
	for i := range events {
		buf = append(buf[:0], prev[:]...)
		buf = appendNormal(buf, &events[i])
		sum := sha256.Sum256(buf)
		copy(prev[:], sum[:16])
		out[i] = hex.EncodeToString(prev[:])
	}
	return out
}

// appendNormal appends the fields of e that the head covers, each
// length-prefixed so that no two events encode alike.
func appendNormal(b []byte, e *trace.Event) []byte {
	field := func(b []byte, s []byte) []byte {
		b = binary.AppendUvarint(b, uint64(len(s)))
		return append(b, s...)
	}
	b = field(b, []byte(e.Role))
	b = field(b, []byte(e.Content.String()))
	if e.Content.Kind == trace.ContentParts {
		for _, p := range e.Content.Parts {
			if p.Type == "text" {
				continue
			}
			b = field(b, []byte(p.Type))
			for _, f := range p.Extra {
				b = field(b, []byte(f.Key))
				b = field(b, compact(f.Value))
			}
		}
	}
	b = binary.AppendUvarint(b, uint64(len(e.ToolCalls)))
	for _, c := range e.ToolCalls {
		b = field(b, []byte(c.ID))
		b = field(b, []byte(c.Function.Name))
		b = field(b, compact(c.Function.Arguments))
	}
	return field(b, []byte(e.ToolCallID))
}

// compact is raw JSON without insignificant space, or raw as it is when it
// does not parse.
func compact(raw json.RawMessage) []byte {
	if len(raw) == 0 {
		return nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return raw
	}
	return b.Bytes()
}
