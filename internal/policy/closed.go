package policy

import "slices"

// Closed blocks in incremental analysis. A count: or forall: block that
// names no variable of the rule around it (closed) is a search over the
// whole trace, so a rule that evaluates one is analyzed in full on every
// extension (incremental.go): its value can change with any new event,
// and with it every old model. "not count(min=1): (m: Message) ..." of a
// gateway policy made each call's check cost what the whole conversation
// holds.
//
// A closed block's value is the same for every assignment of the rule, so
// an analysis evaluates it once (evaluated where none of the rule's
// variables is bound, as the rule's first evaluation does) and keeps it
// with its marks. The snapshot keeps the values of a rule's closed blocks
// when nothing else in the rule searched the whole trace; the next
// extension then checks, block by block, that the value and marks are
// those a full evaluation over the grown trace gives — a block of one
// variable whose candidates come in event order, the old ones first, with
// no new event satisfying its body, or one whose search had stopped early
// on a decision that more assignments cannot undo (a count past its
// maximum, or at its minimum with none; a forall that failed) — and if
// every block holds, extends the rule like any other, with the blocks'
// values taken as they were. Otherwise the rule is analyzed in full.

// closedBlock is a closed block's value in one trace, with the marks its
// counted assignments leave: all of them where no variable around the
// block is bound (marks), and those of their conditions (bodyMarks), which
// a count kept within the bound variables' objects leaves.
type closedBlock struct {
	v          value
	marks      []mark
	bodyMarks  []mark
	early      bool
	nested     bool // searched the whole trace inside: not a closed block
	kind       string
	minN, maxN int64
}

// closedQuantifier is closed block q's value, evaluated once per analysis
// (or taken from the snapshot), or nil when a search of the whole trace
// inside it makes it a block like any other.
func (in *interp) closedQuantifier(q *Quantifier, kind string, minN, maxN int64) *closedBlock {
	if c := in.closed[q]; c != nil && c.kind == kind && c.minN == minN && c.maxN == maxN {
		if c.nested {
			in.touched = true
			return nil
		}
		return c
	}
	savedTouched, savedBody, savedBodyMarks := in.touched, in.closedBody, in.bodyMarks
	in.touched, in.closedBody = false, q.body
	var bodyMarks []mark
	in.bodyMarks = &bodyMarks
	start := len(in.marks)
	// Evaluated with no variable around it bound: it reads none.
	v := in.quantify(q, newFrame(0, nil), kind, minN, maxN)
	marks := slices.Clone(in.marks[start:])
	in.marks = in.marks[:start]
	nested := in.touched
	in.touched, in.closedBody, in.bodyMarks = savedTouched, savedBody, savedBodyMarks
	c := &closedBlock{v: v, marks: marks, bodyMarks: bodyMarks, early: in.qEarly, nested: nested, kind: kind, minN: minN, maxN: maxN}
	if in.closed == nil {
		in.closed = map[*Quantifier]*closedBlock{}
	}
	in.closed[q] = c
	if nested {
		// A search of the whole trace inside the block: the rule is
		// analyzed in full from now on.
		in.touched = true
		return nil
	}
	return c
}

// closedHold reports whether every closed block of old (a rule's snapshot
// of events[:in.newFrom]) has the same value and marks in the grown trace.
func (in *interp) closedHold(r *rule, old map[*Quantifier]*closedBlock) bool {
	for q, c := range old {
		if len(openVars(q.body)) != 1 {
			return false // candidates of several variables: not in event order
		}
		if c.early {
			// Decided by old events, met first, for good: a count past
			// its maximum or at its minimum (with none), a failed forall.
			continue
		}
		if in.newSatisfy(r, q, c.kind) {
			return false
		}
	}
	return true
}

// newSatisfy reports whether an assignment of closed block q binding a
// new event makes its body true (for a forall: false).
func (in *interp) newSatisfy(r *rule, q *Quantifier, kind string) bool {
	savedOnly, savedBody, savedMarks, savedTouched := in.onlyNewBody, in.closedBody, len(in.marks), in.touched
	in.onlyNewBody, in.closedBody = q.body, q.body
	defer func() {
		in.onlyNewBody, in.closedBody, in.marks, in.touched = savedOnly, savedBody, in.marks[:savedMarks], savedTouched
	}()
	found := false
	ctl := &searchCtl{onTrue: func(*frame, int) bool { found = true; return false }}
	if kind == "forall" {
		ctl = &searchCtl{wantFalse: true,
			onTrue:  func(*frame, int) bool { return true },
			onFalse: func() bool { found = true; return false }}
	}
	in.search(q.body, newFrame(q.body.nslots, newFrame(r.body.nslots, nil)), ctl)
	return found
}
