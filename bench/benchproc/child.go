// Package benchproc runs the servers the benches measure as child processes,
// and reads their CPU time from /proc (Linux).
package benchproc

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Child is a server the bench runs: its output is kept (the last 32 KiB)
// and scanned for the line that says it is ready.
type Child struct {
	name string
	cmd  *exec.Cmd
	out  *watch
	done chan struct{}
	err  error // of Wait, once done is closed
}

// Start starts a command; ready picks the value it waits for out of
// an output line ("" for none); with ready nil it does not wait.
func Start(name string, cmd *exec.Cmd, ready func(line string) string) (*Child, string, error) {
	w := &watch{match: ready, found: make(chan string, 1)}
	cmd.Stdout, cmd.Stderr = w, w
	// The server dies with the bench, should the bench be killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, "", fmt.Errorf("starting %s: %w", name, err)
	}
	c := &Child{name: name, cmd: cmd, out: w, done: make(chan struct{})}
	go func() { c.err = cmd.Wait(); close(c.done) }()
	if ready == nil {
		return c, "", nil
	}
	select {
	case v := <-w.found:
		return c, v, nil
	case <-c.done:
		return nil, "", fmt.Errorf("%s exited at start (%v):\n%s", name, c.err, w.tail())
	case <-time.After(2 * time.Minute):
		c.Stop()
		return nil, "", fmt.Errorf("%s did not start in 2 minutes:\n%s", name, w.tail())
	}
}

// PID is the process id.
func (c *Child) PID() int { return c.cmd.Process.Pid }

// Tail is the end of the server's output (32 KiB at most).
func (c *Child) Tail() string { return c.out.tail() }

// Alive reports an error when the server has exited.
func (c *Child) Alive() error {
	select {
	case <-c.done:
		return fmt.Errorf("%s exited (%v):\n%s", c.name, c.err, c.out.tail())
	default:
		return nil
	}
}

// Stop asks the server to stop (SIGTERM), and kills it after 30 s.
func (c *Child) Stop() {
	select {
	case <-c.done:
		return
	default:
	}
	c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
		fmt.Fprintf(os.Stderr, "%s did not stop in 30 s after SIGTERM: killing it\n", c.name)
		c.cmd.Process.Kill()
		<-c.done
	}
}

// watch keeps a command's output and finds its ready line.
type watch struct {
	mu      sync.Mutex
	buf     []byte
	partial []byte
	match   func(string) string
	found   chan string
}

const tailSize = 32 << 10

func (w *watch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	if len(w.buf) > 2*tailSize {
		w.buf = append(w.buf[:0], w.buf[len(w.buf)-tailSize:]...)
	}
	if w.match == nil {
		return len(p), nil
	}
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		line := string(w.partial[:i])
		w.partial = w.partial[i+1:]
		if v := w.match(line); v != "" {
			w.found <- v
			w.match, w.partial = nil, nil
			break
		}
	}
	return len(p), nil
}

func (w *watch) tail() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	b := w.buf
	if len(b) > tailSize {
		b = b[len(b)-tailSize:]
	}
	return string(b)
}

// FreePort is a loopback port free a moment ago.
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// AfterPrefix returns what follows prefix in line up to the next space,
// or "".
func AfterPrefix(line, prefix string) string {
	_, rest, ok := strings.Cut(line, prefix)
	if !ok {
		return ""
	}
	if i := strings.IndexByte(rest, ' '); i >= 0 {
		rest = rest[:i]
	}
	return rest
}
