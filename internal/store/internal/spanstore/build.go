package spanstore

import (
	"bytes"
	"encoding/json"
	"errors"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/internal/storeutil"
	"github.com/lookout-dev/lookout/internal/trace"
)

// mergeSpans overlays add on the spans stored so far (a span id in add
// replaces the stored one; within add the last wins) and returns them in
// span id order, as SpanTraces.AddSpans hands them to build, with the spans
// of add to write (deduplicated).
func mergeSpans(stored map[string][]byte, add []store.StoredSpan) (all [][]byte, write []store.StoredSpan) {
	merged := make(map[string][]byte, len(stored)+len(add))
	for id, d := range stored {
		merged[id] = d
	}
	for _, sp := range add {
		merged[sp.SpanID] = sp.Data
	}
	write = dedupSpans(add)
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

// dedupSpans returns spans without those sent again later in the list (the
// last of an id wins), in the order of their last place.
func dedupSpans(spans []store.StoredSpan) []store.StoredSpan {
	last := make(map[string]int, len(spans))
	for i, sp := range spans {
		last[sp.SpanID] = i
	}
	if len(last) == len(spans) {
		return spans
	}
	out := make([]store.StoredSpan, 0, len(last))
	for i, sp := range spans {
		if last[sp.SpanID] == i {
			out = append(out, sp)
		}
	}
	return out
}

// spanBuild is one group of SpanTraces.AddSpans made ready to write.
type spanBuild struct {
	Row   storeutil.Row      // the rebuilt trace (Row.ID is new: used for a new trace only)
	Trace *trace.Trace       // what Row holds, for the search index's handover
	Write []store.StoredSpan // the group's spans to write, deduplicated
	Err   error              // the build failed: write nothing for the group
}

// buildSpanGroups merges each group's spans with those stored (stored[i],
// nil for a new trace), rebuilds its trace and encodes it, the groups on
// several cores: the rebuild is most of the work of a request.
func buildSpanGroups(groups []store.SpanGroup, stored []map[string][]byte,
	build func(otelTraceID string, spans [][]byte) (*trace.Trace, error), now time.Time) []spanBuild {
	out := make([]spanBuild, len(groups))
	one := func(i int) {
		all, write := mergeSpans(stored[i], groups[i].Spans)
		out[i].Write = write
		t, err := build(groups[i].OTelTraceID, all)
		if err != nil {
			out[i].Err = err
			return
		}
		t.Annotations = nil
		rows, err := storeutil.PrepareTraces([]store.NewTrace{{Trace: t}}, now)
		if err != nil {
			out[i].Err = err
			return
		}
		out[i].Row, out[i].Trace = rows[0], t
	}
	workers := min(runtime.GOMAXPROCS(0), len(groups))
	if workers < 2 {
		for i := range groups {
			one(i)
		}
		return out
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(groups); i = int(next.Add(1) - 1) {
				one(i)
			}
		})
	}
	wg.Wait()
	return out
}

// rebuildChanged rebuilds, in built, the groups whose stored trace or spans
// changed between the read the builds were made from (tids, stored) and the
// read in the writing transaction (nowTids, nowStored).
func rebuildChanged(groups []store.SpanGroup, built []spanBuild, tids []string, stored []map[string][]byte,
	nowTids []string, nowStored []map[string][]byte, build func(string, [][]byte) (*trace.Trace, error), now time.Time) {
	var idx []int
	for i := range groups {
		if tids[i] != nowTids[i] || !sameSpans(stored[i], nowStored[i]) {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return
	}
	sub := make([]store.SpanGroup, len(idx))
	subStored := make([]map[string][]byte, len(idx))
	for k, i := range idx {
		sub[k], subStored[k] = groups[i], nowStored[i]
	}
	for k, b := range buildSpanGroups(sub, subStored, build, now) {
		built[idx[k]] = b
	}
}

func sameSpans(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for id, d := range a {
		if e, ok := b[id]; !ok || !bytes.Equal(d, e) {
			return false
		}
	}
	return true
}

// PendingTrace is a trace marked pending (SpanTraces.AcceptSpans), read to
// be built.
type PendingTrace struct {
	TraceID     string
	OTelTraceID string
	Seq         int64             // its mark's sequence number when read
	Fresh       bool              // never built: it has no index rows
	Spans       map[string][]byte // all its stored spans
	Damaged     error             // a stored part does not unpack: not built
}

// buildPending builds pending traces from their stored spans, on several
// cores; a damaged one fails alone.
func buildPending(ps []PendingTrace, build func(otelTraceID string, spans [][]byte) (*trace.Trace, error), now time.Time) []spanBuild {
	out := make([]spanBuild, len(ps))
	var groups []store.SpanGroup
	var stored []map[string][]byte
	var at []int
	for i, p := range ps {
		if p.Damaged != nil {
			out[i].Err = p.Damaged
			continue
		}
		groups = append(groups, store.SpanGroup{OTelTraceID: p.OTelTraceID})
		stored = append(stored, p.Spans)
		at = append(at, i)
	}
	for k, b := range buildSpanGroups(groups, stored, build, now) {
		out[at[k]] = b
	}
	return out
}

// pendingRow is the row of a trace whose first spans were accepted and
// that is not built yet: no events, its metadata naming its OpenTelemetry
// trace id (as the built trace's does).
func pendingRow(otelTraceID string, now time.Time) (storeutil.Row, error) {
	meta, err := json.Marshal(map[string]string{"otel_trace_id": otelTraceID})
	if err != nil {
		return storeutil.Row{}, err
	}
	rows, err := storeutil.PrepareTraces([]store.NewTrace{{Trace: &trace.Trace{Metadata: meta}}}, now)
	if err != nil {
		return storeutil.Row{}, err
	}
	return rows[0], nil
}

// rebuildMoved reads again (readSpans) and rebuilds, in ps and built, the
// pending traces whose mark's sequence number is now another (seqs, read in
// the writing transaction): spans came for them since they were built.
func rebuildMoved(ps []PendingTrace, built []spanBuild, seqs map[string]int64, readSpans func(traceID string) (map[string][]byte, error),
	build func(otelTraceID string, spans [][]byte) (*trace.Trace, error), now time.Time) error {
	var again []PendingTrace
	var againAt []int
	for i, p := range ps {
		if seq, ok := seqs[p.TraceID]; ok && seq != p.Seq {
			p.Seq = seq
			var err error
			p.Damaged = nil // read again below
			if p.Spans, err = readSpans(p.TraceID); errors.Is(err, errDamaged) {
				p.Damaged = err
			} else if err != nil {
				return err
			}
			again, againAt = append(again, p), append(againAt, i)
		}
	}
	for k, b := range buildPending(again, build, now) {
		ps[againAt[k]], built[againAt[k]] = again[k], b
	}
	return nil
}
