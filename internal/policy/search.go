package policy

import "sort"

// Assignment search.
//
// A body (of a rule, predicate or quantifier) holds for an assignment of its
// variables when every condition is true. Variables are discovered the way
// Invariant discovers them: the body is evaluated with the variables bound
// so far, unbound ones evaluate to unknown, and evaluation registers the
// domain of each variable it meets unbound ((x: T) ranges over all T in the
// trace; (x: T) in expr over the T inside expr's value). When the result is
// unknown and new domains were found, the search binds them and evaluates
// again. A result of false prunes the branch; true yields a model (for rules,
// once the variables the raise expression needs are bound).
//
// Two things keep this far from enumerating every tuple:
//   - when a step discovers several variables at once, each candidate value
//     is first checked alone (the others unknown): conditions on a single
//     variable, like 'call is tool:send_email', prune it before any
//     combination is formed (three-valued evaluation is monotone, so a false
//     with unknowns stays false for every completion);
//   - top-level flow conditions a -> b and a ~> b between variables restrict
//     the candidates of the later-bound variable to a contiguous range of the
//     event order (found by binary search), so a two-variable flow rule only
//     visits ordered pairs.

type bodyResult uint8

const (
	rTrue bodyResult = iota
	rFalse
	rUnknown
	rOther // some condition had a non-boolean value: never a model
)

type searchCtl struct {
	checkAction bool
	wantFalse   bool
	// onTrue gets each model; the marks of its evaluation are
	// in.marks[markStart:], and it must truncate them if it does not keep
	// them. Returning false stops the search.
	onTrue  func(f *frame, markStart int) bool
	onFalse func() bool
}

// evalBody evaluates the conditions of bs in f and returns the result and
// the domains registered for unbound variables.
func (in *interp) evalBody(bs *bodyScope, f *frame) (res bodyResult, regs []reg) {
	for _, s := range bs.locals {
		f.slots[s] = unknown
	}
	savedFrame, savedStart := in.regFrame, in.regStart
	in.regFrame, in.regStart = f, len(in.regs)
	unknownSeen, other := false, false
	res = rTrue
	for _, e := range bs.exprs {
		v := in.eval(e, f)
		switch v.K {
		case kNop:
		case kUnknown:
			unknownSeen = true
		case kBool:
			if v.n == 0 {
				res = rFalse
			}
		default:
			other = true
		}
		if res == rFalse {
			break
		}
	}
	if res != rFalse {
		if other {
			res = rOther
		} else if unknownSeen {
			res = rUnknown
		}
		if len(in.regs) > in.regStart {
			regs = append([]reg(nil), in.regs[in.regStart:]...)
		}
	}
	in.regs = in.regs[:in.regStart]
	in.regFrame, in.regStart = savedFrame, savedStart
	return res, regs
}

// search finds the models of bs extending the bindings in f. It returns
// false when a callback stopped it.
func (in *interp) search(bs *bodyScope, f *frame, ctl *searchCtl) bool {
	markStart := len(in.marks)
	res, regs := in.evalBody(bs, f)
	switch {
	case res == rFalse:
		in.marks = in.marks[:markStart]
		if ctl.wantFalse {
			return ctl.onFalse()
		}
		return true
	case res == rTrue && (!ctl.checkAction || actionReady(bs, f)):
		return ctl.onTrue(f, markStart)
	}
	in.marks = in.marks[:markStart]
	if len(regs) == 0 {
		return true
	}
	cands := make([][]value, len(regs))
	sorted := make([]bool, len(regs))
	// A rule's models are tracked (incremental.go) by their candidates'
	// places in the unfiltered lists.
	var keys [][]int32
	tracked := in.track && bs == in.ruleBody
	if tracked {
		keys = make([][]int32, len(regs))
	}
	for i, r := range regs {
		if r.open {
			cands[i] = in.st.selectType(r.typ)
			sorted[i] = openSorted(r.typ)
			in.noteOpen(bs, r.slot)
		} else {
			cands[i] = selectIn(r.typ, r.values, nil, 0)
			sorted[i] = seqSorted(cands[i])
		}
		if r.open && bs == in.onlyNewBody {
			lo, hi := restrictRange(cands[i], restrictNew, in.newFrom)
			cands[i] = cands[i][lo:hi:hi]
		}
		if tracked {
			lo, hi := 0, len(cands[i])
			if r.open && in.restrict != nil {
				lo, hi = restrictRange(cands[i], in.restrict[r.slot], in.newFrom)
			}
			cands[i] = cands[i][lo:hi:hi]
			keys[i] = make([]int32, hi-lo)
			for j := range keys[i] {
				keys[i][j] = int32(lo + j)
			}
		}
		in.steps += int64(len(cands[i]))
		if len(cands[i]) == 0 {
			return true
		}
	}
	if len(regs) > 1 && !ctl.wantFalse {
		for i := range regs {
			var k []int32
			if tracked {
				k = keys[i]
			}
			cands[i], k = in.prefilter(bs, f, regs[i].slot, cands[i], k)
			if tracked {
				keys[i] = k
			}
			if len(cands[i]) == 0 {
				return true
			}
		}
	}
	return in.enumerate(bs, f, ctl, regs, cands, sorted, keys, 0)
}

