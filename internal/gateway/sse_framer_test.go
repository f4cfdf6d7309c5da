package gateway

import (
	"bytes"
	"testing"
)

// sseEvent is one server-sent event: its name and its data lines joined by
// "\n", as the proxy hands them to Stream.Add.
type sseEvent struct {
	name string
	data []byte
}

// sseFramer splits a byte stream into server-sent events as the WHATWG
// spec says (lines end in CRLF, LF or CR; "field: value" with one optional
// space; a blank line dispatches; ":" starts a comment), whatever sizes the
// bytes arrive in. The tests use it to feed recorded streams re-chunked at
// every byte boundary.
type sseFramer struct {
	buf      []byte
	name     string
	data     [][]byte
	hasData  bool
	eventsOK []sseEvent
}

// feed consumes p and returns the events it completed.
func (f *sseFramer) feed(p []byte) []sseEvent {
	f.buf = append(f.buf, p...)
	f.eventsOK = nil
	for {
		i := bytes.IndexAny(f.buf, "\r\n")
		if i < 0 {
			break
		}
		n := 1
		if f.buf[i] == '\r' {
			if i+1 == len(f.buf) {
				break // a CR last: it may be the first half of CRLF
			}
			if f.buf[i+1] == '\n' {
				n = 2
			}
		}
		f.line(f.buf[:i])
		f.buf = f.buf[i+n:]
	}
	return f.eventsOK
}

// end consumes what is left at the end of input; an event not ended by a
// blank line is dropped, as the spec says.
func (f *sseFramer) end() []sseEvent {
	f.eventsOK = nil
	if len(f.buf) > 0 {
		line := bytes.TrimSuffix(f.buf, []byte("\r"))
		f.line(line)
		f.buf = nil
	}
	return f.eventsOK
}

func (f *sseFramer) line(l []byte) {
	if len(l) == 0 {
		if f.hasData {
			f.eventsOK = append(f.eventsOK, sseEvent{name: f.name, data: bytes.Join(f.data, []byte("\n"))})
		}
		f.name, f.data, f.hasData = "", nil, false
		return
	}
	if l[0] == ':' {
		return
	}
	field, value := l, []byte(nil)
	if i := bytes.IndexByte(l, ':'); i >= 0 {
		field, value = l[:i], l[i+1:]
		value = bytes.TrimPrefix(value, []byte(" "))
	}
	switch string(field) {
	case "event":
		f.name = string(value)
	case "data":
		f.data = append(f.data, append([]byte(nil), value...))
		f.hasData = true
	}
}

// frame splits data into events, fed in the given chunk sizes (cycled).
func frame(data []byte, sizes ...int) []sseEvent {
	var f sseFramer
	var out []sseEvent
	for i, k := 0, 0; i < len(data); k++ {
		n := len(data) - i
		if len(sizes) > 0 && sizes[k%len(sizes)] < n {
			n = sizes[k%len(sizes)]
		}
		out = append(out, f.feed(data[i:i+n])...)
		i += n
	}
	return append(out, f.end()...)
}

func TestSSEFramer(t *testing.T) {
	in := []byte(": keep-alive\r\nevent: a\r\ndata: 1\r\ndata:2\r\n\r\ndata: x\n\nid: 7\rdata: y\r\rdata: z")
	want := []sseEvent{{"a", []byte("1\n2")}, {"", []byte("x")}, {"", []byte("y")}}
	for _, sizes := range [][]int{nil, {1}, {2}, {3, 1, 5}} {
		got := frame(in, sizes...)
		if len(got) != len(want) {
			t.Fatalf("sizes %v: %d events, want %d: %q", sizes, len(got), len(want), got)
		}
		for i := range want {
			if got[i].name != want[i].name || !bytes.Equal(got[i].data, want[i].data) {
				t.Errorf("sizes %v: event %d = %q %q, want %q %q", sizes, i, got[i].name, got[i].data, want[i].name, want[i].data)
			}
		}
	}
}
