package gateway

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// maxEventSize bounds one server-sent event of an upstream stream.
const maxEventSize = 16 << 20

// upstreamEvent is one server-sent event: its bytes as received (forwarded
// unchanged), its name and its data lines joined by "\n".
type upstreamEvent struct {
	raw  []byte
	name string
	data []byte
}

// sseReader reads server-sent events (text/event-stream) one at a time,
// keeping each event's bytes as they came.
type sseReader struct {
	r *bufio.Reader
}

func newSSEReader(r io.Reader) *sseReader { return &sseReader{r: bufio.NewReaderSize(r, 32<<10)} }

// next returns the next event; io.EOF at the end. A stream cut inside an
// event returns what came of it as a last event.
func (s *sseReader) next() (upstreamEvent, error) {
	var ev upstreamEvent
	var data [][]byte
	for {
		line, err := s.readLine()
		if len(line) > 0 {
			ev.raw = append(ev.raw, line...)
			if len(ev.raw) > maxEventSize {
				return ev, fmt.Errorf("an event of the upstream stream is larger than %d MiB", maxEventSize>>20)
			}
		}
		text := bytes.TrimRight(line, "\r\n")
		if len(text) == 0 && len(line) > 0 { // a blank line ends the event
			if len(data) > 0 || ev.name != "" {
				ev.data = bytes.Join(data, []byte("\n"))
				return ev, nil
			}
			continue // blank lines before an event: kept in raw, forwarded with it
		}
		if len(text) > 0 {
			field, value, _ := bytes.Cut(text, []byte(":"))
			value = bytes.TrimPrefix(value, []byte(" "))
			switch string(field) {
			case "data":
				data = append(data, append([]byte(nil), value...))
			case "event":
				ev.name = string(value)
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				if len(data) > 0 || ev.name != "" {
					ev.data = bytes.Join(data, []byte("\n"))
					return ev, nil
				}
				if len(ev.raw) > 0 {
					return ev, nil // trailing comments or blank lines
				}
			}
			return ev, err
		}
	}
}

// readLine reads one line with its ending, bounded by maxEventSize.
func (s *sseReader) readLine() ([]byte, error) {
	var line []byte
	for {
		frag, err := s.r.ReadSlice('\n')
		line = append(line, frag...)
		if err == nil || !errors.Is(err, bufio.ErrBufferFull) {
			return line, err
		}
		if len(line) > maxEventSize {
			return line, fmt.Errorf("a line of the upstream stream is larger than %d MiB", maxEventSize>>20)
		}
	}
}
