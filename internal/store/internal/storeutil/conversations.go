package storeutil

import (
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
