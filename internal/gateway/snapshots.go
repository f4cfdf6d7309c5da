package gateway

import (
	"container/list"
	"encoding/binary"
	"encoding/json"
	"hash/maphash"
	"sync"

	"github.com/lookout-dev/lookout/internal/policy"
	"github.com/lookout-dev/lookout/internal/trace"
)

// Snapshots keep, per policy and parameters, the analyses of the events a
// conversation's checks saw, so that a call's check extends the last check
// of its conversation (policy.AnalyzeExtension) instead of analyzing the
// whole conversation again: a call adds a few events to hundreds.
//
// A snapshot is found by the exact events it was taken of: a hash of every
// field the policy can see, taken prefix by prefix, so that a check finds
// the longest prefix of its events that an earlier check analyzed, and a
// client that rewrites an earlier message (or sends it back as SDKs do,
// with a field more or less) meets no snapshot there and is analyzed from
// the last prefix it did not change. The hash is 128 bits under seeds
// chosen at start, which clients do not know. Memory is bounded by count
// and by bytes, the least recently used going first.
type snapshots struct {
	mu       sync.Mutex
	byKey    map[snapKey]*list.Element
	lru      list.List // of *snapEntry, most recent first
	bytes    int64
	maxCount int
	maxBytes int64
	hits     int64 // snapshots found, for tests
}

type snapKey struct {
	pol    *policy.Policy
	params string // the parameters' JSON
	events int
	sum    eventsSum
}

type eventsSum [2]uint64

type snapEntry struct {
	key  snapKey
	snap *policy.Snapshot
}

// Defaults: a long conversation's snapshot holds its violations and little
// else, so these keep thousands of conversations.
const (
	maxSnapshots     = 8192
	maxSnapshotBytes = 64 << 20
)

func newSnapshots(maxCount int, maxBytes int64) *snapshots {
	return &snapshots{byKey: map[snapKey]*list.Element{}, maxCount: maxCount, maxBytes: maxBytes}
}

// longest returns the snapshot of the longest prefix of the events whose
// sums are sums (sums[k] of events[:k+1]), or nil.
func (s *snapshots) longest(pol *policy.Policy, params string, sums []eventsSum) *policy.Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lru.Len() == 0 {
		return nil
	}
	for k := len(sums); k > 0; k-- {
		if el := s.byKey[snapKey{pol, params, k, sums[k-1]}]; el != nil {
			s.lru.MoveToFront(el)
			s.hits++
			return el.Value.(*snapEntry).snap
		}
	}
	return nil
}

// put keeps snap, taken of events whose last sum is sum.
func (s *snapshots) put(pol *policy.Policy, params string, sum eventsSum, snap *policy.Snapshot) {
	if snap == nil || snap.Events() == 0 || snap.Size() > s.maxBytes/4 {
		return
	}
	k := snapKey{pol, params, snap.Events(), sum}
	s.mu.Lock()
	defer s.mu.Unlock()
	if el := s.byKey[k]; el != nil {
		s.lru.MoveToFront(el)
		return
	}
	s.byKey[k] = s.lru.PushFront(&snapEntry{key: k, snap: snap})
	s.bytes += snap.Size()
	for s.lru.Len() > s.maxCount || s.bytes > s.maxBytes {
		el := s.lru.Back()
		e := el.Value.(*snapEntry)
		s.lru.Remove(el)
		delete(s.byKey, e.key)
		s.bytes -= e.snap.Size()
	}
}

// Seeds of the event sums, chosen at start.
var sumSeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

// prefixSums are the sums of events[:k+1] for each k, given those of a
// prefix of events (known, which may be nil): each sum hashes the one
// before it and the event.
func prefixSums(events []trace.Event, known []eventsSum) []eventsSum {
	out := make([]eventsSum, len(events))
	n := copy(out, known[:min(len(known), len(events))])
	var prev eventsSum
	if n > 0 {
		prev = out[n-1]
	}
	var buf []byte
	for i := n; i < len(events); i++ {
		buf = binary.LittleEndian.AppendUint64(buf[:0], prev[0])
		buf = binary.LittleEndian.AppendUint64(buf, prev[1])
		buf = appendEventSum(buf, &events[i])
		for j := range prev {
			prev[j] = maphash.Bytes(sumSeeds[j], buf)
		}
		out[i] = prev
	}
	return out
}

// appendEventSum appends every field of e, each length-prefixed so that no
// two events write alike.
func appendEventSum(b []byte, e *trace.Event) []byte {
	str := func(b []byte, s string) []byte {
		b = binary.AppendUvarint(b, uint64(len(s)))
		return append(b, s...)
	}
	raw := func(b []byte, r json.RawMessage) []byte {
		if r == nil { // absent differs from empty
			return append(b, 0xff)
		}
		b = binary.AppendUvarint(b, uint64(len(r)))
		return append(b, r...)
	}
	fields := func(b []byte, fs trace.Fields) []byte {
		b = binary.AppendUvarint(b, uint64(len(fs)))
		for _, f := range fs {
			b = str(b, f.Key)
			b = raw(b, f.Value)
		}
		return b
	}
	b = str(b, e.Role)
	b = append(b, byte(e.Content.Kind))
	b = str(b, e.Content.Text)
	b = binary.AppendUvarint(b, uint64(len(e.Content.Parts)))
	for _, p := range e.Content.Parts {
		b = str(b, p.Type)
		b = str(b, p.Text)
		b = fields(b, p.Extra)
	}
	b = binary.AppendUvarint(b, uint64(len(e.ToolCalls)))
	for _, c := range e.ToolCalls {
		b = str(b, c.ID)
		b = str(b, c.Type)
		b = str(b, c.Function.Name)
		b = raw(b, c.Function.Arguments)
		b = fields(b, c.Function.Extra)
		b = fields(b, c.Extra)
	}
	b = str(b, e.ToolCallID)
	b = str(b, e.SpanID)
	return fields(b, e.Extra)
}
