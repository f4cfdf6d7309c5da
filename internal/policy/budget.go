package policy

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/lookout-dev/lookout/internal/pyre"
)

// The cost of one check is bounded four ways, each ending it with a
// RuntimeError of class BudgetExceeded or a truncated result:
//
//   - time: one deadline for the whole check (Limits.Time, and the deadline
//     of the caller's context when sooner), covering evaluation and the
//     regular expression engines; a context that is cancelled (a client that
//     went away) stops the check within milliseconds, also mid-match in the
//     backtracking engine;
//   - steps: Limits.Steps, a deterministic measure of evaluation work;
//   - memory: Limits.Memory, the bytes of the values a check builds
//     (strings, lists, regular expression matches, violations), counted as
//     they are allocated;
//   - violations: at most Limits.Violations violations and
//     MaxViolationBytes of their data; beyond, the search stops and the
//     result says Truncated (Invariant similarly stops enumerating).

// MaxViolationBytes bounds the data of the violations one check returns
// (arguments, ranges, keys); past it the result is truncated.
const MaxViolationBytes = 16 << 20

// budgetCause is the cause of a check's context when its time budget ran
// out, as opposed to the caller's context ending.
type budgetCause struct{ d time.Duration }

func (c budgetCause) Error() string { return "time budget of " + c.d.String() + " exhausted" }

// WithTimeBudget returns ctx bounded by a check's time budget d, for a
// caller that wants one deadline over several steps of a check (loading the
// policy, then analysing): a check stopped by it reports BudgetExceeded
// "exceeded its time budget of d". d <= 0 leaves ctx unbounded. cancel must
// be called when the check ends.
func WithTimeBudget(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeoutCause(ctx, d, budgetCause{d})
}

// stopError is the BudgetExceeded error of a check whose context is done.
func stopError(ctx context.Context, what string) *RuntimeError {
	cause := context.Cause(ctx)
	var bc budgetCause
	msg := ""
	switch {
	case errors.As(cause, &bc):
		msg = what + " exceeded its time budget of " + bc.d.String()
	case errors.Is(cause, context.DeadlineExceeded):
		msg = what + " ran past its deadline"
	case errors.Is(cause, context.Canceled):
		msg = what + " stopped: the check was cancelled (its client went away)"
	default:
		msg = what + " stopped: " + cause.Error()
	}
	return &RuntimeError{Class: ClassBudget, Rule: -1, Msg: msg}
}

// checkDeadline is the deadline of a check starting now with the time
// budget d, or zero when there is none or ctx's own deadline comes first
// (ctx's Done channel then ends the check, with ctx's cause).
func checkDeadline(ctx context.Context, d time.Duration) time.Time {
	if d <= 0 {
		return time.Time{}
	}
	t := time.Now().Add(d)
	if cd, ok := ctx.Deadline(); ok && !cd.After(t) {
		return time.Time{}
	}
	return t
}

const tooMuchWork = "; the rule does too much work: add conditions that narrow each variable, or raise the limit"

// checkDone ends the analysis when its context is done or its deadline
// passed. It costs a channel poll and a clock read, so step calls it only
// every few thousand steps; long operations call it before they start.
func (in *interp) checkDone() {
	select {
	case <-in.done:
		e := stopError(in.ctx, "evaluation")
		var bc budgetCause
		if errors.As(context.Cause(in.ctx), &bc) {
			e.Msg += tooMuchWork
		}
		e.Rule = in.rule
		panic(evalPanic{e})
	default:
	}
	if !in.deadline.IsZero() && time.Now().After(in.deadline) {
		in.fail(0, ClassBudget, "evaluation exceeded its time budget of %v%s", in.p.limits.Time, tooMuchWork)
	}
}

// regexContext is the context of a backtracking search: the caller's,
// bounded by the check's own deadline if any. It is made on the first search of an
// analysis (most never need one) and cancelled when the analysis ends.
func (in *interp) regexContext() context.Context {
	if in.regexCtx == nil {
		in.regexCtx, in.regexCancel = in.ctx, func() {}
		if !in.deadline.IsZero() {
			in.regexCtx, in.regexCancel = context.WithDeadline(in.ctx, in.deadline)
		}
	}
	return in.regexCtx
}

// alloc charges n bytes of values the analysis builds to its memory budget.
func (in *interp) alloc(n int64) {
	in.mem += n
	if in.mem > in.maxMem {
		in.fail(0, ClassBudget, "evaluation exceeded its memory budget of %d MiB (values built: strings, lists, matches, violations); narrow the rule or raise the limit", in.maxMem>>20)
	}
}

