package sqlstore

import (
	"context"
	"fmt"

	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/internal/storeutil"
)

// FindConversation returns the dataset's conversation whose head is one of
// heads: the one with the most events, the latest recorded among equals.
func (s *Store) FindConversation(ctx context.Context, datasetID string, heads []string) (store.Conversation, error) {
	if err := storeutil.CheckHeads(heads); err != nil {
		return store.Conversation{}, s.errorf("find conversation: %w", err)
	}
	if !storeutil.ValidID(datasetID) {
		return store.Conversation{}, s.notFound("find conversation: dataset %q", datasetID)
	}
	list, err := s.D.List(heads)
	if err != nil {
		return store.Conversation{}, s.errorf("find conversation: %w", err)
	}
	var c store.Conversation
	err = s.R.QueryRow(ctx, `SELECT trace_id, head, events FROM conversations
		WHERE dataset_id = $1 AND head `+s.D.InList+`
		ORDER BY events DESC, updated_at DESC LIMIT 1`, datasetID, list).Scan(&c.TraceID, &c.Head, &c.Events)
	if err != nil {
		return store.Conversation{}, s.Fail(ctx, err, "find conversation in dataset %s", datasetID)
	}
	return c, nil
}

// upsertConversation sets a trace's head and event count.
const upsertConversation = `INSERT INTO conversations (trace_id, dataset_id, head, events, updated_at) VALUES ($1, $2, $3, $4, $5)
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

// refuseTaken refuses the exclusive steps that would start a trace for a
// head the dataset holds a conversation of already, in tx, under a lock
// of the head that a step of it through another server waits for.
func (s *Store) refuseTaken(ctx context.Context, tx Querier, datasetID string, steps []store.ConversationStep, prep *storeutil.PreparedSteps) error {
	for i := range prep.Steps {
		p := &prep.Steps[i]
		if !steps[i].Exclusive || p.Row == nil || p.Err != nil {
			continue
		}
		if s.D.LockText != "" {
			if _, err := tx.Exec(ctx, s.D.LockText, datasetID+"/"+steps[i].Head); err != nil {
				return err
			}
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM conversations WHERE dataset_id = $1 AND head = $2`, datasetID, steps[i].Head).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			p.Err = s.errorf("record conversation: another step started the conversation of this head first: %w", store.ErrConflict)
		}
	}
	return nil
}

// RecordConversations stores steps of different traces in one transaction;
// a step refused is left out with its error (refusals are found by reads,
// before anything of the step is written, so the transaction goes on).
func (s *Store) RecordConversations(ctx context.Context, ownerID, datasetID string, steps []store.ConversationStep) ([]string, []error, error) {
	if !storeutil.ValidID(ownerID) {
		return nil, nil, s.notFound("record conversation: owner %q", ownerID)
	}
	if !storeutil.ValidID(datasetID) {
		return nil, nil, s.notFound("record conversation: dataset %q", datasetID)
	}
	now := storeutil.Now()
	prep := storeutil.PrepareSteps(steps, now)
	err := s.Write(ctx, func(tx Querier) error {
		prep.Reset()
		if err := s.refuseTaken(ctx, tx, datasetID, steps, prep); err != nil {
			return err
		}
		if rows := prep.NewRows(); len(rows) > 0 {
			if err := s.insertTraces(ctx, tx, ownerID, datasetID, rows, now); err != nil {
				return err
			}
			if err := s.Enqueue(ctx, tx, rowIDs(rows)); err != nil {
				return err
			}
		}
		var appended []string
		var anns []store.Annotation
		for i := range prep.Steps {
			p := &prep.Steps[i]
			if p.Err != nil {
				continue
			}
			if p.Row == nil {
				events, err := s.Hooks.AppendToTrace(ctx, tx, p.ID, steps[i].Events, steps[i].Spans, storeutil.ExpectTrace(datasetID, steps[i].ExpectEvents))
				if NoRows(err) {
					err = fmt.Errorf("no trace %s: %w", p.ID, store.ErrNotFound)
				}
				if storeutil.Refused(err) {
					p.Err = s.errorf("record conversation step of trace %s: %w", p.ID, err)
					continue
				}
				if err != nil {
					return err
				}
				anns = append(anns, p.Anns...)
				appended = append(appended, p.ID)
				p.Events = events
			}
			if _, err := tx.Exec(ctx, upsertConversation, p.ID, datasetID, steps[i].Head, p.Events, s.D.Time(now)); err != nil {
				return err
			}
		}
		if err := s.Enqueue(ctx, tx, appended); err != nil {
			return err
		}
		if len(anns) > 0 {
			return s.Hooks.InsertAnnotations(ctx, tx, anns)
		}
		return nil
	})
	if err != nil {
		return nil, nil, s.Fail(ctx, err, "record %d conversation steps in dataset %s", len(steps), datasetID)
	}
	ids, errs := prep.Results()
	return ids, errs, nil
}
