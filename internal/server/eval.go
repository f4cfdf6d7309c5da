package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/lookout-dev/lookout/internal/eval"
	"github.com/lookout-dev/lookout/internal/jsonscan"
	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/trace"
)

// Evaluation (internal/eval):
//
//	GET    /api/v1/traces/{id}/scores                 ?criterion=&history=true → {"scores": [...], "dataset_id"}
//	POST   /api/v1/traces/{id}/scores                 {"criterion", "value", "address"?, "comment"?, "source"?, "extra"?} → 201 the score
//	DELETE /api/v1/traces/{id}/scores/{sid}           → 204 (the version before becomes current)
//	GET    /api/v1/datasets/{id}/scores               ?criterion=&history=true → {"scores": [...]}
//	GET    /api/v1/datasets/{id}/criteria             → {"criteria": [...]}
//	POST   /api/v1/datasets/{id}/criteria             a criterion → 201 (saved by name)
//	DELETE /api/v1/datasets/{id}/criteria/{cid}       → 204
//	GET    /api/v1/datasets/{id}/eval/status          → {"traces": {trace id: {criterion: status}}, "summary": [...]}
//	POST   /api/v1/datasets/{id}/eval/runs            {"name"?, "criteria"?} → 201 the run (it goes on in the background)
//	GET    /api/v1/datasets/{id}/eval/runs            → {"runs": [...]}
//	GET    /api/v1/eval/runs/{rid}                    → the run with its progress and per-criterion summary
//	GET    /api/v1/eval/runs/{rid}/events             → server-sent progress events, then "done"
//	POST   /api/v1/eval/runs/{rid}/cancel             → the run
//	GET    /api/v1/eval/runs/{rid}/compare/{other}    → {"changes": [...]} verdicts that differ from run rid to run other

type scoreJSON struct {
	ID        string          `json:"id"`
	TraceID   string          `json:"trace_id"`
	Address   string          `json:"address"`
	Criterion string          `json:"criterion"`
	Value     json.RawMessage `json:"value"`
	Comment   string          `json:"comment,omitempty"`
	Source    string          `json:"source"`
	Author    string          `json:"author,omitempty"`
	RunID     string          `json:"run_id,omitempty"`
	Extra     json.RawMessage `json:"extra,omitempty"`
	Version   int             `json:"version"`
	Current   bool            `json:"current"`
	CreatedAt time.Time       `json:"created_at"`
}

func toScoresJSON(ss []store.Score) []scoreJSON {
	out := make([]scoreJSON, len(ss))
	for i, s := range ss {
		out[i] = scoreJSON{s.ID, s.TraceID, s.Address, s.Criterion, s.Value, s.Comment, s.Source, s.Author, s.RunID, s.Extra, s.Version, s.Current, s.CreatedAt}
	}
	return out
}

// scoreFilter reads ?criterion= and ?history=true|false.
func scoreFilter(r *http.Request) (store.ScoreFilter, error) {
	q := r.URL.Query()
	f := store.ScoreFilter{Criterion: q.Get("criterion")}
	switch h := q.Get("history"); h {
	case "", "false", "0":
	case "true", "1":
		f.History = true
	default:
		return f, errorf(http.StatusBadRequest, codeBadRequest, "history=%q: want true or false", h)
	}
	return f, nil
}

func (s *Server) listTraceScores(w http.ResponseWriter, r *http.Request, p *principal) error {
	t, err := s.traceAccess(r, p, false)
	if err != nil {
		return err
	}
	f, err := scoreFilter(r)
	if err != nil {
		return err
	}
	f.TraceID = t.ID
	ss, err := s.st.ListScores(r.Context(), f)
	if err != nil {
		return err
	}
	// The dataset lets a client find its criteria and next ungraded trace.
	writeJSON(w, http.StatusOK, map[string]any{"scores": toScoresJSON(ss), "dataset_id": t.DatasetID})
	return nil
}

func (s *Server) listDatasetScores(w http.ResponseWriter, r *http.Request, p *principal) error {
	d, err := s.readableDataset(r, p, r.PathValue("id"))
	if err != nil {
		return err
	}
	f, err := scoreFilter(r)
	if err != nil {
		return err
	}
	f.DatasetID = d.ID
	ss, err := s.st.ListScores(r.Context(), f)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"scores": toScoresJSON(ss)})
	return nil
}

