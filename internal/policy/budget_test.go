package policy_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/lookout-dev/lookout/internal/policy"
	"github.com/lookout-dev/lookout/internal/trace"
)

// backtrackPolicy and backtrackTrace are issue 19's request: each 'x' of
// the message makes the backtracking engine try 2^22 ways before failing,
// about half a second, and find tries every 'x'. It ran 28.6 s: each match
// had a fresh 2 s timeout and the time budget was only checked between
// evaluation steps.
const backtrackPolicy = `raise "backtracking" if:
    (m: Message)
    any(find("x(?!(a+)+$)", m.content))
`

func backtrackTrace(t testing.TB, reps int) []trace.Event {
	content, _ := json.Marshal(strings.Repeat("x"+strings.Repeat("a", 22)+"!", reps))
	return events(t, `[{"role": "user", "content": `+string(content)+`}]`)
}

func wantBudgetError(t *testing.T, err error, msg string) *policy.RuntimeError {
	t.Helper()
	var re *policy.RuntimeError
	if !errors.As(err, &re) || re.Class != policy.ClassBudget || !strings.Contains(re.Msg, msg) {
		t.Fatalf("want a BudgetExceeded error saying %q, got %v", msg, err)
	}
	return re
}

func TestTimeBudgetCoversRegexMatching(t *testing.T) {
	p := mustParse(t, backtrackPolicy)
	p.SetLimits(policy.Limits{Steps: 50_000_000, Time: time.Second})
	start := time.Now()
	_, err := p.Analyze(backtrackTrace(t, 60), nil)
	d := time.Since(start)
	wantBudgetError(t, err, "time budget")
	t.Logf("stopped after %v (budget 1s)", d)
	if d > 10*time.Second {
		t.Errorf("a 1s budget stopped the check after %v", d)
	}
}

// TestCancelStopsCheck: a cancelled context (a client that went away)
// ends the check in the middle of a backtracking match.
func TestCancelStopsCheck(t *testing.T) {
	p := mustParse(t, backtrackPolicy)
	evs := backtrackTrace(t, 60)
	ctx, cancel := context.WithCancel(context.Background())
	var cancelled time.Time
	time.AfterFunc(200*time.Millisecond, func() { cancelled = time.Now(); cancel() })
	_, err := p.AnalyzeContext(ctx, evs, nil)
	lag := time.Since(cancelled)
	wantBudgetError(t, err, "cancelled")
	t.Logf("the check ended %v after the cancellation", lag)
	if lag > 2*time.Second {
		t.Errorf("the check ended %v after its context was cancelled", lag)
	}
	// a context that is already done does not start the check
	if _, err := p.AnalyzeContext(ctx, evs, nil); err == nil {
		t.Fatal("a done context: want an error")
	}
}

// TestCallerDeadline: the sooner of the caller's deadline and the budget
// applies, for AnalyzePendingContext too (the gateway's call).
func TestCallerDeadline(t *testing.T) {
	p := mustParse(t, backtrackPolicy)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := p.AnalyzePendingContext(ctx, nil, backtrackTrace(t, 60), nil)
	wantBudgetError(t, err, "deadline")
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("a 300ms deadline stopped the check after %v", d)
	}
}

// chainPolicy is a rule whose condition is one chain of n attributes.
func chainPolicy(n int) string {
	return "raise \"x\" if:\n    (m: Message)\n    m.content" + strings.Repeat(".a", n) + " == 1\n"
}

