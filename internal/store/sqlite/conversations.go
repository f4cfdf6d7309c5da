package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/internal/storeutil"
)

// ---- the gateway's conversations ----

// FindConversation returns the dataset's conversation whose head is one of
// heads: the one with the most events, the latest recorded among equals.
func (s *Store) FindConversation(ctx context.Context, datasetID string, heads []string) (store.Conversation, error) {
	if err := storeutil.CheckHeads(heads); err != nil {
		return store.Conversation{}, fmt.Errorf("sqlite: find conversation: %w", err)
	}
	if !storeutil.ValidID(datasetID) {
		return store.Conversation{}, notFound("find conversation: dataset %q", datasetID)
	}
	list, err := json.Marshal(heads)
	if err != nil {
		return store.Conversation{}, fmt.Errorf("sqlite: find conversation: %w", err)
	}
	var c store.Conversation
	err = s.r.QueryRowContext(ctx, `SELECT trace_id, head, events FROM conversations
		WHERE dataset_id = ? AND head IN (SELECT value FROM json_each(?))
		ORDER BY events DESC, updated_at DESC LIMIT 1`, datasetID, string(list)).Scan(&c.TraceID, &c.Head, &c.Events)
	if err != nil {
		return store.Conversation{}, fail(ctx, err, "find conversation in dataset %s", datasetID)
	}
	return c, nil
}

// upsertConversation sets a trace's head and event count.
const upsertConversation = `INSERT INTO conversations (trace_id, dataset_id, head, events, updated_at) VALUES (?, ?, ?, ?, ?)
	ON CONFLICT (trace_id) DO UPDATE SET head = excluded.head, events = excluded.events, updated_at = excluded.updated_at`

// RecordConversation stores one step of a conversation in one
// transaction: a new trace (as AddTraces stores one) or events and spans
// appended to one (as AppendEvents appends), its annotations, and its head.
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
// a step refused is left out with its error.
func (s *Store) RecordConversations(ctx context.Context, ownerID, datasetID string, steps []store.ConversationStep) ([]string, []error, error) {
	if !storeutil.ValidID(ownerID) {
		return nil, nil, notFound("record conversation: owner %q", ownerID)
	}
	if !storeutil.ValidID(datasetID) {
		return nil, nil, notFound("record conversation: dataset %q", datasetID)
	}
	now := storeutil.Now()
	prep := storeutil.PrepareSteps(steps, now)
	err := s.write(ctx, func(tx *sql.Tx) error {
		prep.Reset()
		if rows := prep.NewRows(); len(rows) > 0 {
			at := 0
			if err := insertTraces(ctx, tx, ownerID, datasetID, rows, now, &at); err != nil {
				return err
			}
		}
		for i := range prep.Steps {
			p := &prep.Steps[i]
			if p.Err != nil {
				continue
			}
			if p.Row == nil {
				events, err := appendToTrace(ctx, tx, p.ID, steps[i].Events, steps[i].Spans, storeutil.ExpectTrace(datasetID, steps[i].ExpectEvents))
				if errors.Is(err, sql.ErrNoRows) {
					err = fmt.Errorf("no trace %s: %w", p.ID, store.ErrNotFound)
				}
				if storeutil.Refused(err) {
					p.Err = fmt.Errorf("sqlite: record conversation step of trace %s: %w", p.ID, err)
					continue
				}
				if err != nil {
					return err
				}
				if err := insertAnnotations(ctx, tx, p.Anns); err != nil {
					return err
				}
				p.Events = events
			}
			if _, err := tx.ExecContext(ctx, upsertConversation, p.ID, datasetID, steps[i].Head, p.Events, micros(now)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, fail(ctx, err, "record %d conversation steps in dataset %s", len(steps), datasetID)
	}
	ids, errs := prep.Results()
	return ids, errs, nil
}
