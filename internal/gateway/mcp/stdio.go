package mcp

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
)

// DefaultMaxMessage bounds one message (a stdio line, an HTTP body, an SSE
// event): the size of the server's default request body limit, which the
// step carrying a tool's result must fit in.
const DefaultMaxMessage = 64 << 20

// errTooLong is a line longer than the bound; it was read and discarded.
var errTooLong = errors.New("message too long")

// LineReader reads newline-delimited messages of at most Max bytes.
type LineReader struct {
	r   *bufio.Reader
	max int
}

// NewLineReader reads from r; max <= 0 means DefaultMaxMessage.
func NewLineReader(r io.Reader, max int) *LineReader {
	if max <= 0 {
		max = DefaultMaxMessage
	}
	return &LineReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// Next returns the next line without its "\n" (and "\r"), skipping blank
// lines. A line longer than the bound is discarded whole and reported as
// an error wrapping errTooLong; reading can go on after it. At the end of
// input Next returns io.EOF (a last line without "\n" is returned first).
func (l *LineReader) Next() ([]byte, error) {
	for {
		line, err := l.line()
		if err != nil {
			return nil, err
		}
		if line = bytes.TrimRight(line, "\r"); len(bytes.TrimSpace(line)) > 0 {
			return line, nil
		}
	}
}

func (l *LineReader) line() ([]byte, error) {
	var buf []byte
	for {
		chunk, err := l.r.ReadSlice('\n')
		if len(buf)+len(chunk) > l.max+1 {
			n := len(buf) + len(chunk)
			for err == bufio.ErrBufferFull {
				chunk, err = l.r.ReadSlice('\n')
				n += len(chunk)
			}
			if err != nil && err != io.EOF {
				return nil, err
			}
			return nil, fmt.Errorf("%w: %d bytes or more, the bound is %d", errTooLong, n, l.max)
		}
		buf = append(buf, chunk...)
		switch err {
		case nil:
			return buf[:len(buf)-1], nil
		case bufio.ErrBufferFull:
			continue
		case io.EOF:
			if len(buf) > 0 {
				return buf, nil
			}
			return nil, io.EOF
		default:
			return nil, err
		}
	}
}

// Stdio relays one session between a client and a server that speak the
// MCP stdio transport: newline-delimited JSON-RPC, both ways.
type Stdio struct {
	Session *Session
	// ClientIn and ClientOut are the client's side (lookout mcp's own
	// standard input and output); ServerIn and ServerOut the server's
	// (its standard input and output).
	ClientIn  io.Reader
	ClientOut io.Writer
	ServerIn  io.WriteCloser
	ServerOut io.Reader
	// MaxMessage bounds a line (0: DefaultMaxMessage).
	MaxMessage int
	// Logf receives diagnostics (nil: discarded).
	Logf func(format string, args ...any)

	outMu sync.Mutex // one line at a time on ClientOut
}

// Run relays until the server's output ends, and returns then. When the
// client's input ends, the server's input is closed (which tells a stdio
// server to exit). The client's input is read on a goroutine of its own
// that ends when that input does. Run returns the first error writing to
// the client, or nil.
func (r *Stdio) Run(ctx context.Context) error {
	logf := r.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	go r.clientToServer(ctx, logf)
	return r.serverToClient(ctx, logf)
}

func (r *Stdio) clientToServer(ctx context.Context, logf func(string, ...any)) {
	defer r.ServerIn.Close()
	in := NewLineReader(r.ClientIn, r.MaxMessage)
	serverGone := false
	for {
		line, err := in.Next()
		if errors.Is(err, errTooLong) {
			logf("client sent a line that is too long, dropped: %v", err)
			continue
		}
		if err != nil {
			if err != io.EOF {
				logf("reading the client: %v", err)
			}
			return
		}
		out := r.Session.FromClient(ctx, line)
		if out.Reply != nil {
			if err := r.toClient(out.Reply); err != nil {
				logf("writing to the client: %v", err)
				return
			}
		}
		if out.Forward != nil && !serverGone {
			if _, err := r.ServerIn.Write(append(out.Forward, '\n')); err != nil {
				// The server has exited or closed its input; Run ends
				// when its output does.
				logf("writing to the server: %v", err)
				serverGone = true
			}
		}
	}
}

func (r *Stdio) serverToClient(ctx context.Context, logf func(string, ...any)) error {
	in := NewLineReader(r.ServerOut, r.MaxMessage)
	for {
		line, err := in.Next()
		if errors.Is(err, errTooLong) {
			logf("server sent a line that is too long, dropped: %v", err)
			continue
		}
		if err != nil {
			if err != io.EOF {
				logf("reading the server: %v", err)
			}
			return nil
		}
		if out := r.Session.FromServer(ctx, line); out != nil {
			if err := r.toClient(out); err != nil {
				return fmt.Errorf("writing to the client: %w", err)
			}
		}
	}
}

func (r *Stdio) toClient(msg []byte) error {
	r.outMu.Lock()
	defer r.outMu.Unlock()
	b := make([]byte, 0, len(msg)+1)
	_, err := r.ClientOut.Write(append(append(b, msg...), '\n'))
	return err
}
