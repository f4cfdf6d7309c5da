package storeutil

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/trace"
	"github.com/lookout-dev/lookout/internal/usage"
)

// A trace's digest (store.Digest) is kept as JSON in its row's summary
// column, written with the trace and merged by appends (MergeDigest): a
// list reads it instead of the content. A NULL column is a trace written
// before the column existed; its digest is computed when a list first
// shows it and stored then (see sqlstore.FillDigests).

// usageReaders are reused: a reader keeps its buffers and is not safe for
// concurrent use (PrepareTraces encodes on several cores).
var usageReaders = sync.Pool{New: func() any { return usage.NewReader(nil) }}

// DigestOf computes what a list shows of t.
func DigestOf(t *trace.Trace) store.Digest {
	var d store.Digest
	user := false
	for i := range t.Events {
		e := &t.Events[i]
		if e.Role == "user" && !user {
			user, d.FirstUser = true, CutUTF16(e.Content.String(), store.MaxFirstUser)
		}
		d.ToolCalls += len(e.ToolCalls)
	}
	d.Usage = usageOf(t)
	return d
}

// firstUserSeen reports whether events hold a user event: the first user
// event's text is the digest's even when it is empty.
func firstUserSeen(events []trace.Event) bool {
	for i := range events {
		if events[i].Role == "user" {
			return true
		}
	}
	return false
}

// usageOf is t's usage with no price table: the costs recorded, and the
// tokens of the spans with none by model (priced when read).
func usageOf(t *trace.Trace) store.Usage {
	var u store.Usage
	u.Bounds = usage.BoundsOf(t)
	if len(t.Spans) == 0 {
		return u
	}
	r := usageReaders.Get().(*usage.Reader)
	defer usageReaders.Put(r)
	tot := r.Totals(t, func(_ int, s *usage.Span) {
		if s.Has&(usage.Aggregate|usage.HasCost) != 0 || s.Has&(usage.HasInput|usage.HasOutput) == 0 || s.Model == "" {
			return
		}
		if u.ByModel == nil {
			u.ByModel = map[string]store.ModelTokens{}
		}
		m := u.ByModel[s.Model]
		m.Input, m.Output, m.Spans = m.Input+s.Input, m.Output+s.Output, m.Spans+1
		u.ByModel[s.Model] = m
	})
	u.Input, u.Output, u.Total, u.Cost, u.Unpriced = tot.Input, tot.Output, tot.Total, tot.Cost, tot.Unpriced
	u.Has = tot.Has & (usage.HasInput | usage.HasOutput | usage.HasTotal | usage.HasCost)
	return u
}

// MergeDigest is the digest of a trace whose events and spans are those of
// a (the trace) followed by those of b (an append). Usage adds up part by
// part: a span appended whose tokens repeat those of spans stored before
// it is not recognised as their sum (usage.Aggregate), as it is when the
// whole trace is read.
func MergeDigest(a, b store.Digest, aHasUser bool) store.Digest {
	if !aHasUser {
		a.FirstUser = b.FirstUser
	}
	a.ToolCalls += b.ToolCalls
	u, v := &a.Usage, b.Usage
	u.Input, u.Output, u.Total, u.Cost = u.Input+v.Input, u.Output+v.Output, u.Total+v.Total, u.Cost+v.Cost
	u.Has |= v.Has
	u.Unpriced += v.Unpriced
	for m, t := range v.ByModel {
		if u.ByModel == nil {
			u.ByModel = map[string]store.ModelTokens{}
		}
		x := u.ByModel[m]
		x.Input, x.Output, x.Spans = x.Input+t.Input, x.Output+t.Output, x.Spans+t.Spans
		u.ByModel[m] = x
	}
	u.Bounds = u.Bounds.Merge(v.Bounds)
	return a
}

// HasUser reports whether events hold an event with role "user".
func HasUser(events []trace.Event) bool { return firstUserSeen(events) }

// CutUTF16 cuts s to at most n UTF-16 code units (the explorer's string
// length), not splitting a character.
func CutUTF16(s string, n int) string {
	units := 0
	for i, r := range s {
		w := 1
		if r >= 0x10000 {
			w = 2
		}
		if units+w > n {
			return s[:i]
		}
		units += w
	}
	return s
}

