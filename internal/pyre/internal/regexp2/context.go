package regexp2

import (
	"context"
	"errors"
	"time"
)

// Lookout patch: searches that a context stops. The upstream engine checks
// only its own timeout, which a caller cannot end early; these variants take
// the timeout of the call from the context's deadline (when sooner than
// MatchTimeout) and poll the context's Done channel while matching, so a
// catastrophic backtrack ends within microseconds of a cancellation.

// ErrCanceled is returned when the context of a search was done before the
// search ended.
var ErrCanceled = errors.New("regexp2: match canceled")

// ErrMatchTimeout is wrapped by the error of a search that ran past its
// timeout.
var ErrMatchTimeout = errors.New("regexp2: match timeout")

// doneCheckEvery is how many engine steps pass between two polls of the
// context (a poll costs a few nanoseconds; a step about as much).
const doneCheckEvery = 256

// FindStringMatchContext is FindStringMatch stopped when ctx is done.
func (re *Regexp) FindStringMatchContext(ctx context.Context, s string) (*Match, error) {
	return re.runContext(ctx, -1, getRunes(s))
}

// FindRunesMatchContext is FindRunesMatch stopped when ctx is done.
func (re *Regexp) FindRunesMatchContext(ctx context.Context, r []rune) (*Match, error) {
	return re.runContext(ctx, -1, r)
}

// FindNextMatchContext is FindNextMatch stopped when ctx is done.
func (re *Regexp) FindNextMatchContext(ctx context.Context, m *Match) (*Match, error) {
	if m == nil {
		return nil, nil
	}
	startAt := m.textpos
	if m.Length == 0 {
		if m.textpos == len(m.text) {
			return nil, nil
		}
		if re.RightToLeft() {
			startAt--
		} else {
			startAt++
		}
	}
	return re.runContext(ctx, startAt, m.text)
}

func (re *Regexp) runContext(ctx context.Context, textstart int, input []rune) (*Match, error) {
	select {
	case <-ctx.Done():
		return nil, ErrCanceled
	default:
	}
	timeout := re.MatchTimeout
	if dl, ok := ctx.Deadline(); ok {
		left := time.Until(dl)
		if left <= 0 {
			return nil, ErrMatchTimeout
		}
		timeout = min(timeout, left)
	}
	return re.runDone(ctx.Done(), timeout, false, textstart, input)
}
