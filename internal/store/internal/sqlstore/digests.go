package sqlstore

import (
	"context"
	"fmt"

	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/internal/storeutil"
	"github.com/lookout-dev/lookout/internal/trace"
)

// ListCols are the columns of a trace list's row, of traces t: a
// TraceSummary as ScanSummary reads it. The violation count is an
// index-only count (annotations_trace is on trace_id, source).
const ListCols = `t.id, t.idx, t.name, t.metadata, t.event_count, t.created_at,
	(SELECT count(*) FROM annotations a WHERE a.trace_id = t.id),
	(SELECT count(*) FROM annotations a WHERE a.trace_id = t.id AND a.source = 'analyzer'),
	(SELECT d.summary FROM trace_summaries d WHERE d.trace_id = t.id)`

// ListRow is a row of ListCols being read.
type ListRow struct {
	Meta, Summary []byte
}

// Dest are the scan destinations of ListCols for t, created taking the
// backend's type for created_at.
func (r *ListRow) Dest(t *store.TraceSummary, created any) []any {
	r.Meta, r.Summary = nil, nil
	return []any{&t.ID, &t.Index, &t.Name, &r.Meta, &t.EventCount, created, &t.AnnotationCount, &t.ViolationCount, &r.Summary}
}

// Finish sets t's metadata and digest from the row read; it reports false
// when the trace has no stored digest (FillDigests computes it).
func (r *ListRow) Finish(t *store.TraceSummary) (bool, error) {
	if r.Meta != nil {
		t.Metadata = append([]byte(nil), r.Meta...)
	}
	if r.Summary == nil {
		return false, nil
	}
	d, err := storeutil.DecodeDigest(r.Summary)
	if err != nil {
		return false, fmt.Errorf("trace %s: %w", t.ID, err)
	}
	t.Digest = d.Digest
	return true, nil
}

// SummaryCols are the columns of trace_summaries a write of a digest sets
// (migration 00020: the sort keys beside the digest, with the trace's
// dataset and index; violations is kept by triggers on annotations).
const SummaryCols = `trace_id, summary, dataset_id, idx, duration_ms, tokens, cost`

// insertSummary inserts the digest $2 with sort keys $3, $4, $5 of trace
// $1, taking its dataset, index and violation count from the trace's rows.
const insertSummary = `INSERT INTO trace_summaries (` + SummaryCols + `, violations)
	SELECT t.id, $2, t.dataset_id, t.idx, CAST($3 AS double precision), CAST($4 AS bigint), CAST($5 AS double precision),
		(SELECT count(*) FROM annotations a WHERE a.trace_id = t.id AND a.source = 'analyzer')
	FROM traces t WHERE t.id = $1`

// PutDigest stores a trace's digest (storeutil.EncodeDigest) with its sort
// keys, replacing the one it had.
func PutDigest(ctx context.Context, q Querier, traceID string, summary []byte) error {
	d, err := storeutil.DecodeDigest(summary)
	if err != nil {
		return err
	}
	return PutDigestKeys(ctx, q, traceID, summary, storeutil.KeysOf(d.Digest))
}

// PutDigestKeys is PutDigest with the digest's sort keys known (a row of
// storeutil.PrepareTraces has them): a built trace's digest is not decoded
// again.
func PutDigestKeys(ctx context.Context, q Querier, traceID string, summary []byte, k storeutil.Keys) error {
	_, err := q.Exec(ctx, insertSummary+`
		ON CONFLICT (trace_id) DO UPDATE SET summary = excluded.summary, duration_ms = excluded.duration_ms,
			tokens = excluded.tokens, cost = excluded.cost`, traceID, string(summary), k.DurationMs, k.Tokens, k.Cost)
	return err
}

// AppendedDigest brings the digest of trace id up to date in tx after
// events and spans were appended to it; content (stored with enc) is the
// trace's content after the append, read only when the trace had no
// digest (written before digests were kept).
func AppendedDigest(ctx context.Context, q Querier, id string, events []trace.Event, spans []trace.Span, content []byte, enc int) error {
	var stored string
	err := q.QueryRow(ctx, `SELECT summary FROM trace_summaries WHERE trace_id = $1`, id).Scan(&stored)
	var summary []byte
	switch {
	case err == nil:
		if summary, err = storeutil.AppendDigest([]byte(stored), events, spans); err != nil {
			return fmt.Errorf("trace %s: %w", id, err)
		}
	case NoRows(err):
		t, err := storeutil.DecodeContent(content, enc, nil)
		if err != nil {
			return fmt.Errorf("trace %s: %w", id, err)
		}
		summary = storeutil.EncodeDigest(storeutil.StoredDigestOf(t))
	default:
		return err
	}
	return PutDigest(ctx, q, id, summary)
}

// FillDigests computes the digests of ts (their rows had none: traces
// written before digests were kept) from their content, sets them in ts
// and stores them, so that this happens once a trace. A digest stored
// meanwhile (an append, a rebuilt OpenTelemetry trace) is kept. A trace
// whose content does not decode keeps an empty digest.
func (s *Store) FillDigests(ctx context.Context, ts []*store.TraceSummary) error {
	if len(ts) == 0 {
		return nil
	}
	at := make(map[string]*store.TraceSummary, len(ts))
	ids := make([]string, len(ts))
	for i, t := range ts {
		at[t.ID], ids[i] = t, t.ID
	}
	type stored struct {
		summary []byte
		keys    storeutil.Keys
	}
	summaries := map[string]stored{}
	err := s.Search.StoredTraces(ctx, ids, func(id string, t *trace.Trace, bad error) {
		if bad != nil {
			return
		}
		d := storeutil.StoredDigestOf(t)
		at[id].Digest = d.Digest
		summaries[id] = stored{storeutil.EncodeDigest(d), storeutil.KeysOf(d.Digest)}
	})
	if err != nil {
		return s.Fail(ctx, err, "trace summaries: read traces")
	}
	err = s.Write(ctx, func(q Querier) error {
		for id, sum := range summaries {
			if _, err := q.Exec(ctx, insertSummary+` ON CONFLICT (trace_id) DO NOTHING`,
				id, string(sum.summary), sum.keys.DurationMs, sum.keys.Tokens, sum.keys.Cost); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return s.Fail(ctx, err, "trace summaries: store")
	}
	return nil
}

// MissingDigests are the summaries of ts at missing, for FillDigests.
func MissingDigests(ts []store.TraceSummary, missing []int) []*store.TraceSummary {
	out := make([]*store.TraceSummary, len(missing))
	for k, i := range missing {
		out[k] = &ts[i]
	}
	return out
}