func openSorted(typ string) bool {
	switch typ {
	case "Message", "ToolOutput", "ToolCall", "Tool":
		return true
	}
	return false
}

// seqSorted reports whether all values are events in increasing order.
func seqSorted(vs []value) bool {
	last := -1
	for _, v := range vs {
		fo, ok := v.p.(flowObject)
		if v.K != kObj || !ok || fo.flowSeq() <= last {
			return false
		}
		last = fo.flowSeq()
	}
	return true
}

func actionReady(bs *bodyScope, f *frame) bool {
	for _, s := range bs.actionSlots {
		if f.slots[s].K == kUnknown {
			return false
		}
	}
	return true
}

// prefilter keeps the candidates for which the body is not false with only
// that variable bound, and their keys when keys is not nil.
func (in *interp) prefilter(bs *bodyScope, f *frame, slot int, cands []value, keys []int32) ([]value, []int32) {
	out := make([]value, 0, len(cands))
	var kept []int32
	if keys != nil {
		kept = make([]int32, 0, len(cands))
	}
	for i, c := range cands {
		f.slots[slot] = c
		if in.tryEvalBody(bs, f) != rFalse {
			out = append(out, c)
			if keys != nil {
				kept = append(kept, keys[i])
			}
		}
	}
	f.slots[slot] = unknown
	return out, kept
}

// tryEvalBody evaluates a body only to prune the search. A runtime error
// there keeps the candidate: the full evaluation of the combinations it
// belongs to reports the error if Invariant's order of evaluation would
// reach it, and does not if it would not. Budget errors still stop.
func (in *interp) tryEvalBody(bs *bodyScope, f *frame) (res bodyResult) {
	markStart, regStart, argBase := len(in.marks), len(in.regs), len(in.argStack)
	regFrame, regFrameStart := in.regFrame, in.regStart
	defer func() {
		if r := recover(); r != nil {
			ep, ok := r.(evalPanic)
			if !ok || ep.err.Class == ClassBudget {
				panic(r)
			}
			res = rUnknown
		}
		in.marks, in.regs, in.argStack = in.marks[:markStart], in.regs[:regStart], in.argStack[:argBase]
		in.regFrame, in.regStart = regFrame, regFrameStart
	}()
	res, _ = in.evalBody(bs, f)
	return res
}

func seqOf(v value) (int, bool) {
	if v.K != kObj {
		return 0, false
	}
	fo, ok := v.p.(flowObject)
	if !ok {
		return 0, false
	}
	return fo.flowSeq(), true
}

func (in *interp) enumerate(bs *bodyScope, f *frame, ctl *searchCtl, regs []reg, cands [][]value, sorted []bool, keys [][]int32, d int) bool {
	if d == len(regs) {
		return in.search(bs, f, ctl)
	}
	slot := regs[d].slot
	cs := cands[d]
	lo, hi := 0, len(cs)
	// Restricting candidates to the flow order skips assignments that are
	// false, which forall must see.
	if sorted[d] && !ctl.wantFalse {
		for _, fl := range bs.flows {
			var other varRef
			var after bool // the candidate must come after the other variable
			switch {
			case fl.b.up == 0 && fl.b.slot == slot:
				other, after = fl.a, true
			case fl.a.up == 0 && fl.a.slot == slot:
				other, after = fl.b, false
			default:
				continue
			}
			fr := f
			for i := 0; i < other.up && fr != nil; i++ {
				fr = fr.parent
			}
			if fr == nil {
				continue
			}
			s, ok := seqOf(fr.slots[other.slot])
			if !ok {
				continue
			}
			first := func(pred func(int) bool) int {
				return sort.Search(len(cs), func(i int) bool { q, _ := seqOf(cs[i]); return pred(q) })
			}
			switch {
			case fl.immediate && after: // other ~> candidate
				lo = max(lo, first(func(q int) bool { return q >= s+1 }))
				hi = min(hi, first(func(q int) bool { return q > s+1 }))
			case fl.immediate: // candidate ~> other
				lo = max(lo, first(func(q int) bool { return q >= s-1 }))
				hi = min(hi, first(func(q int) bool { return q > s-1 }))
			case after: // other -> candidate
				lo = max(lo, first(func(q int) bool { return q > s }))
			default: // candidate -> other
				hi = min(hi, first(func(q int) bool { return q >= s }))
			}
		}
	}
	prune := d+1 < len(regs) && len(regs) > 2
	for i := lo; i < hi; i++ {
		in.step()
		f.slots[slot] = cs[i]
		if prune && in.tryEvalBody(bs, f) == rFalse {
			continue
		}
		if keys != nil {
			in.path = append(in.path, keys[d][i])
		}
		ok := in.enumerate(bs, f, ctl, regs, cands, sorted, keys, d+1)
		if keys != nil {
			in.path = in.path[:len(in.path)-1]
		}
		if !ok {
			f.slots[slot] = unknown
			return false
		}
	}
	f.slots[slot] = unknown
	return true
}
