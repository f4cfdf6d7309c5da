package storeutil

import (
	"slices"
	"strings"

	"github.com/lookout-dev/lookout/internal/store"
)

// MergeSpans overlays add on the spans stored so far (a span id in add
// replaces the stored one; within add the last wins) and returns them in
// span id order, as SpanTraces.AddSpans hands them to build, with the spans
// of add to write (deduplicated).
func MergeSpans(stored map[string][]byte, add []store.StoredSpan) (all [][]byte, write []store.StoredSpan) {
	merged := make(map[string][]byte, len(stored)+len(add))
	for id, d := range stored {
		merged[id] = d
	}
	last := make(map[string]int, len(add))
	for i, sp := range add {
		merged[sp.SpanID] = sp.Data
		last[sp.SpanID] = i
	}
	for i, sp := range add {
		if last[sp.SpanID] == i {
			write = append(write, sp)
		}
	}
	ids := make([]string, 0, len(merged))
	for id := range merged {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, strings.Compare)
	all = make([][]byte, len(ids))
	for i, id := range ids {
		all[i] = merged[id]
	}
	return all, write
}
