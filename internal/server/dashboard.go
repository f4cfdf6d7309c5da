package server

import (
	"cmp"
	"context"
	"maps"
	"math"
	"net/http"
	"slices"
	"time"

	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/usage"
)

// dashboardTimeout bounds a dashboard's queries: past it the request
// fails rather than holding a connection.
const dashboardTimeout = 20 * time.Second

// usageJSON is tokens and cost, the cost priced now with the server's
// price table where the sources recorded none (as list rows are).
type usageJSON struct {
	InputTokens   int64   `json:"input_tokens"`
	OutputTokens  int64   `json:"output_tokens"`
	Cost          float64 `json:"cost"`
	CostEstimated float64 `json:"cost_estimated"` // the part of cost from the price table
	UnpricedSpans int     `json:"unpriced_spans"` // spans with tokens and no cost, recorded or priced
}

type dashBucketJSON struct {
	Start  time.Time `json:"start"`
	Traces int       `json:"traces"`
	usageJSON
}

type percentilesJSON struct {
	Count int      `json:"count"`
	P50   *float64 `json:"p50"`
	P90   *float64 `json:"p90"`
	P99   *float64 `json:"p99"`
}

type dashModelJSON struct {
	Model string `json:"model"`
	Spans int    `json:"spans"`
	usageJSON
}

type dashPolicyJSON struct {
	ID     string  `json:"id"`
	Name   string  `json:"name"`
	Traces int     `json:"traces"` // traces with a violation of it
	Rate   float64 `json:"rate"`   // of the traces in range
}

type dashCriterionJSON struct {
	Criterion string   `json:"criterion"`
	Passed    int      `json:"passed"`
	Failed    int      `json:"failed"`
	Rate      *float64 `json:"rate"`
}

type dashToolJSON struct {
	Name      string  `json:"name"`
	Calls     int     `json:"calls"`
	Errors    int     `json:"errors"`
	ErrorRate float64 `json:"error_rate"`
}

type dashboardJSON struct {
	From          *time.Time          `json:"from"`
	To            *time.Time          `json:"to"`
	BucketSeconds int64               `json:"bucket_seconds"`
	Totals        dashBucketJSON      `json:"totals"`
	Buckets       []dashBucketJSON    `json:"buckets"`
	Models        []dashModelJSON     `json:"models"`
	DurationMs    percentilesJSON     `json:"duration_ms"`
	LLMLatencyMs  percentilesJSON     `json:"llm_latency_ms"`
	Policies      []dashPolicyJSON    `json:"policies"`
	Criteria      []dashCriterionJSON `json:"criteria"`
	Tools         []dashToolJSON      `json:"tools"`
}

// priced is recorded usage with the tokens of byModel priced by prices.
func priced(in, out int64, cost float64, unpriced int, byModel map[string]store.ModelTokens, prices *usage.Prices) usageJSON {
	u := usageJSON{InputTokens: in, OutputTokens: out, Cost: cost, UnpricedSpans: unpriced}
	// In the models' order, so that the sum is the same every time.
	for _, m := range slices.Sorted(maps.Keys(byModel)) {
		mt := byModel[m]
		if p, _, ok := prices.Lookup(m); ok {
			c := (float64(mt.Input)*p.Input + float64(mt.Output)*p.Output) / 1e6
			u.Cost += c
			u.CostEstimated += c
			u.UnpricedSpans -= mt.Spans
		}
	}
	return u
}

// timeParam reads an RFC 3339 time parameter; "" is the zero time.
func timeParam(r *http.Request, name string) (time.Time, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, errorf(http.StatusBadRequest, codeBadRequest, "%s must be an RFC 3339 time, not %q", name, v)
	}
	return t, nil
}

// dashboardQuery reads ?from= and ?to=.
func dashboardQuery(r *http.Request) (store.DashboardQuery, error) {
	from, err := timeParam(r, "from")
	if err != nil {
		return store.DashboardQuery{}, err
	}
	to, err := timeParam(r, "to")
	if err != nil {
		return store.DashboardQuery{}, err
	}
	if !from.IsZero() && !to.IsZero() && !to.After(from) {
		return store.DashboardQuery{}, errorf(http.StatusBadRequest, codeBadRequest, "to must be after from")
	}
	return store.DashboardQuery{From: from, To: to}, nil
}

// readDashboard reads the dashboard of the dataset the request names over
// ?from= and ?to= (RFC 3339; either may be empty: the first or last
// trace's time), its totals only when totalsOnly, within dashboardTimeout.
func (s *Server) readDashboard(r *http.Request, p *principal, totalsOnly bool, then func(ctx context.Context, d store.Dataset, dash *store.Dashboard) error) error {
	d, err := s.readableDataset(r, p, r.PathValue("id"))
	if err != nil {
		return err
	}
	dq, err := dashboardQuery(r)
	if err != nil {
		return err
	}
	dq.TotalsOnly = totalsOnly
	ctx, cancel := context.WithTimeout(r.Context(), dashboardTimeout)
	defer cancel()
	if err := s.settleDataset(ctx, d.ID); err != nil {
		return err
	}
	dash, err := s.st.Dashboard(ctx, d.ID, dq)
	if err != nil {
		return err
	}
	return then(ctx, d, &dash)
}

// getDashboard answers a dataset's dashboard (readDashboard).
func (s *Server) getDashboard(w http.ResponseWriter, r *http.Request, p *principal) error {
	return s.readDashboard(r, p, false, func(ctx context.Context, d store.Dataset, dash *store.Dashboard) error {
		policies, err := s.st.ListPolicies(ctx, d.ID)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, s.dashboardJSON(dash, policies))
		return nil
	})
}

