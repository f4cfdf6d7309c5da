package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/lookout-dev/lookout/internal/eval"
	"github.com/lookout-dev/lookout/internal/jsonscan"
	"github.com/lookout-dev/lookout/internal/search"
	"github.com/lookout-dev/lookout/internal/store"
)

// Benchmarks (internal/eval, benchmark.go):
//
//	POST   /api/v1/benchmarks                  {"name", "dataset", "criteria", "key"?, "query"? | "trace_ids"?,
//	                                            "reference"?, "references"?, "description"?, "public"?} → 201 the next version
//	GET    /api/v1/benchmarks                  → {"benchmarks": [...]} the caller's and the public ones, newest first
//	GET    /api/v1/benchmarks/{id}             → the version with its criteria and tasks
//	DELETE /api/v1/benchmarks/{id}             → 204 (its results go too)
//	POST   /api/v1/benchmarks/{id}/runs        {"dataset"} → 201 the dataset's result; its metadata gets benchmark, benchmark_version, accuracy
//	                                           (Accept: text/event-stream: "progress" events, then "done" with the result)
//	GET    /api/v1/benchmarks/{id}/leaderboard ?items=true → {"benchmark", "entries": [...]} best first

type benchmarkJSON struct {
	ID              string          `json:"id"`
	Owner           string          `json:"owner"`
	Name            string          `json:"name"`
	Version         int             `json:"version"`
	Description     string          `json:"description"`
	Public          bool            `json:"public"`
	SourceDatasetID string          `json:"source_dataset_id,omitempty"`
	Key             string          `json:"key"`
	Criteria        json.RawMessage `json:"criteria"`
	Items           json.RawMessage `json:"items,omitempty"`
	ItemCount       int             `json:"item_count"`
	CreatedAt       time.Time       `json:"created_at"`
	// Warnings are said once, in the answer to the create.
	Warnings []string `json:"warnings,omitempty"`
}

func toBenchmarkJSON(b store.Benchmark) benchmarkJSON {
	return benchmarkJSON{b.ID, b.OwnerName, b.Name, b.Version, b.Description, b.Public, b.SourceDatasetID, b.Key,
		b.Criteria, b.Items, b.ItemCount, b.CreatedAt, nil}
}

type benchmarkResultJSON struct {
	BenchmarkID string          `json:"benchmark_id"`
	DatasetID   string          `json:"dataset_id"`
	Dataset     string          `json:"dataset"`
	Owner       string          `json:"owner"`
	Accuracy    float64         `json:"accuracy"`
	Summary     json.RawMessage `json:"summary"`
	Items       json.RawMessage `json:"items,omitempty"`
	CreatedAt   time.Time       `json:"created_at"`
}

func toResultJSON(r store.BenchmarkResult, items bool) benchmarkResultJSON {
	out := benchmarkResultJSON{r.BenchmarkID, r.DatasetID, r.DatasetName, r.OwnerName, r.Accuracy, r.Summary, nil, r.CreatedAt}
	if items {
		out.Items = r.Items
	}
	return out
}

// readableBenchmark finds a benchmark the caller may see: their own or a
// public one (another user's private one is not found, as for datasets).
func (s *Server) readableBenchmark(r *http.Request, p *principal, id string) (store.Benchmark, error) {
	b, err := s.st.Benchmark(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		return b, notFound("benchmark " + id)
	}
	if err != nil {
		return b, err
	}
	if b.Public || (!p.anonymous() && b.OwnerID == p.User.ID) {
		return b, nil
	}
	return store.Benchmark{}, notFound("benchmark " + id)
}

// rawArray reads a JSON array member as it is.
func rawArray(dst *json.RawMessage, what string) member {
	return func(js *jsonscan.Scanner) error {
		if err := js.Expect(jsonscan.Array, what); err != nil {
			return err
		}
		v, err := js.Raw()
		*dst = v
		return err
	}
}