// regexFailed reports a failed regular expression search: the check's
// budget when the engine was stopped by it, a RegexError otherwise.
func (in *interp) regexFailed(off int, err error, format string, args ...any) {
	if errors.Is(err, pyre.ErrStopped) {
		in.checkDone()
		// the engine saw the deadline a moment before the context did
		in.fail(0, ClassBudget, "evaluation exceeded its time budget in a regular expression (catastrophic backtracking?)")
	}
	in.fail(off, ClassRegex, format+": %v", append(args, err)...)
}

// valueBytes is the size of a value in a list; jsonBytesFactor the bytes
// a parsed JSON text takes per byte of text, roughly.
const (
	valueBytes      = 32
	jsonBytesFactor = 4
)

// matchBytes is what one match of find costs: its span, its text, its
// value in the result list and its range mark.
const matchBytes = 112

// regexCost checks the context before a search (the Go engine cannot be
// stopped once started, though it runs in linear time) and charges the
// backtracking engine's copy of the subject as code points.
func (in *interp) regexCost(re *pyre.Regexp, subject string) {
	in.checkDone()
	if re.UsesBacktracking(subject) {
		in.alloc(4 * int64(len(subject)))
	}
}

// size estimates the bytes a violation holds.
func (v *Violation) size() int64 {
	n := int64(200 + len(v.Key))
	for _, a := range v.Args {
		n += argSize(a)
	}
	for _, a := range v.Kwargs {
		n += 64 + argSize(a)
	}
	for _, r := range v.Ranges {
		n += int64(32 + len(r))
	}
	for _, b := range v.Vars {
		n += int64(64 + len(b.Name) + len(b.Address))
	}
	return n
}

func argSize(a any) int64 {
	switch x := a.(type) {
	case string:
		return int64(16 + len(x))
	case json.RawMessage:
		return int64(24 + len(x))
	}
	return 16
}

// ErrBusy is returned by Limiter.Acquire when every slot is taken and the
// queue is full or the wait ran out.
var ErrBusy = errors.New("too many policy checks at once")

// Limiter bounds how many checks run at once, so that a flood of expensive
// checks cannot take every core from other work. A check that finds every
// slot taken waits in a short queue; past the queue's length or its wait it
// is refused with ErrBusy (a server answers 503 with Retry-After).
type Limiter struct {
	slots   chan struct{}
	waiters chan struct{}
	wait    time.Duration
}

// NewLimiter returns a limiter of n concurrent checks with a queue of
// queue waiting ones, each waiting at most wait. n < 1 means 1.
func NewLimiter(n, queue int, wait time.Duration) *Limiter {
	n = max(n, 1)
	return &Limiter{slots: make(chan struct{}, n), waiters: make(chan struct{}, max(queue, 0)), wait: wait}
}

// Acquire takes a slot, waiting in the queue when all are taken. It returns
// ErrBusy when the queue is full or the wait ran out, and ctx's error when
// ctx ends first. release gives the slot back (once, however often it is called).
func (l *Limiter) Acquire(ctx context.Context) (release func(), err error) {
	var once sync.Once
	release = func() { once.Do(func() { <-l.slots }) }
	select {
	case l.slots <- struct{}{}:
		return release, nil
	default:
	}
	select {
	case l.waiters <- struct{}{}:
	default:
		return nil, ErrBusy
	}
	defer func() { <-l.waiters }()
	t := time.NewTimer(l.wait)
	defer t.Stop()
	select {
	case l.slots <- struct{}{}:
		return release, nil
	case <-t.C:
		return nil, ErrBusy
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// parseBudget stops loading a policy when its context is done: the parser
// and the checker tick it once per operation or expression, and it polls
// the context every parseCheckEvery ticks. A nil parseBudget never stops.
type parseBudget struct {
	ctx   context.Context
	done  <-chan struct{}
	ticks int
}

const parseCheckEvery = 1024

// parseStopped unwinds the parser or the checker when the budget ends.
type parseStopped struct{}

func (b *parseBudget) tick() {
	if b == nil {
		return
	}
	b.ticks++
	if b.ticks%parseCheckEvery == 0 {
		b.check()
	}
}

func (b *parseBudget) check() {
	if b == nil {
		return
	}
	select {
	case <-b.done:
		panic(parseStopped{})
	default:
	}
}

// Wait takes a slot for work already admitted (the next trace of a long
// check): it waits, outside the queue, until a slot is free or ctx ends.
func (l *Limiter) Wait(ctx context.Context) (release func(), err error) {
	select {
	case l.slots <- struct{}{}:
		var once sync.Once
		return func() { once.Do(func() { <-l.slots }) }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
