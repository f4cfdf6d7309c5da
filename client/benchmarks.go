package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Benchmark is one version of a named benchmark.
type Benchmark struct {
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
	Warnings        []string        `json:"warnings,omitempty"` // from a create only
}

// NewBenchmark is what CreateBenchmark sends: the tasks come from a dataset,
// all its traces, those a search query matches, or hand-picked ones.
type NewBenchmark struct {
	Name        string                     `json:"name"`
	Description string                     `json:"description,omitempty"`
	Public      bool                       `json:"public,omitempty"`
	DatasetID   string                     `json:"dataset"`
	Key         string                     `json:"key,omitempty"`       // default task_id
	Query       string                     `json:"query,omitempty"`     // a search query
	TraceIDs    []string                   `json:"trace_ids,omitempty"` // hand-picked
	Reference   string                     `json:"reference,omitempty"` // metadata path of each task's reference
	References  map[string]json.RawMessage `json:"references,omitempty"`
	Criteria    json.RawMessage            `json:"criteria"`
}

// BenchmarkCriterion is a result's figures for one criterion.
type BenchmarkCriterion = CriterionSummary

// BenchmarkSummary is the figures of a result.
type BenchmarkSummary struct {
	Tasks    int                  `json:"tasks"`
	Covered  int                  `json:"covered"`
	Missing  int                  `json:"missing"`
	Traces   int                  `json:"traces"`
	Extra    int                  `json:"extra"`
	Passed   int                  `json:"passed"`
	Accuracy float64              `json:"accuracy"`
	Criteria []BenchmarkCriterion `json:"criteria"`
}

// BenchmarkResult is one dataset's result against a benchmark version.
type BenchmarkResult struct {
	BenchmarkID string           `json:"benchmark_id"`
	DatasetID   string           `json:"dataset_id"`
	Dataset     string           `json:"dataset"`
	Owner       string           `json:"owner"`
	Accuracy    float64          `json:"accuracy"`
	Summary     BenchmarkSummary `json:"summary"`
	Items       json.RawMessage  `json:"items,omitempty"`
	CreatedAt   time.Time        `json:"created_at"`
}

// CreateBenchmark stores the next version of a benchmark.
func (c *Client) CreateBenchmark(ctx context.Context, b NewBenchmark) (Benchmark, error) {
	var out Benchmark
	err := c.doJSON(ctx, http.MethodPost, "/api/v1/benchmarks", nil, b, &out)
	return out, err
}

// Benchmarks lists the caller's benchmarks and the public ones, newest first.
func (c *Client) Benchmarks(ctx context.Context) ([]Benchmark, error) {
	var out struct {
		Benchmarks []Benchmark `json:"benchmarks"`
	}
	err := c.doJSON(ctx, http.MethodGet, "/api/v1/benchmarks", nil, nil, &out)
	return out.Benchmarks, err
}

// FindBenchmark finds a benchmark by "[owner/]name[@version]": the newest
// version unless one is named, the caller's own before public ones of the
// same name.
func (c *Client) FindBenchmark(ctx context.Context, ref string) (Benchmark, error) {
	name, owner, version := ref, "", 0
	if i := strings.LastIndex(name, "@"); i >= 0 {
		v, err := strconv.Atoi(name[i+1:])
		if err != nil || v < 1 {
			return Benchmark{}, fmt.Errorf("benchmark %q: the version after @ must be a whole number from 1", ref)
		}
		name, version = name[:i], v
	}
	if i := strings.Index(name, "/"); i >= 0 {
		owner, name = name[:i], name[i+1:]
	}
	bs, err := c.Benchmarks(ctx)
	if err != nil {
		return Benchmark{}, err
	}
	me, _ := c.Me(ctx)
	var best *Benchmark
	better := func(b *Benchmark) bool {
		if best == nil {
			return true
		}
		mine, bestMine := me.User != nil && b.Owner == me.User.Name, me.User != nil && best.Owner == me.User.Name
		if mine != bestMine {
			return mine
		}
		return b.Version > best.Version
	}
	for i := range bs {
		b := &bs[i]
		if b.Name != name || (owner != "" && b.Owner != owner) || (version != 0 && b.Version != version) {
			continue
		}
		if better(b) {
			best = b
		}
	}
	if best == nil {
		return Benchmark{}, &Error{Status: http.StatusNotFound, Code: "not_found", Message: fmt.Sprintf("no benchmark %q", ref)}
	}
	return c.Benchmark(ctx, best.ID)
}

// Benchmark gets one version with its tasks.
func (c *Client) Benchmark(ctx context.Context, id string) (Benchmark, error) {
	var out Benchmark
	err := c.doJSON(ctx, http.MethodGet, "/api/v1/benchmarks/"+url.PathEscape(id), nil, nil, &out)
	return out, err
}

// DeleteBenchmark deletes one version and its results.
func (c *Client) DeleteBenchmark(ctx context.Context, id string) error {
	return c.doJSON(ctx, http.MethodDelete, "/api/v1/benchmarks/"+url.PathEscape(id), nil, nil, nil)
}

// RunBenchmark scores a dataset against a benchmark version; the dataset's
// metadata gets the benchmark's name and version and the accuracy.
func (c *Client) RunBenchmark(ctx context.Context, benchmarkID, datasetID string) (BenchmarkResult, error) {
	var out BenchmarkResult
	err := c.doJSON(ctx, http.MethodPost, "/api/v1/benchmarks/"+url.PathEscape(benchmarkID)+"/runs", nil,
		map[string]string{"dataset": datasetID}, &out)
	return out, err
}

// Leaderboard lists a benchmark version's results, best first.
func (c *Client) Leaderboard(ctx context.Context, benchmarkID string) ([]BenchmarkResult, error) {
	var out struct {
		Entries []BenchmarkResult `json:"entries"`
	}
	err := c.doJSON(ctx, http.MethodGet, "/api/v1/benchmarks/"+url.PathEscape(benchmarkID)+"/leaderboard", nil, nil, &out)
	return out.Entries, err
}
