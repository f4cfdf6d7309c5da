package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
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
}

func toBenchmarkJSON(b store.Benchmark) benchmarkJSON {
	return benchmarkJSON{b.ID, b.OwnerName, b.Name, b.Version, b.Description, b.Public, b.SourceDatasetID, b.Key,
		b.Criteria, b.Items, b.ItemCount, b.CreatedAt}
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

func (s *Server) createBenchmark(w http.ResponseWriter, r *http.Request, p *principal) error {
	if err := s.requireUser(r, p); err != nil {
		return err
	}
	var (
		name, description, datasetID, key, query, refPath string
		public                                            bool
		rawCriteria                                       json.RawMessage
		traceIDs                                          []string
		haveIDs                                           bool
		refs                                              map[string]json.RawMessage
	)
	key = "task_id"
	body, err := decodeBody(r, map[string]member{
		"name":        str(&name, "name"),
		"description": str(&description, "description"),
		"dataset":     str(&datasetID, "dataset (the id of the dataset the tasks come from)"),
		"key":         str(&key, "key (the metadata member naming each task)"),
		"query":       str(&query, "query (a search query)"),
		"reference":   str(&refPath, "reference (the metadata member holding each task's reference answer)"),
		"public":      boolean(&public, "public"),
		"criteria":    rawArray(&rawCriteria, "criteria (a list of criteria)"),
		"trace_ids": func(js *jsonscan.Scanner) error {
			haveIDs = true
			if err := js.Expect(jsonscan.Array, "trace_ids (a list of trace ids)"); err != nil {
				return err
			}
			return js.Array(func(int) error {
				id, err := js.String("a trace id")
				traceIDs = append(traceIDs, id)
				return err
			})
		},
		"references": func(js *jsonscan.Scanner) error {
			if err := js.Expect(jsonscan.Object, "references (task key → reference answer)"); err != nil {
				return err
			}
			refs = map[string]json.RawMessage{}
			return js.Object(func(k string) error {
				v, err := js.Raw()
				refs[k] = v
				return err
			})
		},
	})
	if err != nil {
		return err
	}
	if err := validName("benchmark", name); err != nil {
		return err
	}
	if datasetID == "" {
		return jsonError(body, jsonscan.New(body).Errorf(`the body needs "dataset": the id of the dataset the tasks come from`))
	}
	if rawCriteria == nil {
		return jsonError(body, jsonscan.New(body).Errorf(`the body needs "criteria": a list of criteria`))
	}
	if query != "" && haveIDs {
		return errorf(http.StatusUnprocessableEntity, codeInvalid, `give "query" or "trace_ids", not both`)
	}
	cs, err := eval.ParseCriteria(rawCriteria)
	if err != nil {
		return criteriaError(err)
	}
	if err := eval.CheckBenchmarkCriteria(cs); err != nil {
		return criteriaError(err)
	}
	if _, err := eval.CompileAll(cs, s.llm); err != nil {
		return criteriaError(err)
	}
	d, err := s.readableDataset(r, p, datasetID)
	if err != nil {
		return err
	}
	var ids []string
	switch {
	case haveIDs:
		ids = traceIDs
	case query != "":
		q, err := search.Parse(query)
		if err != nil {
			return err
		}
		if ids, err = s.searchIDs(r.Context(), d.ID, q); err != nil {
			return err
		}
	default:
		if ids, err = s.datasetTraceIDs(r.Context(), d.ID); err != nil {
			return err
		}
	}
	sel, err := eval.NewItemSelector(key, refPath, refs)
	if err != nil {
		return errorf(http.StatusUnprocessableEntity, codeInvalid, "%s", err.Error())
	}
	// A hand-picked id that is missing and one of another dataset get the
	// same answer, so that ids of other users' traces cannot be probed.
	notInDataset := func(id string) error {
		return errorf(http.StatusUnprocessableEntity, codeInvalid, "trace %s is not in dataset %s", id, d.Name)
	}
	err = s.loadTraces(r.Context(), ids, func(st store.StoredTrace) error {
		if st.DatasetID != d.ID {
			return notInDataset(st.ID)
		}
		if err := sel.Add(eval.SourceTrace{ID: st.ID, Index: st.Index, Trace: st.Trace}); err != nil {
			return errorf(http.StatusUnprocessableEntity, codeInvalid, "%s", err.Error())
		}
		return nil
	}, notInDataset)
	if err != nil {
		return err
	}
	items, err := sel.Items()
	if err != nil {
		return errorf(http.StatusUnprocessableEntity, codeInvalid, "%s", err.Error())
	}
	frozenCriteria, _ := json.Marshal(cs)
	frozenItems, _ := json.Marshal(items)
	b, err := s.st.CreateBenchmark(r.Context(), store.Benchmark{OwnerID: p.User.ID, Name: name, Description: description,
		Public: public, SourceDatasetID: d.ID, Key: key, Criteria: frozenCriteria, Items: frozenItems, ItemCount: len(items)})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, toBenchmarkJSON(b))
	return nil
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
		res, err := s.scoreDataset(r.Context(), b, d, nil)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusCreated, toResultJSON(res, true))
		return nil
	}
	event := eventStream(w)
	last := time.Time{}
	res, err := s.scoreDataset(r.Context(), b, d, func(done, total int) {
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

// scoreDataset grades every trace of d against b and stores the result;
// progress, when not nil, hears of every trace read.
func (s *Server) scoreDataset(ctx context.Context, b store.Benchmark, d store.Dataset, progress func(done, total int)) (store.BenchmarkResult, error) {
	var cs []eval.Criterion
	var items []eval.Item
	if err := json.Unmarshal(b.Criteria, &cs); err != nil {
		return store.BenchmarkResult{}, fmt.Errorf("benchmark %s: criteria: %w", b.ID, err)
	}
	if err := json.Unmarshal(b.Items, &items); err != nil {
		return store.BenchmarkResult{}, fmt.Errorf("benchmark %s: items: %w", b.ID, err)
	}
	sc, err := eval.NewScorer(cs, items, b.Key, s.llm)
	if err != nil {
		return store.BenchmarkResult{}, criteriaError(err)
	}
	sc.SetDetectorModel(s.detectorModel)
	ids, err := s.datasetTraceIDs(ctx, d.ID)
	if err != nil {
		return store.BenchmarkResult{}, err
	}
	done := 0
	count := func() {
		done++
		if progress != nil {
			progress(done, len(ids))
		}
	}
	err = s.loadTraces(ctx, ids, func(st store.StoredTrace) error {
		defer count()
		return sc.Add(ctx, st.ID, st.Trace)
	}, func(string) error {
		count() // deleted while the run read the others
		return nil
	})
	if err != nil {
		return store.BenchmarkResult{}, err
	}
	sum, per := sc.Result()
	summary, _ := json.Marshal(sum)
	perJSON, _ := json.Marshal(per)
	res, err := s.st.AddBenchmarkResult(ctx, store.BenchmarkResult{BenchmarkID: b.ID, DatasetID: d.ID,
		Accuracy: sum.Accuracy, Summary: summary, Items: perJSON})
	if err != nil {
		return store.BenchmarkResult{}, err
	}
	meta, _ := json.Marshal(map[string]any{"benchmark": b.Name, "benchmark_version": b.Version, "accuracy": sum.Accuracy})
	if _, err := s.st.SetDatasetMetadata(ctx, d.ID, meta, false); err != nil {
		return store.BenchmarkResult{}, fmt.Errorf("benchmark result stored, but the dataset's metadata was not updated: %w", err)
	}
	return res, nil
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

// datasetTraceIDs lists a dataset's trace ids in index order.
func (s *Server) datasetTraceIDs(ctx context.Context, datasetID string) ([]string, error) {
	if err := s.settleDataset(ctx, datasetID); err != nil {
		return nil, err
	}
	var ids []string
	for cursor := ""; ; {
		page, next, err := s.st.ListTraces(ctx, datasetID, store.Page{Cursor: cursor, Limit: 1000})
		if err != nil {
			return nil, err
		}
		for _, t := range page {
			ids = append(ids, t.ID)
		}
		if next == "" {
			return ids, nil
		}
		cursor = next
	}
}

// searchIDs lists the ids of the traces a query matches, in index order.
func (s *Server) searchIDs(ctx context.Context, datasetID string, q *search.Query) ([]string, error) {
	if err := s.settleDataset(ctx, datasetID); err != nil {
		return nil, err
	}
	var ids []string
	for cursor := ""; ; {
		res, err := s.st.SearchTraces(ctx, datasetID, q, store.SearchOptions{Page: store.Page{Cursor: cursor, Limit: maxPage}, CountCap: 1})
		if err != nil {
			return nil, err
		}
		for _, t := range res.Traces {
			ids = append(ids, t.ID)
		}
		if res.Next == "" {
			return ids, nil
		}
		cursor = res.Next
	}
}

// loadTraces reads traces by id, several at once, and hands them to fn in
// the order of ids; for an id that names no trace it calls missing, and
// stops at the first error of either.
func (s *Server) loadTraces(ctx context.Context, ids []string, fn func(store.StoredTrace) error, missing func(id string) error) error {
	const window, workers = 256, 4
	got := make([]store.StoredTrace, window)
	errs := make([]error, window)
	for start := 0; start < len(ids); start += window {
		chunk := ids[start:min(start+window, len(ids))]
		var wg sync.WaitGroup
		next := make(chan int)
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range next {
					got[i], errs[i] = s.st.Trace(ctx, chunk[i])
				}
			}()
		}
		for i := range chunk {
			next <- i
		}
		close(next)
		wg.Wait()
		for i := range chunk {
			if errors.Is(errs[i], store.ErrNotFound) {
				if err := missing(chunk[i]); err != nil {
					return err
				}
				continue
			}
			if errs[i] != nil {
				return errs[i]
			}
			if err := fn(got[i]); err != nil {
				return err
			}
			got[i] = store.StoredTrace{} // let the collector have it
		}
	}
	return nil
}