// createBenchmark makes the next version of a benchmark from a dataset's
// traces: decode and check the request, check the caller may read the
// dataset, then select the tasks and store them (eval.Benchmarks).
func (s *Server) createBenchmark(w http.ResponseWriter, r *http.Request, p *principal) error {
	if err := s.requireUser(r, p); err != nil {
		return err
	}
	req, err := decodeBenchmarkRequest(r)
	if err != nil {
		return err
	}
	cs, err := eval.ParseCriteria(req.criteria)
	if err != nil {
		return criteriaError(err)
	}
	if err := s.benchmarks.CheckCriteria(cs); err != nil {
		return err
	}
	d, err := s.readableDataset(r, p, req.datasetID)
	if err != nil {
		return err
	}
	nb := eval.NewBenchmark{OwnerID: p.User.ID, Name: req.name, Description: req.description, Public: req.public,
		Dataset: d, Criteria: cs, ByID: req.byID, TraceIDs: req.traceIDs, Key: req.key, RefPath: req.refPath, Refs: req.refs}
	if req.query != "" {
		if nb.Query, err = search.Parse(req.query); err != nil {
			return err
		}
	}
	b, err := s.benchmarks.Create(r.Context(), nb)
	if err != nil {
		return err
	}
	out := toBenchmarkJSON(b)
	if b.Public && !d.Public {
		// Allowed, as the owner asked, but said: a public benchmark's tasks
		// are readable by anyone, though its dataset is not.
		out.Warnings = append(out.Warnings, fmt.Sprintf("benchmark %s is public but its dataset %q is private: anyone, signed in or not, can read its %d tasks' first messages and reference answers", b.Name, d.Name, b.ItemCount))
	}
	writeJSON(w, http.StatusCreated, out)
	return nil
}

// benchmarkRequest is the body of POST /api/v1/benchmarks.
type benchmarkRequest struct {
	name, description, datasetID, key, query, refPath string
	public                                            bool
	criteria                                          json.RawMessage
	byID                                              bool // "trace_ids" was given
	traceIDs                                          []string
	refs                                              map[string]json.RawMessage
}

// decodeBenchmarkRequest reads and checks the body of a new benchmark,
// all but its criteria's content.
func decodeBenchmarkRequest(r *http.Request) (benchmarkRequest, error) {
	req := benchmarkRequest{key: "task_id"}
	body, err := decodeBody(r, map[string]member{
		"name":        str(&req.name, "name"),
		"description": str(&req.description, "description"),
		"dataset":     str(&req.datasetID, "dataset (the id of the dataset the tasks come from)"),
		"key":         str(&req.key, "key (the metadata member naming each task)"),
		"query":       str(&req.query, "query (a search query)"),
		"reference":   str(&req.refPath, "reference (the metadata member holding each task's reference answer)"),
		"public":      boolean(&req.public, "public"),
		"criteria":    rawArray(&req.criteria, "criteria (a list of criteria)"),
		"trace_ids": func(js *jsonscan.Scanner) error {
			req.byID = true
			if err := js.Expect(jsonscan.Array, "trace_ids (a list of trace ids)"); err != nil {
				return err
			}
			return js.Array(func(int) error {
				id, err := js.String("a trace id")
				req.traceIDs = append(req.traceIDs, id)
				return err
			})
		},
		"references": func(js *jsonscan.Scanner) error {
			if err := js.Expect(jsonscan.Object, "references (task key → reference answer)"); err != nil {
				return err
			}
			req.refs = map[string]json.RawMessage{}
			return js.Object(func(k string) error {
				v, err := js.Raw()
				req.refs[k] = v
				return err
			})
		},
	})
	if err != nil {
		return req, err
	}
	if err := validName("benchmark", req.name); err != nil {
		return req, err
	}
	if req.datasetID == "" {
		return req, jsonError(body, jsonscan.New(body).Errorf(`the body needs "dataset": the id of the dataset the tasks come from`))
	}
	if req.criteria == nil {
		return req, jsonError(body, jsonscan.New(body).Errorf(`the body needs "criteria": a list of criteria`))
	}
	if req.query != "" && req.byID {
		return req, errorf(http.StatusUnprocessableEntity, codeInvalid, `give "query" or "trace_ids", not both`)
	}
	return req, nil
}

func (s *Server) listBenchmarks(w http.ResponseWriter, r *http.Request, p *principal) error {
	userID := ""
	if !p.anonymous() {
		userID = p.User.ID
	}
	bs, err := s.st.ListBenchmarks(r.Context(), userID)
	if err != nil {
		return err
	}
	out := make([]benchmarkJSON, len(bs))
	for i, b := range bs {
		out[i] = toBenchmarkJSON(b)
	}
	writeJSON(w, http.StatusOK, map[string]any{"benchmarks": out})
	return nil
}

