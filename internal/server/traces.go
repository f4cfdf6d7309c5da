package server

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/lookout-dev/lookout/internal/jsonscan"
	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/trace"
	"github.com/lookout-dev/lookout/internal/usage"
)

// traceAccess loads a trace the caller may read (write=false) or change
// (write=true). Access follows the trace's dataset; a trace outside any
// dataset is its owner's alone. What the caller may not see is 404.
func (s *Server) traceAccess(r *http.Request, p *principal, write bool) (store.StoredTrace, error) {
	if write {
		if err := s.requireUser(r, p); err != nil {
			return store.StoredTrace{}, err
		}
	}
	id := r.PathValue("id")
	var t store.StoredTrace
	if err := s.settleTrace(r.Context(), id); err != nil {
		return t, err
	}
	var err error
	if write {
		t, err = s.st.Trace(r.Context(), id)
	} else {
		t, err = s.reads.read(r.Context(), s.st, id)
	}
	if errors.Is(err, store.ErrNotFound) {
		return t, notFound("trace " + id)
	}
	if err != nil {
		return t, err
	}
	if t.DatasetID == "" {
		if p.anonymous() || t.OwnerID != p.User.ID {
			return store.StoredTrace{}, notFound("trace " + id)
		}
		return t, nil
	}
	if write {
		_, err = s.writableDataset(r, p, t.DatasetID)
	} else {
		_, err = s.readableDataset(r, p, t.DatasetID)
	}
	if err != nil {
		var ae *apiError
		if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
			return store.StoredTrace{}, notFound("trace " + id)
		}
		return store.StoredTrace{}, err
	}
	return t, nil
}

// traceBody renders a stored trace with its annotations as canonical JSON
// (format "" or "canonical") or as one Invariant line ("invariant").
func (s *Server) traceBody(r *http.Request, st store.StoredTrace) ([]byte, error) {
	format := r.URL.Query().Get("format")
	if format != "" && format != "canonical" && format != "invariant" {
		return nil, errorf(http.StatusBadRequest, codeBadRequest, "format must be canonical or invariant, not %q", format)
	}
	anns, err := s.st.ListAnnotations(r.Context(), st.ID)
	if err != nil {
		return nil, err
	}
	t := fullTrace(st, anns)
	if format == "invariant" {
		return invariantLine(t)
	}
	return append(trace.AppendTrace(nil, t), '\n'), nil
}

// getTrace answers one trace as canonical JSON, or ?format=invariant. With
// ?usage=1 it answers {"trace": <canonical JSON>, "usage": {...}}: the
// trace's token, cost and duration totals and each span's usage
// (appendUsage), which the explorer shows as they are. The trace stays a
// member of its own so that none of its members is shadowed.
func (s *Server) getTrace(w http.ResponseWriter, r *http.Request, p *principal) error {
	withUsage := false
	switch v := r.URL.Query().Get("usage"); v {
	case "", "0", "false":
	case "1", "true":
		withUsage = true
		if f := r.URL.Query().Get("format"); f != "" && f != "canonical" {
			return errorf(http.StatusBadRequest, codeBadRequest, "usage comes with the canonical format only, not %q", f)
		}
	default:
		return errorf(http.StatusBadRequest, codeBadRequest, "usage must be 1 or 0, not %q", v)
	}
	st, err := s.traceAccess(r, p, false)
	if err != nil {
		return err
	}
	body, err := s.traceBody(r, st)
	if err != nil {
		return err
	}
	if withUsage {
		b := make([]byte, 0, len(body)+64+64*len(st.Trace.Spans))
		b = append(b, `{"trace":`...)
		b = append(b, body[:len(body)-1]...) // without its newline
		b = append(b, `,"usage":`...)
		b = appendUsage(b, st.Trace, s.prices)
		body = append(b, "}\n"...)
	}
	writeRaw(w, http.StatusOK, body)
	return nil
}

// maxEventPage caps ?limit= on a trace's events.
const maxEventPage = 5000

