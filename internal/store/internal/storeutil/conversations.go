package storeutil

import (
	"errors"
	"fmt"
	"time"

	"github.com/lookout-dev/lookout/internal/store"
)

// maxHeadLen bounds a conversation head (a hash; generous).
const maxHeadLen = 1024

// CheckHeads checks the heads FindConversation is asked for: at most
// store.MaxConversationHeads, each text the store can hold. No heads is
// ErrNotFound (no conversation has none).
func CheckHeads(heads []string) error {
	if len(heads) == 0 {
		return fmt.Errorf("conversation: no heads: %w", store.ErrNotFound)
	}
	if len(heads) > store.MaxConversationHeads {
		return fmt.Errorf("conversation: %d heads, more than %d: %w", len(heads), store.MaxConversationHeads, store.ErrInvalid)
	}
	for i, h := range heads {
		if err := CheckText(fmt.Sprintf("conversation head %d", i), h); err != nil {
			return err
		}
	}
	return nil
}

// PrepareStep checks a conversation step before its transaction. A step
// that creates a trace comes back as that trace's row (with its
// annotations); one that extends a trace, as the annotations to add to it.
func PrepareStep(step store.ConversationStep, now time.Time) ([]Row, []store.Annotation, error) {
	if step.Head == "" || len(step.Head) > maxHeadLen {
		return nil, nil, fmt.Errorf("conversation step: head of %d bytes, want 1 to %d: %w", len(step.Head), maxHeadLen, store.ErrInvalid)
	}
	if err := CheckText("conversation step: head", step.Head); err != nil {
		return nil, nil, err
	}
	if step.TraceID == "" {
		if len(step.Events) > 0 || len(step.Spans) > 0 {
			return nil, nil, fmt.Errorf("conversation step: a new trace carries its events and spans in Trace: %w", store.ErrInvalid)
		}
		rows, err := PrepareTraces([]store.NewTrace{{Trace: step.Trace, Annotations: step.Annotations}}, now)
		if err != nil {
			return nil, nil, fmt.Errorf("conversation step: %w", err)
		}
		return rows, nil, nil
	}
	if step.Trace != nil {
		return nil, nil, fmt.Errorf("conversation step: a step extending trace %s carries Events and Spans, not a Trace: %w", step.TraceID, store.ErrInvalid)
	}
	if !ValidID(step.TraceID) {
		return nil, nil, fmt.Errorf("conversation step: trace %q: %w", step.TraceID, store.ErrNotFound)
	}
	anns, err := PrepareAnnotations(step.Annotations, step.TraceID, now)
	if err != nil {
		return nil, nil, fmt.Errorf("conversation step: %w", err)
	}
	return nil, anns, nil
}

// ExpectTrace is the check a step makes of the trace it extends, before
// anything is written: it must be in the dataset and hold exactly events
// events (another step that extended it first makes it ErrConflict).
func ExpectTrace(datasetID string, events int) func(traceDataset string, traceEvents int) error {
	return func(traceDataset string, traceEvents int) error {
		if traceDataset != datasetID {
			return fmt.Errorf("the trace is not in dataset %s: %w", datasetID, store.ErrNotFound)
		}
		if traceEvents != events {
			return fmt.Errorf("the trace holds %d events, not the %d expected (another step extended it first): %w", traceEvents, events, store.ErrConflict)
		}
		return nil
	}
}

// PreparedSteps are conversation steps checked before their transaction.
type PreparedSteps struct {
	Steps []PreparedStep
	rows  []Row
}

// PreparedStep is one step: a new trace's row, or the annotations to add
// to the trace it extends; Err when it is refused (before or during the
// transaction). Events is the trace's event count after the step.
type PreparedStep struct {
	ID     string
	Row    *Row
	Anns   []store.Annotation
	Events int
	Err    error
	prep   error // refused before the transaction
}

// PrepareSteps checks each step as PrepareStep does; a step that fails is
// refused alone.
func PrepareSteps(steps []store.ConversationStep, now time.Time) *PreparedSteps {
	ps := &PreparedSteps{Steps: make([]PreparedStep, len(steps))}
	for i, step := range steps {
		rows, anns, err := PrepareStep(step, now)
		p := &ps.Steps[i]
		if err != nil {
			p.prep, p.Err = err, err
			continue
		}
		p.ID, p.Anns = step.TraceID, anns
		if rows != nil {
			ps.rows = append(ps.rows, rows[0])
			p.ID, p.Events = rows[0].ID, rows[0].EventCount
		}
	}
	for i, j := 0, 0; i < len(ps.Steps); i++ { // rows are in step order
		if p := &ps.Steps[i]; p.prep == nil && steps[i].TraceID == "" {
			p.Row = &ps.rows[j]
			j++
		}
	}
	return ps
}

// Reset forgets what a failed attempt of the transaction refused, before
// it is tried again.
func (ps *PreparedSteps) Reset() {
	for i := range ps.Steps {
		ps.Steps[i].Err = ps.Steps[i].prep
	}
}

// NewRows are the rows of the traces the steps not refused create.
func (ps *PreparedSteps) NewRows() []Row {
	var rows []Row
	for _, p := range ps.Steps {
		if p.Row != nil && p.Err == nil {
			rows = append(rows, *p.Row)
		}
	}
	return rows
}

// Results are each step's trace id ("" when refused) and error.
func (ps *PreparedSteps) Results() ([]string, []error) {
	ids := make([]string, len(ps.Steps))
	errs := make([]error, len(ps.Steps))
	for i, p := range ps.Steps {
		if p.Err != nil {
			errs[i] = p.Err
			continue
		}
		ids[i] = p.ID
	}
	return ids, errs
}

// Refused reports whether an error refuses one step (its trace moved on,
// went, or is another dataset's) rather than failing the transaction.
func Refused(err error) bool {
	return err != nil && (errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound))
}
