package storetest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lookout-dev/lookout/internal/search"
	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/trace"
)

// Environment of the child process of Crash.
const (
	crashEnv     = "LOOKOUT_STORETEST_CRASH_CHILD"
	crashDSN     = "LOOKOUT_STORETEST_CRASH_DSN"
	crashOwner   = "LOOKOUT_STORETEST_CRASH_OWNER"
	crashDataset = "LOOKOUT_STORETEST_CRASH_DATASET"
	crashRound   = "LOOKOUT_STORETEST_CRASH_ROUND"
)

// Crash checks that what AddTraces acknowledged survives SIGKILL. A child
// process (this test binary, run again for the calling test) adds batches
// of 1 to 8 traces in a loop and prints the ids of each batch once
// AddTraces has returned; the parent kills it with SIGKILL mid-stream,
// several times, then reopens the store: every acknowledged trace must be
// there and complete, every batch must be whole or absent, and the
// dataset's counters must agree with what is listed.
//
// Call it from a top-level test. dsn gives the store's location (called in
// the parent only); open opens a store there, in the parent and the child.
func Crash(t *testing.T, dsn func(t *testing.T) string, open func(ctx context.Context, dsn string) (store.Store, error)) {
	if os.Getenv(crashEnv) != "" {
		crashChild(t, open)
		return
	}
	ctx := context.Background()
	where := dsn(t)
	st, err := open(ctx, where)
	if err != nil {
		t.Fatal(err)
	}
	u, err := st.CreateUser(ctx, "crash", "x")
	if err != nil {
		t.Fatal(err)
	}
	d, err := st.CreateDataset(ctx, store.Dataset{OwnerID: u.ID, Name: "crash"})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	tau := TauBench(t) // the child uses them too: check the corpus here first

	var pattern []string
	for _, part := range strings.Split(t.Name(), "/") {
		pattern = append(pattern, "^"+regexp.QuoteMeta(part)+"$")
	}
	acked := map[int]ackedBatch{}
	const rounds = 4
	for round := 1; round <= rounds; round++ {
		cmd := exec.Command(os.Args[0], "-test.run="+strings.Join(pattern, "/"), "-test.count=1", "-test.timeout=5m")
		cmd.Env = append(os.Environ(), crashEnv+"=1", crashDSN+"="+where, crashOwner+"="+u.ID, crashDataset+"="+d.ID, crashRound+"="+strconv.Itoa(round))
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		target := 15 + rand.IntN(30) // batches to see acknowledged before the kill
		var mu sync.Mutex
		var lines []string
		got := make(chan struct{}, 1<<16)
		readDone := make(chan struct{})
		go func() {
			defer close(readDone)
			sc := bufio.NewScanner(out)
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				mu.Lock()
				lines = append(lines, sc.Text())
				mu.Unlock()
				got <- struct{}{}
			}
		}()
		deadline := time.After(2 * time.Minute)
		n := 0
	wait:
		for n < target {
			select {
			case <-got:
				n++
			case <-readDone:
				break wait
			case <-deadline:
				break wait
			}
		}
		// Kill at a random moment between two acknowledgements, most likely
		// inside a transaction.
		time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond)
		cmd.Process.Signal(syscall.SIGKILL)
		<-readDone
		werr := cmd.Wait()
		if n < target {
			t.Fatalf("round %d: the child acknowledged %d batches, want %d before the kill (%v); its stderr:\n%s", round, n, target, werr, stderr.String())
		}
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("round %d: the child ended with %v, not by SIGKILL; its stderr:\n%s", round, werr, stderr.String())
		}
		mu.Lock()
		for _, line := range lines {
			b, err := parseAck(line)
			if err != nil {
				t.Fatalf("round %d: child said %q: %v", round, line, err)
			}
			acked[b.batch] = b
		}
		mu.Unlock()
		t.Logf("round %d: killed the child after %d acknowledged batches", round, len(lines))

		// Reopen and check, as the next server would.
		checkCrashed(t, open, where, d.ID, acked, tau)
	}
}

type ackedBatch struct {
	batch int
	ids   []string
}

// parseAck reads "ack BATCH ID...".
func parseAck(line string) (ackedBatch, error) {
	f := strings.Fields(line)
	if len(f) < 3 || f[0] != "ack" {
		return ackedBatch{}, fmt.Errorf("not an acknowledgement")
	}
	b, err := strconv.Atoi(f[1])
	if err != nil {
		return ackedBatch{}, err
	}
	if len(f)-2 != crashBatchSize(b) {
		return ackedBatch{}, fmt.Errorf("batch %d has %d ids, want %d", b, len(f)-2, crashBatchSize(b))
	}
	return ackedBatch{batch: b, ids: f[2:]}, nil
}

func crashBatchSize(batch int) int { return 1 + batch%8 }

// crashTrace is trace pos of batch: a tau-bench trace with metadata naming
// its batch, and one annotation.
func crashTrace(tau []*trace.Trace, batch, pos int) store.NewTrace {
	c := *tau[(batch*7+pos)%len(tau)]
	c.Annotations = nil
	c.Name = fmt.Sprintf("batch %d trace %d", batch, pos)
	c.Metadata = json.RawMessage(fmt.Sprintf(`{"batch":%d,"pos":%d,"size":%d}`, batch, pos, crashBatchSize(batch)))
	return store.NewTrace{
		Trace:       &c,
		Annotations: []store.Annotation{{Address: "messages[0]", Content: c.Name, Source: "user"}},
	}
}

