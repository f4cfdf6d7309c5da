package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lookout-dev/lookout/internal/policy"
	"github.com/lookout-dev/lookout/internal/trace"
)

// Guardrail is one policy in force on a call.
type Guardrail struct {
	ID     string // the saved policy's id, or "inline" for a header policy
	Name   string
	Mode   string // "block" or "log"
	Policy *policy.Policy
}

// Blocks reports whether a violation of g refuses the call.
func (g *Guardrail) Blocks() bool { return g.Mode == "block" }

// Finding is one violation of a guardrail, or the guardrail's failure to
// check (Err) — which refuses the call when the guardrail blocks (fail
// closed) and lets it through when it logs (fail open).
type Finding struct {
	Guardrail *Guardrail
	Violation *policy.Violation // nil when Err is set
	Err       error
	// New reports that the finding involves the call's new events (the
	// ones not recorded by an earlier call), so it is recorded now.
	New bool
}

// Message is the finding for people.
func (f *Finding) Message() string {
	if f.Err != nil {
		mode := "lets the call through (log mode fails open)"
		if f.Guardrail.Blocks() {
			mode = "refuses the call (block mode fails closed)"
		}
		return fmt.Sprintf("guardrail %q failed: %v; Lookout %s", f.Guardrail.Name, f.Err, mode)
	}
	return f.Violation.Text()
}

// Verdict is the outcome of checking events against guardrails.
type Verdict struct {
	Findings []Finding
	// Blocked is set when a blocking guardrail has a violation or failed.
	Blocked bool
	// sums are the checked events' prefix sums, when computed: the next
	// check of the call, on these events and the answer's, starts from them.
	sums []eventsSum
	// trace is the checked events as the policies saw them, when built:
	// the next check of the call extends it.
	trace *policy.Trace
}

// Message is what a refused call answers: every blocking finding, in
// guardrail order.
func (v *Verdict) Message() string {
	var parts []string
	for i := range v.Findings {
		f := &v.Findings[i]
		if !f.Guardrail.Blocks() {
			continue
		}
		parts = append(parts, fmt.Sprintf("[Lookout] blocked by guardrail %q: %s", f.Guardrail.Name, f.Message()))
	}
	return strings.Join(parts, "; ")
}

// Details is the verdict for the API: Invariant's error objects (key, args,
// kwargs, ranges) with the guardrail each comes from.
func (v *Verdict) Details() map[string]any {
	errs := make([]map[string]any, 0, len(v.Findings))
	for i := range v.Findings {
		f := &v.Findings[i]
		var d map[string]any
		if f.Violation != nil {
			d = f.Violation.ToDict()
		} else {
			d = map[string]any{"key": "", "args": []any{f.Message()}, "kwargs": map[string]any{}, "ranges": []string{}}
		}
		d["guardrail"] = map[string]any{"id": f.Guardrail.ID, "name": f.Guardrail.Name, "action": f.Guardrail.Mode}
		errs = append(errs, d)
	}
	return map[string]any{"errors": errs, "blocked": v.Blocked}
}

// Limiter bounds how many checks run at once; Acquire waits for a turn or
// fails when ctx ends first.
type Limiter interface {
	Acquire(ctx context.Context) (release func(), err error)
}

// Guard checks events against guardrails under one deadline per check.
type Guard struct {
	// Timeout bounds one check of one call against all its guardrails
	// (0: 5 s).
	Timeout time.Duration
	// Limit, when set, bounds concurrent checks across the server.
	Limit Limiter
	// Full analyzes every call's events in full rather than extending the
	// analysis of the conversation's last check (snapshots.go); the
	// answers are the same, the work is not.
	Full bool

	snapOnce sync.Once
	snaps    *snapshots
}

// Check checks the events of a call against rails. The events from
// index first on are the call's new ones: every violation blocks when its
// guardrail does (the whole conversation is checked, as Invariant's gateway
// does, so a retried request that was refused is refused again), but only
// violations involving new events are marked New, to be recorded once.
// Unless g.Full, each guardrail's analysis extends the snapshot of the
// longest prefix of events an earlier check analyzed (snapshots.go), with
// the answer a full analysis gives.
func (g *Guard) Check(ctx context.Context, rails []*Guardrail, events []trace.Event, first int, params map[string]any) Verdict {
	return g.check(ctx, rails, events, first, params, nil, nil)
}