// listEvents answers a slice of one trace's events, so that a client can show
// the first screen of a long trace before the whole of it has arrived:
// ?offset=N (default 0) and ?limit=N (default 100, at most 5000) →
// {"id", "name", "index", "total", "offset", "events": [...]}. An offset past
// the end gives no events.
func (s *Server) listEvents(w http.ResponseWriter, r *http.Request, p *principal) error {
	q := r.URL.Query()
	offset, limit := 0, 100
	if v := q.Get("offset"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return errorf(http.StatusBadRequest, codeBadRequest, "offset must be a whole number from 0, not %q", v)
		}
		offset = n
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxEventPage {
			return errorf(http.StatusBadRequest, codeBadRequest, "limit must be a whole number from 1 to %d, not %q", maxEventPage, v)
		}
		limit = n
	}
	st, err := s.traceAccess(r, p, false)
	if err != nil {
		return err
	}
	events := st.Trace.Events
	total := len(events)
	from, to := min(offset, total), min(offset+limit, total)
	b := append([]byte(nil), `{"id":`...)
	b = strconv.AppendQuote(b, st.ID)
	if st.Trace.Name != "" {
		b = append(b, `,"name":`...)
		nb, _ := json.Marshal(st.Trace.Name)
		b = append(b, nb...)
	}
	if st.DatasetID != "" {
		b = append(b, `,"index":`...)
		b = strconv.AppendInt(b, st.Index, 10)
	}
	b = append(b, `,"total":`...)
	b = strconv.AppendInt(b, int64(total), 10)
	b = append(b, `,"offset":`...)
	b = strconv.AppendInt(b, int64(offset), 10)
	b = append(b, `,"events":`...)
	b = trace.AppendEvents(b, events[from:to])
	b = append(b, "}\n"...)
	writeRaw(w, http.StatusOK, b)
	return nil
}

// downloadTrace is getTrace as a file to save.
func (s *Server) downloadTrace(w http.ResponseWriter, r *http.Request, p *principal) error {
	st, err := s.traceAccess(r, p, false)
	if err != nil {
		return err
	}
	body, err := s.traceBody(r, st)
	if err != nil {
		return err
	}
	name := "trace-" + st.ID + ".json"
	if r.URL.Query().Get("format") == "invariant" {
		name = "trace-" + st.ID + ".jsonl"
	}
	w.Header().Set("Content-Disposition", attachment(name))
	writeRaw(w, http.StatusOK, body)
	return nil
}

// appendEvents adds events to the end of a trace (a live trace). The body is
// a JSON array of events or {"events": [...]}.
func (s *Server) appendEvents(w http.ResponseWriter, r *http.Request, p *principal) error {
	st, err := s.traceAccess(r, p, true)
	if err != nil {
		return err
	}
	if err := requireJSON(r); err != nil {
		return err
	}
	body, err := readBody(r)
	if err != nil {
		return err
	}
	sc := jsonscan.NewStrict(body)
	var events []trace.Event
	switch sc.Peek() {
	case jsonscan.Array:
		events, err = trace.DecodeEvents(sc, "events")
	case jsonscan.Object:
		seen := false
		err = sc.Object(func(key string) error {
			if key != "events" {
				return sc.Errorf("unknown member %q (known: events)", key)
			}
			seen = true
			events, err = trace.DecodeEvents(sc, "events")
			return err
		})
		if err == nil && !seen {
			err = sc.Errorf(`the body needs "events": a list of events`)
		}
	default:
		err = sc.Expect(jsonscan.Array, "the request body (a list of events)")
	}
	if err == nil {
		err = sc.End()
	}
	if err != nil {
		return jsonError(body, err)
	}
	if len(events) == 0 {
		return errorf(http.StatusUnprocessableEntity, codeInvalid, "no events to append")
	}
	if err := s.st.AppendEvents(r.Context(), st.ID, events); err != nil {
		return err
	}
	s.traceChanged(st.ID)
	writeJSON(w, http.StatusOK, map[string]int{"appended": len(events)})
	return nil
}

