package policy

import (
	"context"
	"maps"
	"slices"
	"sort"

	"github.com/lookout-dev/lookout/internal/trace"
)

// Incremental analysis: checking a trace that grows (a gateway
// conversation, one call after another) at a cost that follows what is new
// rather than the whole trace, with the full analysis's answer.
//
// Why the answer is the same. Evaluating a rule's conditions for an
// assignment reads the values bound and what is reachable from them
// (members of their events, the tool call an output answers — linked when
// the trace state is built, from earlier events only), constants,
// parameters, and detectors of those values; flows compare the order of
// events, which appending leaves as it was. Only searches read the trace as
// a whole: the rule's own open variables ((x: T) ranging over every T) and
// the open variables of searches inside the rule (count:, forall:,
// predicates with variables). So when a rule's analysis of a prefix ran no
// inner whole-trace search, every assignment of the extended trace whose
// open variables are bound to events of the prefix (or not bound) evaluates
// as it did then: it is a model now exactly when it was then, with the same
// violation. The extension's models are the prefix's plus those binding an
// open variable to a new event, which are searched for alone: with open
// variables v1..vk, pass i binds vi to new events and v1..v(i-1) to old
// ones, so each such model is found once, in the pass of its first new
// variable. A rule that ran an inner whole-trace search is analyzed in full
// on every extension.
//
// Order: a full analysis yields a rule's models in the depth-first order of
// its search, which is the order of their paths (the places of the bound
// candidates in each level's unfiltered list of candidates) compared
// element by element. Appending events appends candidates and leaves every
// old place as it was, so merging the cached models with the new ones by
// path gives the full analysis's order.
//
// Whatever does not fit falls back to the full analysis: an error (so the
// error reported is the full analysis's), a result past the violation cap,
// an open variable the static list of the rule's open variables missed.
// Budgets are the one difference: an extension does less work, so it can
// stay within Limits where a full analysis would exceed them.

// Snapshot is what an analysis keeps of a trace's models for analyzing the
// same trace once it has grown (AnalyzeExtension). It is immutable and safe
// to share.
type Snapshot struct {
	p      *Policy
	events int
	rules  []ruleSnap
	size   int64
}

type ruleSnap struct {
	whole bool // ran an inner whole-trace search: analyze in full next time
	// closed are the values of the rule's closed blocks (closed.go), the
	// only whole-trace searches it ran: when they hold in the grown trace,
	// the rule is extended rather than analyzed in full.
	closed map[*Quantifier]*closedBlock
	viols  []*Violation
	paths  [][]int32
	bytes  int64 // Violation.size of viols
}

// Events is the number of events the snapshot was taken of.
func (s *Snapshot) Events() int { return s.events }

// Size estimates the bytes the snapshot holds.
func (s *Snapshot) Size() int64 { return s.size }

const (
	restrictOld = 1
	restrictNew = 2
)

// AnalyzeExtension returns what AnalyzeContext(ctx, events, params) returns
// — the same violations in the same order, the same error — and a snapshot
// of the analysis for the next extension (nil when there is none: an error
// or a truncated result). prev, when not nil, is a snapshot this policy
// took of an analysis of events[:prev.Events()] with the same params: the
// caller vouches that those events are the same, and the analysis then
// searches only assignments that involve later events (see above). Result
// Steps counts the work done, which is less than a full analysis's.
func (p *Policy) AnalyzeExtension(ctx context.Context, prev *Snapshot, events []trace.Event, params map[string]any) (*Result, *Snapshot, error) {
	return p.AnalyzeExtensionOf(ctx, prev, NewTrace(events), params)
}

// AnalyzeExtensionOf is AnalyzeExtension of t's events.
func (p *Policy) AnalyzeExtensionOf(ctx context.Context, prev *Snapshot, t *Trace, params map[string]any) (*Result, *Snapshot, error) {
	events := t.st.events
	if prev != nil && (prev.p != p || prev.events > len(events) || len(prev.rules) != len(p.rules)) {
		prev = nil
	}
	var snap *Snapshot
	res, err := p.run(ctx, t.st, len(events), params, func(in *interp, res *Result) {
		snap = in.runTracked(p, prev, res)
	})
	if err == nil && snap != nil {
		return res, snap, nil
	}
	if prev == nil {
		// A full analysis with paths kept is the full analysis.
		return res, nil, err
	}
	res, err = p.analyzeState(ctx, t.st, len(events), params)
	return res, nil, err
}

