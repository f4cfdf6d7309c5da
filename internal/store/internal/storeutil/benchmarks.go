package storeutil

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/trace"
)

// CheckBenchmark checks what both backends need of a new benchmark version
// and returns its criteria and items compacted.
func CheckBenchmark(b store.Benchmark) (criteria, items []byte, err error) {
	if err := CheckName("benchmark", b.Name); err != nil {
		return nil, nil, err
	}
	if err := CheckTexts("benchmark", "description", b.Description, "key", b.Key); err != nil {
		return nil, nil, err
	}
	if b.Key == "" {
		return nil, nil, fmt.Errorf("benchmark %q: no task key: %w", b.Name, store.ErrInvalid)
	}
	if !ValidID(b.OwnerID) {
		return nil, nil, fmt.Errorf("benchmark owner %q: %w", b.OwnerID, store.ErrNotFound)
	}
	if b.SourceDatasetID != "" && !ValidID(b.SourceDatasetID) {
		return nil, nil, fmt.Errorf("benchmark source dataset %q: %w", b.SourceDatasetID, store.ErrNotFound)
	}
	criteria, err = compactArray(b.Criteria, "benchmark criteria")
	if err != nil {
		return nil, nil, err
	}
	items, err = compactArray(b.Items, "benchmark items")
	if err != nil {
		return nil, nil, err
	}
	if b.ItemCount < 0 {
		return nil, nil, fmt.Errorf("benchmark item count %d: %w", b.ItemCount, store.ErrInvalid)
	}
	return criteria, items, nil
}

// CheckBenchmarkResult checks a result and returns its summary and items
// compacted.
func CheckBenchmarkResult(r store.BenchmarkResult) (summary, items []byte, err error) {
	if !ValidID(r.BenchmarkID) {
		return nil, nil, fmt.Errorf("benchmark %q: %w", r.BenchmarkID, store.ErrNotFound)
	}
	if !ValidID(r.DatasetID) {
		return nil, nil, fmt.Errorf("dataset %q: %w", r.DatasetID, store.ErrNotFound)
	}
	if math.IsNaN(r.Accuracy) || r.Accuracy < 0 || r.Accuracy > 1 {
		return nil, nil, fmt.Errorf("benchmark accuracy %v: want a number from 0 to 1: %w", r.Accuracy, store.ErrInvalid)
	}
	summary, err = CompactObject(r.Summary, "benchmark result summary")
	if err != nil {
		return nil, nil, err
	}
	items, err = compactArray(r.Items, "benchmark result items")
	if err != nil {
		return nil, nil, err
	}
	return summary, items, nil
}

// compactArray checks that raw is a JSON array and compacts it.
func compactArray(raw json.RawMessage, what string) ([]byte, error) {
	var probe []json.RawMessage
	if err := json.Unmarshal(raw, &probe); err != nil || probe == nil {
		return nil, fmt.Errorf("%s must be a JSON array: %w", what, store.ErrInvalid)
	}
	return trace.Compact(FixUTF8(raw)), nil
}
