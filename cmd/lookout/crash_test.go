package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/lookout-dev/lookout/client"
	"github.com/lookout-dev/lookout/internal/store/postgres/pgtest"
)

// TestMain lets the test binary act as the lookout command, so that tests
// can run `lookout serve` as a child process and kill it; and it stops the
// throwaway PostgreSQL cluster pgtest may start.
func TestMain(m *testing.M) {
	if os.Getenv("LOOKOUT_TEST_MAIN") == "1" {
		os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	pgtest.Main(m)
}

// child is a `lookout serve` process.
type child struct {
	cmd  *exec.Cmd
	url  string
	logs *lockedBuffer
}

func startChild(t *testing.T, db string, args ...string) *child {
	t.Helper()
	c, err := startChildErr(t, db, args...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// startChildErr is startChild for any goroutine: it returns its error.
func startChildErr(t *testing.T, db string, args ...string) (*child, error) {
	cmd := exec.Command(os.Args[0], append([]string{"serve", "--addr", "127.0.0.1:0", "--db", db, "--quiet"}, args...)...)
	cmd.Env = append(os.Environ(), "LOOKOUT_TEST_MAIN=1")
	return startServe(t, cmd)
}

// startServe starts cmd, a `lookout serve` on a free port, and waits for
// the line that says where it serves.
func startServe(t *testing.T, cmd *exec.Cmd) (*child, error) {
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &child{cmd: cmd, logs: &lockedBuffer{}}
	t.Cleanup(func() { c.cmd.Process.Kill(); c.cmd.Wait() })
	sc := bufio.NewScanner(stderr)
	first := make(chan string, 1)
	go func() {
		// Log records before it (an index of another version being built
		// again, say) are kept with the rest; any other line is serve's
		// first.
		line := readLine(sc)
		for logRecord.MatchString(line) {
			c.logs.WriteString(line + "\n")
			line = readLine(sc)
		}
		first <- line
		for sc.Scan() {
			c.logs.WriteString(sc.Text() + "\n")
		}
	}()
	select {
	case line := <-first:
		const prefix = "lookout: serving "
		if !strings.HasPrefix(line, prefix) {
			time.Sleep(time.Second) // the rest of what it said (a race report, a panic)
			return nil, fmt.Errorf("serve's first line %q, then:\n%s", line, c.logs.String())
		}
		c.url, _, _ = strings.Cut(strings.TrimPrefix(line, prefix), " ")
	case <-time.After(60 * time.Second):
		return nil, errors.New("serve did not start in 60 s")
	}
	return c, nil
}

// logRecord is a line of slog's default text handler at INFO or WARN.
var logRecord = regexp.MustCompile(`^\d{4}/\d\d/\d\d \d\d:\d\d:\d\d (INFO|WARN) `)

// lockedBuffer is a child's log, written by the goroutine that reads its
// standard error and read by the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) WriteString(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.WriteString(s)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

func (c *child) kill(t *testing.T) {
	t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	c.cmd.Wait()
}

// TestCrash kills `lookout serve` with SIGKILL in the middle of a stream of
// pushes and all-or-nothing uploads. After a restart on the same database
// every acknowledged trace is there with its content, every push batch is
// there whole or not at all, and no dataset holds part of an upload.
func TestCrash(t *testing.T) {
	for _, b := range cliBackends(t) {
		t.Run(b.name, func(t *testing.T) { crashOnce(t, b.db(t)) })
	}
}

func crashOnce(t *testing.T, db string) {
	const (
		pushers     = 3
		uploaders   = 2
		batchSize   = 25
		uploadSize  = 400
		killAfter   = 1500 * time.Millisecond
		minAcked    = 5
		stopWaiting = 60 * time.Second
	)
	srv := startChild(t, db)
	ctx := context.Background()
	c, err := client.New(srv.url)
	if err != nil {
		t.Fatal(err)
	}

	type batch struct {
		name string
		ids  []string
	}
	type upload struct {
		datasetID string
		sent      bool // the upload request was under way
		acked     bool
	}
	var (
		mu      sync.Mutex
		acked   []batch
		uploads []upload
		wg      sync.WaitGroup
		// Requests under way, so that the kill is known to cut some off.
		pushing, uploading atomic.Int32
		// Once hold is set, the first uploader stops before its last line
		// until the kill, and held counts those stops: an upload cut there was sent
		// and cannot have been acknowledged, whatever the scheduling.
		hold atomic.Bool
		held atomic.Int32
	)
	stop := make(chan struct{})
	traceJSON := func(tag string, i int) json.RawMessage {
		return json.RawMessage(fmt.Sprintf(`{"metadata":{"batch":%q,"i":%d},"events":[{"role":"user","content":"%s %d %s"},{"role":"assistant","content":"ok"}]}`, tag, i, tag, i, strings.Repeat("x", 500)))
	}
	for g := range pushers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				name := fmt.Sprintf("p%d-%d", g, n)
				traces := make([]json.RawMessage, batchSize)
				for i := range traces {
					traces[i] = traceJSON(name, i)
				}
				pushing.Add(1)
				ids, err := c.PushTraces(ctx, "stream", traces)
				pushing.Add(-1)
				if err != nil {
					return // the server is gone
				}
				mu.Lock()
				acked = append(acked, batch{name, ids})
				mu.Unlock()
			}
		}()
	}
	for g := range uploaders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				name := fmt.Sprintf("u%d-%d", g, n)
				d, err := c.CreateDataset(ctx, "upload-"+name, false, nil)
				if err != nil {
					return
				}
				mu.Lock()
				uploads = append(uploads, upload{datasetID: d.ID})
				k := len(uploads) - 1
				mu.Unlock()
				var file bytes.Buffer
				for i := range uploadSize - 1 {
					fmt.Fprintf(&file, `[{"role":"user","content":"%s %d %s"}]`+"\n", name, i, strings.Repeat("y", 300))
				}
				last := fmt.Sprintf(`[{"role":"user","content":"%s %d"}]`+"\n", name, uploadSize-1)
				body := io.MultiReader(&file, readerFunc(func(p []byte) (int, error) {
					if g == 0 && hold.Load() {
						held.Add(1)
						<-stop
						return 0, errors.New("killed")
					}
					return 0, io.EOF
				}), strings.NewReader(last))
				mu.Lock()
				uploads[k].sent = true
				mu.Unlock()
				uploading.Add(1)
				_, err = c.Upload(ctx, d.ID, name+".jsonl", body, client.UploadOptions{})
				uploading.Add(-1)
				if err != nil {
					return
				}
				mu.Lock()
				uploads[k].acked = true
				mu.Unlock()
			}
		}()
	}
	// Kill once enough was acknowledged, while a push is under way and an
	// upload is held before its end (the other uploader may be anywhere,
	// committing included, which is left to chance).
	deadline := time.Now().Add(stopWaiting)
	time.Sleep(killAfter)
	for {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= minAcked {
			hold.Store(true)
		}
		if n >= minAcked && pushing.Load() > 0 && held.Load() > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	pushesCut, uploadsCut := pushing.Load(), uploading.Load()
	srv.kill(t)
	close(stop)
	wg.Wait()
	if len(acked) < minAcked {
		t.Fatalf("only %d batches acknowledged before the kill; server log:\n%s", len(acked), srv.logs)
	}
	ackedUploads, unacked := 0, 0
	for _, u := range uploads {
		if u.acked {
			ackedUploads++
		} else if u.sent {
			unacked++
		}
	}
	t.Logf("killed with %d push batches (%d traces) and %d of %d uploads acknowledged; %d push and %d upload requests under way at the kill",
		len(acked), len(acked)*batchSize, ackedUploads, len(uploads), pushesCut, uploadsCut)
	// The test is only worth something if the kill hit requests under way.
	if pushesCut == 0 || uploadsCut == 0 || unacked == 0 {
		t.Fatalf("the kill hit %d pushes and %d uploads under way (%d uploads sent and not acknowledged); want some of each", pushesCut, uploadsCut, unacked)
	}

	srv = startChild(t, db)
	c, err = client.New(srv.url)
	if err != nil {
		t.Fatal(err)
	}
	// Every acknowledged trace is there, with its content.
	for _, b := range acked {
		for i, id := range b.ids {
			got, err := c.Trace(ctx, id)
			if err != nil {
				t.Fatalf("acknowledged trace %s (batch %s #%d) lost: %v", id, b.name, i, err)
			}
			if !bytes.Contains(got, []byte(fmt.Sprintf(`"metadata":{"batch":%q,"i":%d}`, b.name, i))) {
				t.Fatalf("trace %s has the wrong content: %.200s", id, got)
			}
		}
	}
	// Every batch in the stream dataset is whole.
	d, err := c.FindDataset(ctx, "stream")
	if err != nil {
		t.Fatal(err)
	}
	perBatch := map[string]int{}
	total := 0
	for cursor := ""; ; {
		page, err := c.Traces(ctx, d.ID, cursor, 1000)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range page.Traces {
			var m struct{ Batch string }
			json.Unmarshal(s.Metadata, &m)
			perBatch[m.Batch]++
			total++
		}
		if cursor = page.Next; cursor == "" {
			break
		}
	}
	for name, n := range perBatch {
		if n != batchSize {
			t.Errorf("batch %s holds %d of %d traces", name, n, batchSize)
		}
	}
	if total < len(acked)*batchSize {
		t.Errorf("stream holds %d traces, %d were acknowledged", total, len(acked)*batchSize)
	}
	// No upload is partial; acknowledged ones are whole.
	for _, u := range uploads {
		d, err := c.Dataset(ctx, u.datasetID)
		if err != nil {
			t.Fatalf("dataset %s: %v", u.datasetID, err)
		}
		if d.TraceCount != 0 && d.TraceCount != uploadSize || u.acked && d.TraceCount != uploadSize {
			t.Errorf("upload into %s (acknowledged %v) holds %d of %d traces", d.Name, u.acked, d.TraceCount, uploadSize)
		}
	}
	srv.kill(t)
}