// createScore grades a trace or one place in it. The address must name
// something the trace has (422 otherwise); the value must be a boolean, a
// number or a string. Source defaults to human, the author is the caller.
func (s *Server) createScore(w http.ResponseWriter, r *http.Request, p *principal) error {
	t, err := s.traceAccess(r, p, true)
	if err != nil {
		return err
	}
	sc := store.Score{TraceID: t.ID, Source: "human", Author: p.User.Name}
	var hasValue bool
	body, err := decodeBody(r, map[string]member{
		"criterion": str(&sc.Criterion, "criterion"),
		"address":   str(&sc.Address, "address"),
		"comment":   str(&sc.Comment, "comment"),
		"source":    str(&sc.Source, "source"),
		"extra":     object(&sc.Extra, nil, "extra"),
		"value": func(js *jsonscan.Scanner) error {
			hasValue = true
			switch js.Peek() {
			case jsonscan.Bool, jsonscan.Number, jsonscan.String:
				v, err := js.Raw()
				sc.Value = v
				return err
			}
			return js.Errorf("value must be a boolean, a number or a string (a label)")
		},
	})
	if err != nil {
		return err
	}
	if err := validName("criterion", sc.Criterion); err != nil {
		return err
	}
	if !hasValue {
		return jsonError(body, jsonscan.New(body).Errorf(`the body needs "value": a boolean, a number or a string`))
	}
	if sc.Address != "" {
		a, err := trace.ParseAddress(sc.Address)
		if err != nil {
			return errorf(http.StatusUnprocessableEntity, codeInvalid, "address %q: %s", sc.Address, err.Error())
		}
		if _, err := t.Trace.Resolve(a); err != nil {
			return &apiError{Status: http.StatusUnprocessableEntity, Code: codeInvalid,
				Message: fmt.Sprintf("address %q is not in trace %s: %s", sc.Address, t.ID, err.Error()), Details: map[string]string{"address": sc.Address}}
		}
		sc.Address = a.String()
	}
	out, err := s.st.AddScores(r.Context(), []store.Score{sc})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, toScoresJSON(out)[0])
	return nil
}

func (s *Server) deleteScore(w http.ResponseWriter, r *http.Request, p *principal) error {
	t, err := s.traceAccess(r, p, true)
	if err != nil {
		return err
	}
	sid := r.PathValue("sid")
	sc, err := s.st.Score(r.Context(), sid)
	if errors.Is(err, store.ErrNotFound) || (err == nil && sc.TraceID != t.ID) {
		return notFound("score " + sid + " of trace " + t.ID)
	}
	if err != nil {
		return err
	}
	if err := s.st.DeleteScore(r.Context(), sid); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// ---- criteria ----

type criterionJSON struct {
	ID         string          `json:"id"`
	DatasetID  string          `json:"dataset_id"`
	Name       string          `json:"name"`
	Definition json.RawMessage `json:"definition"`
	CreatedAt  time.Time       `json:"created_at"`
	UpdatedAt  time.Time       `json:"updated_at"`
}

func toCriterionJSON(c store.Criterion) criterionJSON {
	return criterionJSON{c.ID, c.DatasetID, c.Name, c.Definition, c.CreatedAt, c.UpdatedAt}
}

func (s *Server) listCriteria(w http.ResponseWriter, r *http.Request, p *principal) error {
	d, err := s.readableDataset(r, p, r.PathValue("id"))
	if err != nil {
		return err
	}
	cs, err := s.st.ListCriteria(r.Context(), d.ID)
	if err != nil {
		return err
	}
	out := make([]criterionJSON, len(cs))
	for i, c := range cs {
		out[i] = toCriterionJSON(c)
	}
	writeJSON(w, http.StatusOK, map[string]any{"criteria": out})
	return nil
}

// criteriaError is a criteria definition that does not check: 422.
func criteriaError(err error) error {
	return errorf(http.StatusUnprocessableEntity, codeInvalid, "invalid criteria: %s", err.Error())
}

// readBodyJSON reads a body that must be well-formed JSON (400 naming the
// place otherwise).
func readBodyJSON(r *http.Request) ([]byte, error) {
	if err := requireJSON(r); err != nil {
		return nil, err
	}
	body, err := readBody(r)
	if err != nil {
		return nil, err
	}
	sc := jsonscan.NewStrict(body)
	if err := sc.Skip(); err != nil {
		return nil, jsonError(body, err)
	}
	if err := sc.End(); err != nil {
		return nil, jsonError(body, err)
	}
	return body, nil
}

// createCriterion saves a criterion (one entry of a criteria file) with a
// dataset, replacing the one of the same name.
func (s *Server) createCriterion(w http.ResponseWriter, r *http.Request, p *principal) error {
	d, err := s.writableDataset(r, p, r.PathValue("id"))
	if err != nil {
		return err
	}
	body, err := readBodyJSON(r)
	if err != nil {
		return err
	}
	if t := bytes.TrimSpace(body); len(t) == 0 || t[0] != '{' {
		return jsonError(body, jsonscan.New(body).Errorf("the request body must be an object: one criterion"))
	}
	cs, err := eval.ParseCriteria(append(append([]byte("["), body...), ']'))
	if err != nil {
		return criteriaError(err)
	}
	def, _ := json.Marshal(cs[0])
	c, err := s.st.SaveCriterion(r.Context(), store.Criterion{DatasetID: d.ID, Name: cs[0].Name, Definition: def})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, toCriterionJSON(c))
	return nil
}