func crashChild(t *testing.T, open func(ctx context.Context, dsn string) (store.Store, error)) {
	ctx := context.Background()
	tau := TauBench(t)
	st, err := open(ctx, os.Getenv(crashDSN))
	if err != nil {
		t.Fatal(err)
	}
	round, _ := strconv.Atoi(os.Getenv(crashRound))
	owner, dataset := os.Getenv(crashOwner), os.Getenv(crashDataset)
	stop := time.Now().Add(2 * time.Minute) // the parent kills the child long before
	for b := round * 1_000_000; time.Now().Before(stop); b++ {
		batch := make([]store.NewTrace, crashBatchSize(b))
		for i := range batch {
			batch[i] = crashTrace(tau, b, i)
		}
		ids, err := st.AddTraces(ctx, owner, dataset, batch)
		if err != nil {
			t.Fatalf("batch %d: %v", b, err)
		}
		fmt.Fprintf(os.Stdout, "ack %d %s\n", b, strings.Join(ids, " "))
	}
	t.Fatal("the parent did not kill the child")
}

func checkCrashed(t *testing.T, open func(ctx context.Context, dsn string) (store.Store, error), where, datasetID string, acked map[int]ackedBatch, tau []*trace.Trace) {
	t.Helper()
	ctx := context.Background()
	st, err := open(ctx, where)
	if err != nil {
		t.Fatalf("reopening after the crash: %v", err)
	}
	defer st.Close()
	for _, b := range acked {
		for pos, id := range b.ids {
			got, err := st.Trace(ctx, id)
			if err != nil {
				t.Fatalf("acknowledged trace %s (batch %d) is lost: %v", id, b.batch, err)
			}
			want := crashTrace(tau, b.batch, pos)
			if canonical(got.Trace) != canonical(want.Trace) {
				t.Fatalf("acknowledged trace %s (batch %d) is not what was written", id, b.batch)
			}
			as, err := st.ListAnnotations(ctx, id)
			if err != nil || len(as) != 1 || as[0].Content != want.Trace.Name {
				t.Fatalf("annotations of acknowledged trace %s: %v, %v", id, as, err)
			}
		}
	}
	type meta struct{ Batch, Pos, Size int }
	seen := map[int][]traceAt{}
	var all []store.TraceSummary
	cursor := ""
	for {
		items, next, err := st.ListTraces(ctx, datasetID, store.Page{Cursor: cursor, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, items...)
		if next == "" {
			break
		}
		cursor = next
	}
	for _, s := range all {
		var m meta
		if err := json.Unmarshal(s.Metadata, &m); err != nil {
			t.Fatalf("trace %s: metadata %s: %v", s.ID, s.Metadata, err)
		}
		seen[m.Batch] = append(seen[m.Batch], traceAt{Pos: m.Pos, Index: s.Index, Size: m.Size})
	}
	for b, ts := range seen {
		size := crashBatchSize(b)
		if len(ts) != size {
			t.Fatalf("batch %d is partial: %d of its %d traces are stored", b, len(ts), size)
		}
		for i, x := range ts {
			if x.Pos != i || x.Size != size || x.Index != ts[0].Index+int64(i) {
				t.Fatalf("batch %d: trace %d is %+v", b, i, x)
			}
		}
	}
	for b := range acked {
		if _, ok := seen[b]; !ok {
			t.Fatalf("acknowledged batch %d is not listed", b)
		}
	}
	d, err := st.Dataset(ctx, datasetID)
	if err != nil {
		t.Fatal(err)
	}
	if d.TraceCount != int64(len(all)) {
		t.Fatalf("the dataset counts %d traces; %d are listed", d.TraceCount, len(all))
	}
	checkCrashedSearch(t, st, datasetID, all, seen)
	t.Logf("%d acknowledged batches checked; %d batches (%d traces) stored in all", len(acked), len(seen), len(all))
}

// checkCrashedSearch checks that the search index, which the killed child
// was most likely writing (it indexes in the background while the child
// adds), answers as a scan of the stored traces would: a filter every
// trace matches finds each stored trace once, and a filter of one batch
// finds that batch.
func checkCrashedSearch(t *testing.T, st store.Store, datasetID string, all []store.TraceSummary, seen map[int][]traceAt) {
	t.Helper()
	ctx := context.Background()
	find := func(src string) []string {
		q, err := search.Parse(src)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		cursor := ""
		for {
			res, err := st.SearchTraces(ctx, datasetID, q, store.SearchOptions{Page: store.Page{Cursor: cursor, Limit: 1000}})
			if err != nil {
				t.Fatalf("search %q after the crash: %v", src, err)
			}
			for _, h := range res.Traces {
				ids = append(ids, h.ID)
			}
			if res.Next == "" {
				return ids
			}
			cursor = res.Next
		}
	}
	want := make([]string, len(all))
	for i, s := range all {
		want[i] = s.ID
	}
	if got := find("meta:size>0"); !slices.Equal(got, want) {
		t.Fatalf("after the crash, meta:size>0 finds %d traces; a scan finds %d", len(got), len(want))
	}
	// A word of every tau-bench trace's system prompt, and of none's metadata.
	if got := find("airline"); !slices.Equal(got, want) {
		t.Fatalf("after the crash, airline finds %d traces; a scan finds %d", len(got), len(want))
	}
	n := 0
	for b := range seen {
		if n++; n > 3 {
			break
		}
		var ids []string
		for _, s := range all {
			var m struct{ Batch int }
			json.Unmarshal(s.Metadata, &m)
			if m.Batch == b {
				ids = append(ids, s.ID)
			}
		}
		if got := find(fmt.Sprintf("meta:batch=%d", b)); !slices.Equal(got, ids) {
			t.Fatalf("after the crash, meta:batch=%d finds %v; a scan finds %v", b, got, ids)
		}
	}
}

// traceAt is where a trace of a crash-test batch was found.
type traceAt struct {
	Pos, Size int
	Index     int64
}