// getTotals answers a dataset's totals (traces, tokens, cost), as
// getDashboard's "totals" with none of the rest.
func (s *Server) getTotals(w http.ResponseWriter, r *http.Request, p *principal) error {
	return s.readDashboard(r, p, true, func(_ context.Context, _ store.Dataset, dash *store.Dashboard) error {
		t := &dash.Totals
		writeJSON(w, http.StatusOK, dashBucketJSON{Start: dash.From, Traces: t.Traces,
			usageJSON: priced(t.Input, t.Output, t.Cost, t.Unpriced, t.ByModel, s.prices)})
		return nil
	})
}

func (s *Server) dashboardJSON(d *store.Dashboard, policies []store.Policy) dashboardJSON {
	out := dashboardJSON{BucketSeconds: int64(d.Bucket / time.Second), Buckets: []dashBucketJSON{}, Models: []dashModelJSON{},
		Policies: []dashPolicyJSON{}, Criteria: []dashCriterionJSON{}, Tools: []dashToolJSON{}}
	if !d.From.IsZero() {
		out.From, out.To = &d.From, &d.To
	}
	t := &d.Totals
	out.Totals = dashBucketJSON{Start: d.Start, Traces: t.Traces, usageJSON: priced(t.Input, t.Output, t.Cost, t.Unpriced, t.ByModel, s.prices)}
	for i, b := range d.Buckets {
		out.Buckets = append(out.Buckets, dashBucketJSON{Start: d.Start.Add(time.Duration(i) * d.Bucket), Traces: b.Traces,
			usageJSON: priced(b.Input, b.Output, b.Cost, b.Unpriced, b.ByModel, s.prices)})
	}
	for name, m := range d.Models {
		u := priced(m.Input, m.Output, m.Cost, m.Unpriced.Spans, map[string]store.ModelTokens{name: m.Unpriced}, s.prices)
		out.Models = append(out.Models, dashModelJSON{Model: name, Spans: m.Spans, usageJSON: u})
	}
	slices.SortFunc(out.Models, func(a, b dashModelJSON) int {
		return cmp.Or(cmp.Compare(b.InputTokens+b.OutputTokens, a.InputTokens+a.OutputTokens), cmp.Compare(a.Model, b.Model))
	})
	out.DurationMs.Count = d.Durations
	if d.Durations > 0 {
		out.DurationMs.P50, out.DurationMs.P90, out.DurationMs.P99 = ms(d.DurationPcts[0]), ms(d.DurationPcts[1]), ms(d.DurationPcts[2])
	}
	out.LLMLatencyMs = histogramPercentiles(d.LLMLatency)
	rate := func(n int) float64 {
		if t.Traces == 0 {
			return 0
		}
		return float64(n) / float64(t.Traces)
	}
	for _, p := range policies {
		out.Policies = append(out.Policies, dashPolicyJSON{ID: p.ID, Name: p.Name, Traces: d.Violations[p.ID], Rate: rate(d.Violations[p.ID])})
	}
	// Violations of policies no longer saved (or run unsaved) under "".
	other := 0
	for id, n := range d.Violations {
		if !slices.ContainsFunc(policies, func(p store.Policy) bool { return p.ID == id }) {
			other += n
		}
	}
	if other > 0 {
		out.Policies = append(out.Policies, dashPolicyJSON{Traces: other, Rate: rate(other)})
	}
	for _, name := range slices.Sorted(maps.Keys(d.Criteria)) {
		c := d.Criteria[name]
		j := dashCriterionJSON{Criterion: name, Passed: c.Passed, Failed: c.Failed}
		if c.Passed+c.Failed > 0 {
			r := float64(c.Passed) / float64(c.Passed+c.Failed)
			j.Rate = &r
		}
		out.Criteria = append(out.Criteria, j)
	}
	for name, x := range d.Tools {
		j := dashToolJSON{Name: name, Calls: x.Calls, Errors: x.Errors}
		if x.Calls > 0 {
			j.ErrorRate = float64(x.Errors) / float64(x.Calls)
		}
		out.Tools = append(out.Tools, j)
	}
	slices.SortFunc(out.Tools, func(a, b dashToolJSON) int { return cmp.Or(cmp.Compare(b.Calls, a.Calls), cmp.Compare(a.Name, b.Name)) })
	return out
}

func ms(d time.Duration) *float64 {
	v := float64(d) / float64(time.Millisecond)
	return &v
}

// histogramPercentiles are the percentiles of a latency histogram
// (store.Usage.LLMLatency) by nearest rank, each its bucket's middle.
func histogramPercentiles(h map[int]int) percentilesJSON {
	keys := slices.Sorted(maps.Keys(h))
	n := 0
	for _, k := range keys {
		n += h[k]
	}
	out := percentilesJSON{Count: n}
	if n == 0 {
		return out
	}
	at := func(p float64) *float64 {
		rank := max(int(math.Ceil(float64(n)*p)), 1)
		seen := 0
		for _, k := range keys {
			if seen += h[k]; seen >= rank {
				return ms(store.LatencyOfBucket(k))
			}
		}
		return ms(store.LatencyOfBucket(keys[len(keys)-1]))
	}
	out.P50, out.P90, out.P99 = at(0.5), at(0.9), at(0.99)
	return out
}

// dashboardStore is what the dashboard handlers ask of the store.
type dashboardStore interface {
	Dashboard(ctx context.Context, datasetID string, q store.DashboardQuery) (store.Dashboard, error)
	ListPolicies(ctx context.Context, datasetID string) ([]store.Policy, error)
}