func (s *Server) deleteCriterion(w http.ResponseWriter, r *http.Request, p *principal) error {
	d, err := s.writableDataset(r, p, r.PathValue("id"))
	if err != nil {
		return err
	}
	cid := r.PathValue("cid")
	cs, err := s.st.ListCriteria(r.Context(), d.ID)
	if err != nil {
		return err
	}
	for _, c := range cs {
		if c.ID == cid {
			if err := s.st.DeleteCriterion(r.Context(), cid); err != nil {
				return err
			}
			w.WriteHeader(http.StatusNoContent)
			return nil
		}
	}
	return notFound("criterion " + cid + " of dataset " + d.ID)
}

// ---- runs ----

type runJSON struct {
	ID        string          `json:"id"`
	DatasetID string          `json:"dataset_id"`
	Name      string          `json:"name"`
	State     string          `json:"state"`
	Error     string          `json:"error,omitempty"`
	Criteria  json.RawMessage `json:"criteria"`
	Progress  eval.Progress   `json:"progress"`
	Summary   []eval.Summary  `json:"summary,omitempty"`
	CreatedAt time.Time       `json:"created_at"`
	UpdatedAt time.Time       `json:"updated_at"`
}

// runReport is a run with its progress and per-criterion summary.
func (s *Server) runReport(ctx context.Context, run store.EvalRun) (runJSON, error) {
	rep, err := s.runs.Report(ctx, run)
	if err != nil {
		return runJSON{}, err
	}
	out := toRunJSON(run)
	out.Progress, out.Summary = rep.Progress, rep.Summary
	return out, nil
}

// ResumeRuns starts again every run left running (by a restart or a
// crash); traces they finished are not evaluated again.
func (s *Server) ResumeRuns(ctx context.Context) error { return s.runs.Resume(ctx) }

// StopRuns stops the runs in progress and waits for them; they stay
// "running" in the store, so the next ResumeRuns goes on with them.
func (s *Server) StopRuns() { s.runs.Stop() }

func toRunJSON(r store.EvalRun) runJSON {
	return runJSON{ID: r.ID, DatasetID: r.DatasetID, Name: r.Name, State: r.State, Error: r.Error, Criteria: r.Criteria,
		Progress: eval.Progress{Total: r.Total}, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
}

// createRun starts a run over a dataset with the body's criteria (a list,
// as in a criteria file) or, without them, the dataset's saved criteria.
func (s *Server) createRun(w http.ResponseWriter, r *http.Request, p *principal) error {
	d, err := s.writableDataset(r, p, r.PathValue("id"))
	if err != nil {
		return err
	}
	if err := s.settleDataset(r.Context(), d.ID); err != nil {
		return err
	}
	var name string
	var rawCriteria json.RawMessage
	if _, err := decodeBody(r, map[string]member{
		"name":     str(&name, "name"),
		"criteria": rawArray(&rawCriteria, "criteria (a list of criteria)"),
	}); err != nil {
		return err
	}
	run, err := s.runs.Create(r.Context(), d, name, rawCriteria)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, toRunJSON(run))
	return nil
}

func (s *Server) listRuns(w http.ResponseWriter, r *http.Request, p *principal) error {
	d, err := s.readableDataset(r, p, r.PathValue("id"))
	if err != nil {
		return err
	}
	runs, err := s.st.ListRuns(r.Context(), d.ID)
	if err != nil {
		return err
	}
	out := make([]runJSON, len(runs))
	for i, run := range runs {
		out[i] = toRunJSON(run)
	}
	writeJSON(w, http.StatusOK, map[string]any{"runs": out})
	return nil
}