func TestLoadingIsLinearAndBounded(t *testing.T) {
	// 40,000 attributes (80 KB) loaded in 22.6 s when the checker typed
	// every chain prefix again; linear now (BenchmarkParseAttributeChain).
	start := time.Now()
	if _, err := policy.Parse(chainPolicy(40_000)); err != nil {
		t.Fatal(err)
	}
	t.Logf("40,000 attributes loaded in %v", time.Since(start))
	// 200,000 attributes (400 KB) ran for minutes; now refused at once.
	start = time.Now()
	_, err := policy.ParseContext(context.Background(), "big.iv", chainPolicy(200_000))
	var le *policy.LoadError
	if !errors.As(err, &le) || !strings.Contains(le.Error(), "more than 50000 chained operations") {
		t.Fatalf("want a load error about the chain, got %v", err)
	}
	d := time.Since(start)
	t.Logf("the 400 KB policy was refused in %v", d)
	if d > 30*time.Second { // generous for -race on a shared machine
		t.Errorf("refusing the 400 KB policy took %v", d)
	}
	if r := le.Report(); len(r) > 2000 {
		t.Errorf("the report of a one-line policy quotes all of it (%d bytes)", len(r))
	}
	// a policy over MaxPolicySize is not read at all
	_, err = policy.Parse(strings.Repeat("# comment\n", policy.MaxPolicySize/10+1))
	if !errors.As(err, &le) || le.Diagnostics[0].Class != policy.ClassBudget || !strings.Contains(le.Error(), "at most 1048576") {
		t.Fatalf("an oversized policy: want a BudgetExceeded load error, got %v", err)
	}
	// loading stops with its context
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = policy.ParseContext(ctx, "p.iv", chainPolicy(10))
	if !errors.As(err, &le) || len(le.Diagnostics) != 1 || le.Diagnostics[0].Class != policy.ClassBudget {
		t.Fatalf("a done context: want a BudgetExceeded load error, got %v", err)
	}
}

func TestDiagnosticsAreCapped(t *testing.T) {
	var b strings.Builder
	b.WriteString("raise \"x\" if:\n    ")
	for i := 0; i < 5000; i++ {
		fmt.Fprintf(&b, "unknown%d + ", i)
	}
	b.WriteString("1 == 2\n")
	_, err := policy.Parse(b.String())
	var le *policy.LoadError
	if !errors.As(err, &le) || len(le.Diagnostics) != 100 {
		t.Fatalf("want 100 diagnostics, got %v", err)
	}
}

// differentMessages is n user messages with distinct contents.
func differentMessages(t testing.TB, n int) []trace.Event {
	var evs []string
	for i := 0; i < n; i++ {
		evs = append(evs, fmt.Sprintf(`{"role": "user", "content": "message %d"}`, i))
	}
	return events(t, "["+strings.Join(evs, ",")+"]")
}

// TestViolationCap: issue 19's 1,000-event product made a 94 MB answer
// and took the server to 3.4 GB. The check now stops at the cap, says the
// result is truncated, and allocates a few MB.
func TestViolationCap(t *testing.T) {
	p := mustParse(t, `raise PolicyViolation("different", a, b) if:
    (a: Message)
    (b: Message)
    a.content != b.content`)
	evs := differentMessages(t, 1000)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	res, err := p.Analyze(evs, nil)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Violations) != policy.DefaultLimits.Violations || !res.Truncated {
		t.Fatalf("%d violations, truncated %v; want %d and truncated", len(res.Violations), res.Truncated, policy.DefaultLimits.Violations)
	}
	if d, ok := res.ToDict()["truncated"]; d != true || !ok {
		t.Errorf("ToDict has no truncated: true")
	}
	const bound = 64 << 20
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("the check allocated %.1f MiB", float64(alloc)/(1<<20))
	if alloc > bound {
		t.Errorf("the check allocated %d MiB, over the bound of %d MiB", alloc>>20, bound>>20)
	}
	// below the cap and smaller caps: testdata/lookout/budgets.json
}

func TestLimiter(t *testing.T) {
	l := policy.NewLimiter(1, 1, 100*time.Millisecond)
	ctx := context.Background()
	release, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// the queue's one place: waits, then gives up
	waited := make(chan error)
	go func() {
		_, err := l.Acquire(ctx)
		waited <- err
	}()
	time.Sleep(20 * time.Millisecond)
	// the queue is full: refused at once
	if _, err := l.Acquire(ctx); !errors.Is(err, policy.ErrBusy) {
		t.Fatalf("full queue: want ErrBusy, got %v", err)
	}
	if err := <-waited; !errors.Is(err, policy.ErrBusy) {
		t.Fatalf("the wait ran out: want ErrBusy, got %v", err)
	}
	// a waiter gets the slot when it is released
	go func() { time.Sleep(20 * time.Millisecond); release(); release() }()
	r2, err := l.Acquire(ctx)
	if err != nil {
		t.Fatalf("after a release: %v", err)
	}
	// a cancelled waiter returns its context's error
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := l.Wait(cctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Wait: %v", err)
	}
	r2()
	r3, err := l.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r3()
}