func (s *Server) getBenchmark(w http.ResponseWriter, r *http.Request, p *principal) error {
	b, err := s.readableBenchmark(r, p, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toBenchmarkJSON(b))
	return nil
}

func (s *Server) deleteBenchmark(w http.ResponseWriter, r *http.Request, p *principal) error {
	if err := s.requireUser(r, p); err != nil {
		return err
	}
	b, err := s.readableBenchmark(r, p, r.PathValue("id"))
	if err != nil {
		return err
	}
	if b.OwnerID != p.User.ID {
		return errorf(http.StatusForbidden, codeForbidden, "benchmark %s belongs to %s", b.ID, b.OwnerName)
	}
	if err := s.st.DeleteBenchmark(r.Context(), b.ID); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// runBenchmark scores a dataset against a benchmark version, stores the
// result (replacing the dataset's earlier one) and writes the accuracy
// into the dataset's metadata, where the explorer's home page shows it.
// With "Accept: text/event-stream" the answer is 200 and a stream of
// "progress" events {done, total}, then "done" with the result (or
// "error"), as for uploads.
func (s *Server) runBenchmark(w http.ResponseWriter, r *http.Request, p *principal) error {
	b, err := s.readableBenchmark(r, p, r.PathValue("id"))
	if err != nil {
		return err
	}
	var datasetID string
	if _, err := decodeBody(r, map[string]member{"dataset": str(&datasetID, "dataset (the id of the dataset to score)")}); err != nil {
		return err
	}
	if datasetID == "" {
		return errorf(http.StatusUnprocessableEntity, codeInvalid, `the body needs "dataset": the id of the dataset to score`)
	}
	d, err := s.writableDataset(r, p, datasetID)
	if err != nil {
		return err
	}
	if !strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		res, err := s.benchmarks.Score(r.Context(), b, d, nil)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusCreated, toResultJSON(res, true))
		return nil
	}
	event := eventStream(w)
	last := time.Time{}
	res, err := s.benchmarks.Score(r.Context(), b, d, func(done, total int) {
		if done < total && time.Since(last) < 250*time.Millisecond {
			return
		}
		last = time.Now()
		event("progress", map[string]int{"done": done, "total": total})
	})
	if err != nil {
		ae := toAPIError(err)
		if ae.Status >= 500 {
			s.log.ErrorContext(r.Context(), "benchmark run failed", "benchmark", b.ID, "dataset", d.ID, "err", err)
		}
		event("error", map[string]any{"error": map[string]any{"code": ae.Code, "message": ae.Message, "details": ae.Details}})
		return nil
	}
	event("done", toResultJSON(res, true))
	return nil
}

func (s *Server) leaderboard(w http.ResponseWriter, r *http.Request, p *principal) error {
	b, err := s.readableBenchmark(r, p, r.PathValue("id"))
	if err != nil {
		return err
	}
	withItems := false
	if v := r.URL.Query().Get("items"); v != "" {
		if withItems, err = strconv.ParseBool(v); err != nil {
			return errorf(http.StatusBadRequest, codeBadRequest, "items=%q: want true or false", v)
		}
	}
	rs, err := s.st.BenchmarkResults(r.Context(), b.ID)
	if err != nil {
		return err
	}
	// Only the entries of datasets the caller may read.
	entries := []benchmarkResultJSON{}
	readable := map[string]bool{}
	for _, res := range rs {
		ok, seen := readable[res.DatasetID]
		if !seen {
			_, err := s.readableDataset(r, p, res.DatasetID)
			var ae *apiError
			if err != nil && !(errors.As(err, &ae) && ae.Status == http.StatusNotFound) {
				return err
			}
			ok = err == nil
			readable[res.DatasetID] = ok
		}
		if ok {
			entries = append(entries, toResultJSON(res, withItems))
		}
	}
	b.Items = nil
	writeJSON(w, http.StatusOK, map[string]any{"benchmark": toBenchmarkJSON(b), "entries": entries})
	return nil
}

// benchmarkStore is what the benchmark handlers ask of the store themselves (making and scoring them is eval.Benchmarks').
type benchmarkStore interface {
	Benchmark(ctx context.Context, id string) (store.Benchmark, error)
	BenchmarkResults(ctx context.Context, benchmarkID string) ([]store.BenchmarkResult, error)
	DeleteBenchmark(ctx context.Context, id string) error
	ListBenchmarks(ctx context.Context, userID string) ([]store.Benchmark, error)
}
