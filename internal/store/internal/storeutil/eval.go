package storeutil

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/lookout-dev/lookout/internal/jsonscan"
	"github.com/lookout-dev/lookout/internal/store"
)

// ScoreSources are the sources a score may have.
var ScoreSources = map[string]bool{"human": true, "rule": true, "code": true, "llm": true}

// CheckScore checks what the store requires of a score and returns its
// value compacted.
func CheckScore(s store.Score, what string) (json.RawMessage, error) {
	if !ValidID(s.TraceID) {
		return nil, fmt.Errorf("%s: trace %q: %w", what, s.TraceID, store.ErrNotFound)
	}
	if err := CheckName(what+": criterion", s.Criterion); err != nil {
		return nil, err
	}
	if !ScoreSources[s.Source] {
		return nil, fmt.Errorf("%s: source %q is not one of human, rule, code, llm: %w", what, s.Source, store.ErrInvalid)
	}
	if err := CheckTexts(what, "address", s.Address, "comment", s.Comment, "author", s.Author, "run id", s.RunID); err != nil {
		return nil, err
	}
	if err := CheckObject(s.Extra, what+": extra", true); err != nil {
		return nil, err
	}
	v := bytes.TrimSpace(s.Value)
	if !jsonscan.Valid(v) {
		return nil, fmt.Errorf("%s: value is not JSON: %w", what, store.ErrInvalid)
	}
	switch c := firstByte(v); {
	case c == 't' || c == 'f' || c == '"' || c == '-' || (c >= '0' && c <= '9'):
	default:
		return nil, fmt.Errorf("%s: value must be a boolean, a number or a string: %w", what, store.ErrInvalid)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, v); err != nil {
		return nil, fmt.Errorf("%s: value: %v: %w", what, err, store.ErrInvalid)
	}
	if err := CheckText(what+": value", buf.String()); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// PrepareScores checks a batch of scores and returns them ready to be
// written but for their versions: values compacted, new ids, current and
// made now. Every score is checked before any is written.
func PrepareScores(scores []store.Score, now time.Time) ([]store.Score, error) {
	out := make([]store.Score, len(scores))
	for i, sc := range scores {
		v, err := CheckScore(sc, fmt.Sprintf("score %d", i))
		if err != nil {
			return nil, err
		}
		sc.Value, sc.ID, sc.Current, sc.CreatedAt = v, NewID(), true, now
		out[i] = sc
	}
	return out, nil
}

// CheckRunState checks a run state.
func CheckRunState(state string) error {
	switch state {
	case store.RunRunning, store.RunDone, store.RunCancelled, store.RunError:
		return nil
	}
	return fmt.Errorf("run state %q: %w", state, store.ErrInvalid)
}

// CheckStatus checks a stored trace status (only final ones are stored).
func CheckStatus(st store.TraceStatus) error {
	if st.Status != store.StatusEvaluated && st.Status != store.StatusError {
		return fmt.Errorf("status %q of trace %s on %q: want evaluated or error: %w", st.Status, st.TraceID, st.Criterion, store.ErrInvalid)
	}
	if !ValidID(st.TraceID) {
		return fmt.Errorf("status of trace %q: %w", st.TraceID, store.ErrNotFound)
	}
	return CheckTexts("status", "criterion", st.Criterion, "error", st.Error)
}