// digestJSON is the stored form of a digest. HasUser records whether the
// trace has a user event (its text may be empty), which an append needs
// to know.
type digestJSON struct {
	FirstUser  string              `json:"first_user,omitempty"`
	HasUser    bool                `json:"has_user,omitempty"`
	ToolCalls  int                 `json:"tool_calls,omitempty"`
	Input      int64               `json:"input_tokens,omitempty"`
	Output     int64               `json:"output_tokens,omitempty"`
	Total      int64               `json:"total_tokens,omitempty"`
	Has        uint8               `json:"has,omitempty"`
	Cost       float64             `json:"cost,omitempty"`
	Unpriced   int                 `json:"unpriced,omitempty"`
	ByModel    map[string][3]int64 `json:"by_model,omitempty"` // model: [in, out, spans]
	SpanFirst  int64               `json:"span_first,omitempty"`
	SpanLast   int64               `json:"span_last,omitempty"`
	EventFirst int64               `json:"event_first,omitempty"`
	EventLast  int64               `json:"event_last,omitempty"`
}

// StoredDigest is a digest and whether its trace has a user event, as kept.
type StoredDigest struct {
	store.Digest
	HasUser bool
}

// EncodeDigest is the stored form of a digest.
func EncodeDigest(d StoredDigest) []byte {
	u := &d.Usage
	j := digestJSON{FirstUser: d.FirstUser, HasUser: d.HasUser, ToolCalls: d.ToolCalls, Input: u.Input, Output: u.Output, Total: u.Total,
		Has: u.Has, Cost: u.Cost, Unpriced: u.Unpriced,
		SpanFirst: micros(u.Bounds.SpanFirst), SpanLast: micros(u.Bounds.SpanLast), EventFirst: micros(u.Bounds.EventFirst), EventLast: micros(u.Bounds.EventLast)}
	if len(u.ByModel) > 0 {
		j.ByModel = make(map[string][3]int64, len(u.ByModel))
		for m, t := range u.ByModel {
			j.ByModel[m] = [3]int64{t.Input, t.Output, int64(t.Spans)}
		}
	}
	b, err := json.Marshal(&j)
	if err != nil {
		panic(err) // strings, numbers and maps of them always marshal
	}
	return b
}

// DecodeDigest reads a stored digest.
func DecodeDigest(b []byte) (StoredDigest, error) {
	var j digestJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return StoredDigest{}, fmt.Errorf("stored trace summary: %w", err)
	}
	d := StoredDigest{HasUser: j.HasUser}
	d.FirstUser, d.ToolCalls = j.FirstUser, j.ToolCalls
	u := &d.Usage
	u.Input, u.Output, u.Total, u.Has, u.Cost, u.Unpriced = j.Input, j.Output, j.Total, j.Has, j.Cost, j.Unpriced
	u.Bounds = usage.Bounds{SpanFirst: fromMicros(j.SpanFirst), SpanLast: fromMicros(j.SpanLast), EventFirst: fromMicros(j.EventFirst), EventLast: fromMicros(j.EventLast)}
	if len(j.ByModel) > 0 {
		u.ByModel = make(map[string]store.ModelTokens, len(j.ByModel))
		for m, t := range j.ByModel {
			u.ByModel[m] = store.ModelTokens{Input: t[0], Output: t[1], Spans: int(t[2])}
		}
	}
	return d, nil
}

// StoredDigestOf is the digest of t as EncodeDigest takes it.
func StoredDigestOf(t *trace.Trace) StoredDigest {
	return StoredDigest{Digest: DigestOf(t), HasUser: HasUser(t.Events)}
}

// AppendDigest is the stored digest of a trace (stored, its stored digest)
// with events and spans appended.
func AppendDigest(stored []byte, events []trace.Event, spans []trace.Span) ([]byte, error) {
	d, err := DecodeDigest(stored)
	if err != nil {
		return nil, err
	}
	part := StoredDigestOf(&trace.Trace{Events: events, Spans: spans})
	d.Digest = MergeDigest(d.Digest, part.Digest, d.HasUser)
	d.HasUser = d.HasUser || part.HasUser
	return EncodeDigest(d), nil
}

// micros is t in microseconds since 1970, 0 for the zero time.
func micros(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

func fromMicros(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.UnixMicro(n).UTC()
}