// check is Check given what an earlier check (of the same call, or of the
// call before in the conversation) knew of a prefix of events: their sums
// (snapshots.go), or nil, and the Trace the policies saw, to be extended
// (policy.Trace.Extend: events begin with its events, and no other check
// uses it meanwhile), or nil.
func (g *Guard) check(ctx context.Context, rails []*Guardrail, events []trace.Event, first int, params map[string]any, sums []eventsSum, base *policy.Trace) (v Verdict) {
	if len(rails) == 0 {
		return v
	}
	timeout := g.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if g.Limit != nil {
		release, err := g.Limit.Acquire(ctx)
		if err != nil {
			for _, r := range rails {
				v.add(Finding{Guardrail: r, Err: fmt.Errorf("no check slot free: %w", err), New: true})
			}
			return v
		}
		defer release()
	}
	a := analysis{sums: sums, base: base}
	defer func() { v.sums, v.trace = a.sums, a.trace }()
	for _, r := range rails {
		if r.Policy == nil {
			v.add(Finding{Guardrail: r, Err: errors.New("the policy does not load"), New: true})
			continue
		}
		res, err := g.analyze(ctx, &a, r.Policy, events, params)
		if err != nil {
			v.add(Finding{Guardrail: r, Err: checkError(err), New: true})
			continue
		}
		for _, viol := range res.Violations {
			v.add(Finding{Guardrail: r, Violation: viol, New: involvesFrom(viol, first)})
		}
	}
	return v
}

// analysis is what the guardrails of one check share: the events' prefix
// sums and the parameters' key, computed once.
type analysis struct {
	ready  bool
	ok     bool
	sums   []eventsSum
	params string
	base   *policy.Trace
	trace  *policy.Trace
}

// analyze checks events against pol: as an extension of the snapshot of
// the longest prefix of events an earlier check analyzed, when there is
// one, and keeps the snapshot of this analysis for the next.
func (g *Guard) analyze(ctx context.Context, a *analysis, pol *policy.Policy, events []trace.Event, params map[string]any) (*policy.Result, error) {
	if g.Full || len(events) == 0 {
		return pol.AnalyzeContext(ctx, events, params)
	}
	if !a.ready {
		a.ready = true
		raw, err := json.Marshal(params) // maps marshal with sorted keys
		a.ok = err == nil
		a.params = string(raw)
		if a.ok {
			a.sums = prefixSums(events, a.sums)
		}
	}
	if !a.ok {
		return pol.AnalyzeContext(ctx, events, params)
	}
	g.snapOnce.Do(func() { g.snaps = newSnapshots(maxSnapshots, maxSnapshotBytes) })
	prev := g.snaps.longest(pol, a.params, a.sums)
	if a.trace == nil {
		if a.base != nil && a.base.Len() <= len(events) {
			a.trace = a.base.Extend(events)
		} else {
			a.trace = policy.NewTrace(events)
		}
	}
	res, snap, err := pol.AnalyzeExtensionOf(ctx, prev, a.trace, params)
	if snap != nil && (prev == nil || prev.Events() != snap.Events()) {
		g.snaps.put(pol, a.params, a.sums[len(a.sums)-1], snap)
	}
	return res, err
}

func (v *Verdict) add(f Finding) {
	v.Findings = append(v.Findings, f)
	if f.Guardrail.Blocks() {
		v.Blocked = true
	}
}

// checkError keeps a policy's runtime error as it is and names a context's
// end as the deadline it is.
func checkError(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("the check ran out of time: %w", err)
	}
	return err
}

// involvesFrom reports whether a violation binds or marks an event at or
// after first. A violation that names no event at all (a rule over the
// parameters alone) is new only on a conversation's first call.
func involvesFrom(v *policy.Violation, first int) bool {
	named := false
	for _, b := range v.Vars {
		if b.Event >= 0 {
			named = true
			if b.Event >= first {
				return true
			}
		}
	}
	for _, r := range v.Ranges {
		head, _, _ := strings.Cut(r, ".")
		head, _, _ = strings.Cut(head, ":")
		if n, err := strconv.Atoi(head); err == nil {
			named = true
			if n >= first {
				return true
			}
		}
	}
	return !named && first == 0
}
