package gateway

import (
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func TestSSEReader(t *testing.T) {
	in := ": comment\n\nevent: message_start\ndata: {\"a\":1}\n\n" +
		"data: line one\ndata: line two\r\n\r\n" +
		"data: [DONE]\n\n" +
		"data: cut at the end"
	want := []upstreamEvent{
		{raw: []byte(": comment\n\nevent: message_start\ndata: {\"a\":1}\n\n"), name: "message_start", data: []byte(`{"a":1}`)},
		{raw: []byte("data: line one\ndata: line two\r\n\r\n"), data: []byte("line one\nline two")},
		{raw: []byte("data: [DONE]\n\n"), data: []byte("[DONE]")},
		{raw: []byte("data: cut at the end"), data: []byte("cut at the end")},
	}
	// Read byte by byte too: events split anywhere arrive whole.
	for _, r := range []io.Reader{strings.NewReader(in), iotest.OneByteReader(strings.NewReader(in))} {
		s := newSSEReader(r)
		var raw strings.Builder
		for i, w := range want {
			ev, err := s.next()
			if err != nil {
				t.Fatalf("event %d: %v", i, err)
			}
			if string(ev.raw) != string(w.raw) || ev.name != w.name || string(ev.data) != string(w.data) {
				t.Fatalf("event %d: got %q %q %q, want %q %q %q", i, ev.raw, ev.name, ev.data, w.raw, w.name, w.data)
			}
			raw.Write(ev.raw)
		}
		if _, err := s.next(); err != io.EOF {
			t.Fatalf("after the last event: %v, want EOF", err)
		}
		if raw.String() != in {
			t.Fatal("the raw bytes of the events do not add up to the stream")
		}
	}
}

func TestSSEReaderBounded(t *testing.T) {
	s := newSSEReader(strings.NewReader("data: " + strings.Repeat("x", maxEventSize+10) + "\n\n"))
	if _, err := s.next(); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("an oversized event: %v", err)
	}
}
