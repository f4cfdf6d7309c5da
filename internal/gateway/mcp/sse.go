package mcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
)

// sseEvent is one server-sent event as read: its fields in order, so that
// an event passes on as it came unless its data is replaced.
type sseEvent struct {
	name, id []byte // the event: and id: values, nil when absent
	lines    [][]byte
	data     []byte // the data: lines joined by "\n"
	hasData  bool
}

// sseReader reads server-sent events, each of at most max bytes.
type sseReader struct {
	in  *LineReader
	raw *rawLines
}

// rawLines reads lines keeping blank ones (which end SSE events).
type rawLines struct{ l *LineReader }

func (r rawLines) next() ([]byte, error) {
	line, err := r.l.line()
	if err != nil {
		return nil, err
	}
	return bytes.TrimRight(line, "\r"), nil
}

func newSSEReader(r io.Reader, max int) *sseReader {
	l := NewLineReader(r, max)
	return &sseReader{in: l, raw: &rawLines{l}}
}

// next returns the next event; comments (lines starting with ":", such as
// keep-alives) are returned as events with only lines, so they pass on.
func (r *sseReader) next() (*sseEvent, error) {
	ev := &sseEvent{}
	size := 0
	for {
		line, err := r.raw.next()
		if err == io.EOF && len(ev.lines) > 0 {
			return ev, nil // an event cut short by the end: pass on what came
		}
		if err != nil {
			return nil, err
		}
		if len(line) == 0 {
			if len(ev.lines) == 0 {
				continue
			}
			return ev, nil
		}
		if size += len(line); size > r.in.max {
			return nil, fmt.Errorf("%w: an event of more than %d bytes", errTooLong, r.in.max)
		}
		ev.lines = append(ev.lines, line)
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "data":
			if ev.hasData {
				ev.data = append(ev.data, '\n')
			}
			ev.data = append(ev.data, value...)
			ev.hasData = true
		case "event":
			ev.name = value
		case "id":
			ev.id = value
		}
	}
}

// isMessage reports an event that carries a JSON-RPC message: the default
// or "message" event type with data (MCP's client reads only those).
func (ev *sseEvent) isMessage() bool {
	return ev.hasData && len(bytes.TrimSpace(ev.data)) > 0 && (ev.name == nil || string(ev.name) == "message")
}

// appendRaw appends the event as it came, with the blank line ending it.
func (ev *sseEvent) appendRaw(b []byte) []byte {
	for _, l := range ev.lines {
		b = append(append(b, l...), '\n')
	}
	return append(b, '\n')
}

// appendWithData appends the event with its data replaced by msg (one
// line: a JSON message has no raw newline), keeping its other fields. With
// msg nil the event has no data: a client dispatches nothing for it but
// still takes its id as the last one seen.
func (ev *sseEvent) appendWithData(b []byte, msg []byte) []byte {
	wrote := msg == nil
	for _, l := range ev.lines {
		if bytes.HasPrefix(l, []byte("data:")) || string(l) == "data" {
			if !wrote {
				b = append(append(append(b, "data: "...), msg...), '\n')
				wrote = true
			}
			continue
		}
		b = append(append(b, l...), '\n')
	}
	return append(b, '\n')
}

// sseMessage is one JSON-RPC message as an SSE event of its own.
func sseMessage(msg []byte) []byte {
	b := make([]byte, 0, len(msg)+24)
	b = append(b, "event: message\ndata: "...)
	b = append(b, msg...)
	return append(b, "\n\n"...)
}

// relaySSE copies server-sent events from the server to w, each message
// through the session's FromServer, flushing after each event. A message
// FromServer drops (invalid JSON-RPC) goes on as an event without data,
// keeping its id for the client's resumption. It returns when the stream
// ends, ctx ends, or writing fails.
func relaySSE(ctx context.Context, s *Session, r io.Reader, w io.Writer, flush func() error, max int, logf func(string, ...any)) error {
	in := newSSEReader(r, max)
	var buf []byte
	for {
		ev, err := in.next()
		if err != nil {
			if errors.Is(err, io.EOF) || ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("reading the server's event stream: %w", err)
		}
		buf = buf[:0]
		if ev.isMessage() {
			out := s.FromServer(ctx, ev.data)
			switch {
			case out == nil:
				buf = ev.appendWithData(buf, nil)
			case bytes.Equal(out, bytes.TrimSpace(ev.data)):
				buf = ev.appendRaw(buf)
			default:
				buf = ev.appendWithData(buf, out)
			}
		} else {
			if ev.hasData && len(ev.name) > 0 && string(ev.name) != "message" {
				logf("server sent an event of type %q, passed on unread", ev.name)
			}
			buf = ev.appendRaw(buf)
		}
		if _, err := w.Write(buf); err != nil {
			return err
		}
		if err := flush(); err != nil {
			return err
		}
	}
}
