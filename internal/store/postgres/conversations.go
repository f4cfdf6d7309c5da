package postgres

import (
	"context"
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
	if !storeutil.ValidID(ownerID) {
		return "", notFound("record conversation: owner %q", ownerID)
	}
	if !storeutil.ValidID(datasetID) {
		return "", notFound("record conversation: dataset %q", datasetID)
	}
	now := storeutil.Now()
	rows, anns, err := storeutil.PrepareStep(step, now)
	if err != nil {
		return "", fmt.Errorf("postgres: record conversation: %w", err)
	}
	id := step.TraceID
	err = s.write(ctx, func(tx pgx.Tx) error {
		var events int
		if id == "" {
			id, events = rows[0].ID, rows[0].EventCount
			if err := insertTraces(ctx, tx, ownerID, datasetID, rows, now); err != nil {
				return err
			}
		} else {
			var err error
			if events, err = appendToTrace(ctx, tx, id, step.Events, step.Spans, storeutil.ExpectTrace(datasetID, step.ExpectEvents)); err != nil {
				return err
			}
			if len(anns) > 0 {
				if err := copyAnnotations(ctx, tx, func(yield func(store.Annotation)) {
					for _, a := range anns {
						yield(a)
					}
				}); err != nil {
					return err
				}
			}
		}
		_, err := tx.Exec(ctx, upsertConversation, id, datasetID, step.Head, events, now)
		return err
	})
	if err != nil {
		return "", fail(ctx, err, "record conversation step of trace %q in dataset %s", id, datasetID)
	}
	if rows != nil {
		s.noteIndexed(int64(len(rows[0].Doc.Pieces)))
	}
	return id, nil
}
