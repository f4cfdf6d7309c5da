package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/internal/storeutil"
)

// ---- the gateway's conversations ----

// FindConversation returns the dataset's conversation whose head is one of
// heads: the one with the most events, the latest recorded among equals.
func (s *Store) FindConversation(ctx context.Context, datasetID string, heads []string) (store.Conversation, error) {
	if err := storeutil.CheckHeads(heads); err != nil {
		return store.Conversation{}, fmt.Errorf("postgres: find conversation: %w", err)
	}
	if !storeutil.ValidID(datasetID) {
		return store.Conversation{}, notFound("find conversation: dataset %q", datasetID)
	}
	var c store.Conversation
	err := s.pool.QueryRow(ctx, `SELECT trace_id, head, events FROM conversations
		WHERE dataset_id = $1 AND head = ANY($2::text[])
		ORDER BY events DESC, updated_at DESC LIMIT 1`, datasetID, heads).Scan(&c.TraceID, &c.Head, &c.Events)
	if err != nil {
		return store.Conversation{}, fail(ctx, err, "find conversation in dataset %s", datasetID)
	}
	return c, nil
}

// upsertConversation sets a trace's head and event count.
const upsertConversation = `INSERT INTO conversations (trace_id, dataset_id, head, events, updated_at) VALUES ($1, $2, $3, $4, $5)
	ON CONFLICT (trace_id) DO UPDATE SET head = excluded.head, events = excluded.events, updated_at = excluded.updated_at`

// RecordConversation stores one step of a conversation in one
// transaction: a new trace (as AddTraces stores one) or events and spans
// appended to one (as AppendEvents appends), its annotations, and its head.
// Steps on one trace take its row lock in turn, so of two with the same
// ExpectEvents the second finds the count changed.
func (s *Store) RecordConversation(ctx context.Context, ownerID, datasetID string, step store.ConversationStep) (string, error) {
	ids, errs, err := s.RecordConversations(ctx, ownerID, datasetID, []store.ConversationStep{step})
	if err != nil {
		return "", err
	}
	if errs[0] != nil {
		return "", errs[0]
	}
	return ids[0], nil
}

// RecordConversations stores steps of different traces in one transaction;
// a step refused is left out with its error (refusals are found by reads,
// before anything of the step is written, so the transaction goes on).
func (s *Store) RecordConversations(ctx context.Context, ownerID, datasetID string, steps []store.ConversationStep) ([]string, []error, error) {
	if !storeutil.ValidID(ownerID) {
		return nil, nil, notFound("record conversation: owner %q", ownerID)
	}
	if !storeutil.ValidID(datasetID) {
		return nil, nil, notFound("record conversation: dataset %q", datasetID)
	}
	now := storeutil.Now()
	prep := storeutil.PrepareSteps(steps, now)
	err := s.write(ctx, func(tx pgx.Tx) error {
		prep.Reset()
		if rows := prep.NewRows(); len(rows) > 0 {
			if err := insertTraces(ctx, tx, ownerID, datasetID, rows, now); err != nil {
				return err
			}
		}
		var anns []store.Annotation
		for i := range prep.Steps {
			p := &prep.Steps[i]
			if p.Err != nil {
				continue
			}
			if p.Row == nil {
				events, err := appendToTrace(ctx, tx, p.ID, steps[i].Events, steps[i].Spans, storeutil.ExpectTrace(datasetID, steps[i].ExpectEvents))
				if errors.Is(err, pgx.ErrNoRows) {
					err = fmt.Errorf("no trace %s: %w", p.ID, store.ErrNotFound)
				}
				if storeutil.Refused(err) {
					p.Err = fmt.Errorf("postgres: record conversation step of trace %s: %w", p.ID, err)
					continue
				}
				if err != nil {
					return err
				}
				anns = append(anns, p.Anns...)
				p.Events = events
			}
			if _, err := tx.Exec(ctx, upsertConversation, p.ID, datasetID, steps[i].Head, p.Events, now); err != nil {
				return err
			}
		}
		if len(anns) > 0 {
			return copyAnnotations(ctx, tx, func(yield func(store.Annotation)) {
				for _, a := range anns {
					yield(a)
				}
			})
		}
		return nil
	})
	if err != nil {
		return nil, nil, fail(ctx, err, "record %d conversation steps in dataset %s", len(steps), datasetID)
	}
	var pieces int64
	for _, r := range prep.NewRows() {
		pieces += int64(len(r.Doc.Pieces))
	}
	if pieces > 0 {
		s.noteIndexed(pieces)
	}
	ids, errs := prep.Results()
	return ids, errs, nil
}
