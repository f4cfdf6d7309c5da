package server

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/lookout-dev/lookout/internal/search"
	"github.com/lookout-dev/lookout/internal/store"
)

// searchHitJSON is a matching trace: its summary and where the query's
// texts occur in it.
type searchHitJSON struct {
	traceSummaryJSON
	Hits    []string     `json:"hits"`
	Snippet *snippetJSON `json:"snippet,omitempty"`
}

// snippetJSON is the text around a trace's first hit (store.Snippet).
type snippetJSON struct {
	Before string `json:"before"`
	Match  string `json:"match"`
	After  string `json:"after"`
}

// parseQuery reads ?q=; a query that does not parse is a 400 that gives
// its position.
func parseQuery(r *http.Request) (*search.Query, error) {
	return search.Parse(r.URL.Query().Get("q"))
}

// searchDataset answers GET /api/v1/datasets/{id}/search?q=&cursor=&limit=
// with the matching traces in index order, a page at a time:
// {"traces": [{..summary, "hits": [address...], "snippet"?}], "next", "total",
// "total_is_estimate", "plan"}. The total is exact up to ?count_cap= (default
// 1000, at most 100000) matches and an estimate past it.
func (s *Server) searchDataset(w http.ResponseWriter, r *http.Request, p *principal) error {
	d, err := s.readableDataset(r, p, r.PathValue("id"))
	if err != nil {
		return err
	}
	if err := s.settleDataset(r.Context(), d.ID); err != nil {
		return err
	}
	q, err := parseQuery(r)
	if err != nil {
		return err
	}
	opts := store.SearchOptions{Page: store.Page{Cursor: r.URL.Query().Get("cursor"), Limit: 50}}
	if l := r.URL.Query().Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > maxPage {
			return errorf(http.StatusBadRequest, codeBadRequest, "limit must be a whole number from 1 to %d, not %q", maxPage, l)
		}
		opts.Page.Limit = n
	}
	if c := r.URL.Query().Get("count_cap"); c != "" {
		n, err := strconv.Atoi(c)
		if err != nil || n < 1 || n > 100000 {
			return errorf(http.StatusBadRequest, codeBadRequest, "count_cap must be a whole number from 1 to 100000, not %q", c)
		}
		opts.CountCap = n
	}
	res, err := s.st.SearchTraces(r.Context(), d.ID, q, opts)
	if errors.Is(err, store.ErrInvalid) {
		return errorf(http.StatusBadRequest, codeBadRequest, "invalid cursor %q", opts.Page.Cursor)
	}
	if err != nil {
		return err
	}
	out := make([]searchHitJSON, len(res.Traces))
	for i, t := range res.Traces {
		hits := t.Hits
		if hits == nil {
			hits = []string{}
		}
		out[i] = searchHitJSON{traceSummaryJSON: summaryJSON(&res.Traces[i].TraceSummary, s.prices), Hits: hits}
		if sn := t.Snippet; sn != nil {
			out[i].Snippet = &snippetJSON{sn.Before, sn.Match, sn.After}
		}
	}
	ptrs := make([]*traceSummaryJSON, len(out))
	for i := range out {
		ptrs[i] = &out[i].traceSummaryJSON
	}
	if err := s.addVerdicts(r.Context(), ptrs); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, struct {
		Traces   []searchHitJSON `json:"traces"`
		Next     string          `json:"next"`
		Total    int64           `json:"total"`
		Estimate bool            `json:"total_is_estimate"`
		Plan     string          `json:"plan"`
	}{out, res.Next, res.Total, res.Estimate, q.String()})
	return nil
}

// traceHits answers GET /api/v1/traces/{id}/hits?q= with where the query's
// texts occur in one trace, {"hits": [address...]}, whether or not the
// trace matches the whole query: what the trace page highlights.
func (s *Server) traceHits(w http.ResponseWriter, r *http.Request, p *principal) error {
	q, err := parseQuery(r)
	if err != nil {
		return err
	}
	st, err := s.traceAccess(r, p, false)
	if err != nil {
		return err
	}
	hits := []string{}
	if words := q.Words(); len(words) > 0 {
		if h := search.Hits(search.Index(st.Trace).Pieces, words); h != nil {
			hits = h
		}
	}
	writeJSON(w, http.StatusOK, map[string][]string{"hits": hits})
	return nil
}

// queryError is a query that does not parse, as a 400 naming its place.
func queryError(e *search.Error) *apiError {
	return &apiError{Status: http.StatusBadRequest, Code: codeInvalidQuery, Message: e.Error(),
		Details: map[string]int{"position": e.Pos, "column": e.Pos + 1}}
}

// searchStore is what the search handler asks of the store.
type searchStore interface {
	SearchTraces(ctx context.Context, datasetID string, q *search.Query, opts store.SearchOptions) (store.SearchResult, error)
}