// Trace is a trace as policies see it, built once for several analyses
// (the guardrails of a gateway call, on its request, then on its answer)
// and extended as the trace grows: what an analysis builds for each event
// is built once. Not safe for concurrent use, and neither are two Traces
// of which one extends the other (they share what they decode lazily).
type Trace struct{ st *traceState }

// NewTrace prepares events for analyses.
func NewTrace(events []trace.Event) *Trace { return &Trace{st: newTraceState(events)} }

// Extend returns the Trace of events, whose first t.Len() are t's events
// (the caller vouches for it).
func (t *Trace) Extend(events []trace.Event) *Trace { return &Trace{st: t.st.extend(events)} }

// Len is the number of events of t.
func (t *Trace) Len() int { return len(t.st.events) }

// runTracked runs every rule keeping its models' paths, extending prev's
// models when it can, and returns the snapshot, or nil when the result is
// truncated.
func (in *interp) runTracked(p *Policy, prev *Snapshot, res *Result) *Snapshot {
	snap := &Snapshot{p: p, events: len(in.st.events), rules: make([]ruleSnap, len(p.rules))}
	in.track = true
	if prev != nil {
		in.newFrom = prev.events
	}
	for i, r := range p.rules {
		in.rule = r.idx
		rs := &snap.rules[i]
		in.closed = nil
		if prev == nil || prev.rules[i].whole && (prev.rules[i].closed == nil || !in.closedHold(r, prev.rules[i].closed)) {
			in.touched = false
			in.trackRule(r, rs, -1, res, 0)
			rs.whole = in.touched
		} else {
			// The closed blocks' values hold: taken as they were.
			in.closed = maps.Clone(prev.rules[i].closed)
			in.extendRule(r, rs, &prev.rules[i], res)
		}
		if !rs.whole && len(in.closed) > 0 {
			rs.whole, rs.closed = true, in.closed
		}
		res.Violations = append(res.Violations, rs.viols...)
		if res.Truncated {
			return nil
		}
		snap.size += 64 + rs.bytes
		for _, pt := range rs.paths {
			snap.size += 24 + 4*int64(len(pt))
		}
	}
	return snap
}

// extendRule finds the models of r in the grown trace: old's, and those of
// the passes that bind an open variable to a new event.
func (in *interp) extendRule(r *rule, rs *ruleSnap, old *ruleSnap, res *Result) {
	in.touched, in.untracked = false, false
	in.violBytes += old.bytes
	var fresh ruleSnap
	in.restrict = make([]int8, r.body.nslots)
	for i, slot := range r.open {
		for j, s := range r.open {
			switch {
			case j < i:
				in.restrict[s] = restrictOld
			case j == i:
				in.restrict[s] = restrictNew
			default:
				in.restrict[s] = 0
			}
		}
		in.trackRule(r, &fresh, slot, res, len(old.viols))
		if res.Truncated || in.untracked {
			break
		}
	}
	in.restrict = nil
	if res.Truncated {
		*rs = fresh
		return
	}
	if in.untracked {
		// An open variable the static list missed: the passes may have
		// missed models, so the rule is analyzed in full, now and later.
		in.violBytes -= old.bytes + fresh.bytes
		in.touched = false
		in.trackRule(r, rs, -1, res, 0)
		rs.whole = true
		return
	}
	rs.whole = in.touched
	rs.bytes = old.bytes + fresh.bytes
	if len(fresh.viols) == 0 {
		rs.viols, rs.paths = old.viols, old.paths
		return
	}
	sort.Sort(byPath(fresh))
	rs.viols = make([]*Violation, 0, len(old.viols)+len(fresh.viols))
	rs.paths = make([][]int32, 0, len(old.viols)+len(fresh.viols))
	i, j := 0, 0
	for i < len(old.viols) || j < len(fresh.viols) {
		if j == len(fresh.viols) || (i < len(old.viols) && slices.Compare(old.paths[i], fresh.paths[j]) < 0) {
			rs.viols, rs.paths = append(rs.viols, old.viols[i]), append(rs.paths, old.paths[i])
			i++
		} else {
			rs.viols, rs.paths = append(rs.viols, fresh.viols[j]), append(rs.paths, fresh.paths[j])
			j++
		}
	}
}