func (s *Server) deleteTrace(w http.ResponseWriter, r *http.Request, p *principal) error {
	st, err := s.traceAccess(r, p, true)
	if err != nil {
		return err
	}
	if err := s.st.DeleteTrace(r.Context(), st.ID); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// traceSummaryJSON is a row of a trace list (listTraces, searchDataset):
// what the explorer's list shows, with no trace content. The counts of
// annotations and violations are counted when read; the rest is the
// digest the store computed when the trace was written (store.Digest),
// the cost priced now with the server's price table.
type traceSummaryJSON struct {
	ID              string          `json:"id"`
	Index           int64           `json:"index"`
	Name            string          `json:"name,omitempty"`
	Metadata        json.RawMessage `json:"metadata,omitempty"`
	EventCount      int             `json:"event_count"`
	AnnotationCount int             `json:"annotation_count"`
	ViolationCount  int             `json:"violation_count"`
	ToolCallCount   int             `json:"tool_call_count"`
	FirstUser       string          `json:"first_user,omitempty"`
	InputTokens     *int64          `json:"input_tokens,omitempty"`
	OutputTokens    *int64          `json:"output_tokens,omitempty"`
	TotalTokens     *int64          `json:"total_tokens,omitempty"`
	Cost            *float64        `json:"cost,omitempty"`
	CostEstimated   bool            `json:"cost_estimated,omitempty"`
	UnpricedSpans   int             `json:"unpriced_spans,omitempty"`
	DurationMs      *float64        `json:"duration_ms,omitempty"`
	// Verdicts are "pass" or "fail" by criterion, as the query language's
	// verdict: reads the current scores (fail when one is false, pass
	// when one is true and none false); Scores the mean of the current
	// scores that are numbers or booleans (true 1, false 0), by
	// criterion: what sort=score:<criterion> sorts by.
	Verdicts  map[string]string  `json:"verdicts,omitempty"`
	Scores    map[string]float64 `json:"scores,omitempty"`
	CreatedAt time.Time          `json:"created_at"`
}

// addVerdicts sets the verdicts and scores of list rows from their
// traces' current scores (one query for the page).
func (s *Server) addVerdicts(ctx context.Context, rows []*traceSummaryJSON) error {
	if len(rows) == 0 {
		return nil
	}
	ids := make([]string, len(rows))
	at := make(map[string]*traceSummaryJSON, len(rows))
	for i, r := range rows {
		ids[i], at[r.ID] = r.ID, r
	}
	scores, err := s.st.CurrentScores(ctx, ids)
	if err != nil {
		return err
	}
	type sum struct {
		n, total     float64
		pass, failed bool
	}
	sums := map[string]map[string]*sum{}
	for _, sc := range scores {
		m := sums[sc.TraceID]
		if m == nil {
			m = map[string]*sum{}
			sums[sc.TraceID] = m
		}
		x := m[sc.Criterion]
		if x == nil {
			x = &sum{}
			m[sc.Criterion] = x
		}
		switch v := string(sc.Value); v {
		case "true":
			x.pass, x.n, x.total = true, x.n+1, x.total+1
		case "false":
			x.failed, x.n = true, x.n+1
		default:
			var f float64
			if json.Unmarshal(sc.Value, &f) == nil {
				x.n, x.total = x.n+1, x.total+f
			}
		}
	}
	for id, m := range sums {
		r := at[id]
		for c, x := range m {
			switch {
			case x.failed:
				r.Verdicts = setKey(r.Verdicts, c, "fail")
			case x.pass:
				r.Verdicts = setKey(r.Verdicts, c, "pass")
			}
			if x.n > 0 {
				r.Scores = setKey(r.Scores, c, x.total/x.n)
			}
		}
	}
	return nil
}

// setKey sets m[k] = v, making m when nil.
func setKey[V any](m map[string]V, k string, v V) map[string]V {
	if m == nil {
		m = map[string]V{}
	}
	m[k] = v
	return m
}

// summaryJSON is t as a list row, its cost priced with prices.
func summaryJSON(t *store.TraceSummary, prices *usage.Prices) traceSummaryJSON {
	j := traceSummaryJSON{ID: t.ID, Index: t.Index, Name: t.Name, Metadata: t.Metadata,
		EventCount: t.EventCount, AnnotationCount: t.AnnotationCount, ViolationCount: t.ViolationCount, CreatedAt: t.CreatedAt,
		ToolCallCount: t.Digest.ToolCalls, FirstUser: t.Digest.FirstUser}
	u := &t.Digest.Usage
	if u.Has&usage.HasInput != 0 {
		j.InputTokens = &u.Input
	}
	if u.Has&usage.HasOutput != 0 {
		j.OutputTokens = &u.Output
	}
	if u.Has&usage.HasTotal != 0 {
		j.TotalTokens = &u.Total
	}
	// As usage.Reader.Span prices a span its source did not: by its
	// model's price, when the table has it.
	cost, has, unpriced := u.Cost, u.Has&usage.HasCost != 0, u.Unpriced
	// In the models' order, so that the sum is the same every time.
	for _, m := range slices.Sorted(maps.Keys(u.ByModel)) {
		mt := u.ByModel[m]
		if p, _, ok := prices.Lookup(m); ok {
			cost += (float64(mt.Input)*p.Input + float64(mt.Output)*p.Output) / 1e6
			has, j.CostEstimated = true, true
			unpriced -= mt.Spans
		}
	}
	if has {
		j.Cost = &cost
	}
	j.UnpricedSpans = unpriced
	if d, ok := u.Bounds.Duration(); ok {
		ms := float64(d) / float64(time.Millisecond)
		j.DurationMs = &ms
	}
	return j
}

// maxPage caps ?limit= on lists.
const maxPage = 1000

// listTraces lists a dataset's traces by index, a page at a time:
// ?limit=N (default 100, at most 1000) and ?cursor= from the previous
// page's "next" ("" when there are no more); ?sort= time (the default),
// duration, tokens, cost, violations or score:<criterion>, and ?order=
// asc (the default) or desc (store.Page.Sort says how ties and missing
// values sort). A cursor continues the sort and order it came from;
// ?offset=N (with no cursor) starts N traces in, as an explorer scrolled
// far down asks.
func (s *Server) listTraces(w http.ResponseWriter, r *http.Request, p *principal) error {
	d, err := s.readableDataset(r, p, r.PathValue("id"))
	if err != nil {
		return err
	}
	if err := s.settleDataset(r.Context(), d.ID); err != nil {
		return err
	}
	q := r.URL.Query()
	page := store.Page{Cursor: q.Get("cursor"), Limit: 100}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > maxPage {
			return errorf(http.StatusBadRequest, codeBadRequest, "limit must be a whole number from 1 to %d, not %q", maxPage, l)
		}
		page.Limit = n
	}
	if o := q.Get("offset"); o != "" {
		n, err := strconv.Atoi(o)
		if err != nil || n < 0 || page.Cursor != "" {
			return errorf(http.StatusBadRequest, codeBadRequest, "offset must be a whole number from 0, with no cursor, not %q", o)
		}
		page.Offset = n
	}
	page.Sort = q.Get("sort")
	if _, _, err := store.ParseSort(page.Sort); err != nil {
		return errorf(http.StatusBadRequest, codeBadRequest, "sort must be time, duration, tokens, cost, violations or score:<criterion>, not %q", page.Sort)
	}
	switch o := q.Get("order"); o {
	case "", "asc":
	case "desc":
		page.Desc = true
	default:
		return errorf(http.StatusBadRequest, codeBadRequest, "order must be asc or desc, not %q", o)
	}
	items, next, err := s.st.ListTraces(r.Context(), d.ID, page)
	if errors.Is(err, store.ErrInvalid) {
		return errorf(http.StatusBadRequest, codeBadRequest, "invalid cursor %q (a cursor continues the sort and order it came from)", page.Cursor)
	}
	if err != nil {
		return err
	}
	out := make([]traceSummaryJSON, len(items))
	ptrs := make([]*traceSummaryJSON, len(items))
	for i := range items {
		out[i] = summaryJSON(&items[i], s.prices)
		ptrs[i] = &out[i]
	}
	if err := s.addVerdicts(r.Context(), ptrs); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, struct {
		Traces []traceSummaryJSON `json:"traces"`
		Next   string             `json:"next"`
	}{out, next})
	return nil
}

// traceStore is what the trace handlers ask of the store.
type traceStore interface {
	AppendEvents(ctx context.Context, id string, events []trace.Event) error
	CurrentScores(ctx context.Context, traceIDs []string) ([]store.Score, error)
	DeleteTrace(ctx context.Context, id string) error
	ListAnnotations(ctx context.Context, traceID string) ([]store.Annotation, error)
	ListTraces(ctx context.Context, datasetID string, page store.Page) (items []store.TraceSummary, next string, err error)
	Trace(ctx context.Context, id string) (store.StoredTrace, error)
}