// readableRun loads run {rid} of a dataset the caller may read.
func (s *Server) readableRun(r *http.Request, p *principal, write bool, key string) (store.EvalRun, error) {
	rid := r.PathValue(key)
	run, err := s.st.Run(r.Context(), rid)
	if errors.Is(err, store.ErrNotFound) {
		return run, notFound("run " + rid)
	}
	if err != nil {
		return run, err
	}
	if write {
		_, err = s.writableDataset(r, p, run.DatasetID)
	} else {
		_, err = s.readableDataset(r, p, run.DatasetID)
	}
	var ae *apiError
	if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
		return store.EvalRun{}, notFound("run " + rid)
	}
	return run, err
}

func (s *Server) getRun(w http.ResponseWriter, r *http.Request, p *principal) error {
	run, err := s.readableRun(r, p, false, "rid")
	if err != nil {
		return err
	}
	out, err := s.runReport(r.Context(), run)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) cancelRun(w http.ResponseWriter, r *http.Request, p *principal) error {
	run, err := s.readableRun(r, p, true, "rid")
	if err != nil {
		return err
	}
	if run, err = s.runs.Cancel(r.Context(), run); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toRunJSON(run))
	return nil
}

// runPoll is how often the progress of a run another server works on is
// read from the store.
const runPoll = 500 * time.Millisecond

// runEvents streams a run's progress as server-sent events: {"progress"}
// after each stored batch (of a run another server works on: as read every
// runPoll), then an event named "done" with the run and its summary.
func (s *Server) runEvents(w http.ResponseWriter, r *http.Request, p *principal) error {
	run, err := s.readableRun(r, p, false, "rid")
	if err != nil {
		return err
	}
	ctx := r.Context()
	send := eventStream(w)
	if watch, ok := s.runs.Watch(run.ID); ok {
		defer watch.Close()
		send("", map[string]any{"progress": watch.First})
	loop:
		for {
			select {
			case pr := <-watch.Updates:
				send("", map[string]any{"progress": pr})
			case <-watch.Done:
				break loop
			case <-ctx.Done():
				return nil
			}
		}
	} else {
		// Another server on the database works on it: its progress is
		// read from the store until it ends.
		var last eval.Progress
		for first := true; run.State == store.RunRunning; first = false {
			if rep, err := s.runs.Report(ctx, run); err == nil && (first || rep.Progress != last) {
				last = rep.Progress
				send("", map[string]any{"progress": last})
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(runPoll):
			}
			if run, err = s.st.Run(ctx, run.ID); err != nil {
				break
			}
		}
	}
	if run, err = s.st.Run(ctx, run.ID); err != nil {
		send("error", map[string]any{"error": checkFailure{Code: codeInternal, Message: "cannot read the run"}})
		return nil
	}
	out, err := s.runReport(ctx, run)
	if err != nil {
		send("error", map[string]any{"error": checkFailure{Code: codeInternal, Message: "cannot summarize the run"}})
		return nil
	}
	send("done", out)
	return nil
}

func (s *Server) compareRuns(w http.ResponseWriter, r *http.Request, p *principal) error {
	a, err := s.readableRun(r, p, false, "rid")
	if err != nil {
		return err
	}
	b, err := s.readableRun(r, p, false, "other")
	if err != nil {
		return err
	}
	changes, err := s.runs.CompareRuns(r.Context(), a, b)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"before": a.ID, "after": b.ID, "changes": changes})
	return nil
}

// evalStatus is each trace's status per criterion in the dataset's newest
// run that has one; the traces of a run in progress without one yet are
// "in_progress". Traces absent from the map are not evaluated.
func (s *Server) evalStatus(w http.ResponseWriter, r *http.Request, p *principal) error {
	d, err := s.readableDataset(r, p, r.PathValue("id"))
	if err != nil {
		return err
	}
	if err := s.settleDataset(r.Context(), d.ID); err != nil {
		return err
	}
	out, running, err := s.runs.DatasetStatus(r.Context(), d.ID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"traces": out, "running": running})
	return nil
}

// evalStore is what the criteria, score and run handlers ask of the store themselves (running evaluations is eval.Runs').
type evalStore interface {
	AddScores(ctx context.Context, scores []store.Score) ([]store.Score, error)
	DeleteCriterion(ctx context.Context, id string) error
	DeleteScore(ctx context.Context, id string) error
	ListCriteria(ctx context.Context, datasetID string) ([]store.Criterion, error)
	ListRuns(ctx context.Context, datasetID string) ([]store.EvalRun, error)
	ListScores(ctx context.Context, f store.ScoreFilter) ([]store.Score, error)
	Run(ctx context.Context, id string) (store.EvalRun, error)
	SaveCriterion(ctx context.Context, c store.Criterion) (store.Criterion, error)
	Score(ctx context.Context, id string) (store.Score, error)
}