type byPath ruleSnap

func (b byPath) Len() int           { return len(b.viols) }
func (b byPath) Less(i, j int) bool { return slices.Compare(b.paths[i], b.paths[j]) < 0 }
func (b byPath) Swap(i, j int) {
	b.viols[i], b.viols[j] = b.viols[j], b.viols[i]
	b.paths[i], b.paths[j] = b.paths[j], b.paths[i]
}

// trackRule searches r's models into rs with their paths. need, when not
// -1, is the slot that must be bound to a new event (the pass's); base
// counts violations kept elsewhere, for the cap.
func (in *interp) trackRule(r *rule, rs *ruleSnap, need int, res *Result, base int) {
	in.ruleBody, in.ruleOpen = r.body, r.open
	defer func() { in.ruleBody, in.ruleOpen = nil, nil }()
	in.path = in.path[:0]
	f := newFrame(r.body.nslots, nil)
	ctl := &searchCtl{
		checkAction: true,
		onTrue: func(f *frame, markStart int) bool {
			marks := append([]mark(nil), in.marks[markStart:]...)
			in.marks = in.marks[:markStart]
			if need >= 0 && !in.isNew(f.slots[need]) {
				return true // another pass's model, or an old one
			}
			if len(res.Violations)+base+len(rs.viols) >= in.maxViol || in.violBytes >= MaxViolationBytes {
				res.Truncated = true
				return false
			}
			v := in.violation(r, f, marks)
			n := v.size()
			in.violBytes += n
			in.alloc(n)
			rs.viols = append(rs.viols, v)
			rs.paths = append(rs.paths, slices.Clone(in.path))
			rs.bytes += n
			return true
		},
	}
	in.search(r.body, f, ctl)
}

// noteOpen records an open variable's search over the trace.
func (in *interp) noteOpen(bs *bodyScope, slot int) {
	if bs == in.closedBody {
		return // the closed block's own search, which closed.go follows
	}
	if bs != in.ruleBody {
		in.touched = true
		return
	}
	if in.restrict != nil && !slices.Contains(in.ruleOpen, slot) {
		in.untracked = true
	}
}

// isNew reports whether v is (inside) an event from in.newFrom on.
func (in *interp) isNew(v value) bool {
	return v.K != kUnknown && eventOfValue(v) >= in.newFrom
}

// eventOfValue is the index of the event v is or lies in, or -1.
func eventOfValue(v value) int {
	if fo, ok := v.p.(flowObject); ok && v.K == kObj {
		return fo.eventIndex()
	}
	o := v.origin()
	if o == nil {
		return -1
	}
	for o.parent != nil {
		o = o.parent
	}
	return o.idx
}

// restrictRange is the part of an open variable's candidates (in event
// order) that mode allows: before event newFrom, or from it on.
func restrictRange(cands []value, mode int8, newFrom int) (lo, hi int) {
	if mode == 0 {
		return 0, len(cands)
	}
	split := sort.Search(len(cands), func(i int) bool { return eventOfValue(cands[i]) >= newFrom })
	if mode == restrictOld {
		return 0, split
	}
	return split, len(cands)
}

// openVars are the slots of a rule body's open variables — (x: T) not on
// the left of 'in' — in the order they are written.
func openVars(bs *bodyScope) []int {
	var out []int
	var visit func(x Expr) bool
	visit = func(x Expr) bool {
		switch n := x.(type) {
		case *Quantifier, *ListComprehension:
			return false
		case *BinaryExpr:
			if _, ok := n.L.(*TypedIdent); ok && n.Op == "in" {
				walkExpr(n.R, visit)
				return false
			}
		case *TypedIdent:
			if sym := bs.names[n.Name]; sym != nil && !slices.Contains(out, sym.slot) {
				out = append(out, sym.slot)
			}
		}
		return true
	}
	for _, e := range bs.exprs {
		walkExpr(e, visit)
	}
	return out
}
