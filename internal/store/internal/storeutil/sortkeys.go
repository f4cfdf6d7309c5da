package storeutil

import (
	"encoding/base64"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/usage"
)

// Keys are the values a trace list sorts by, kept in columns of
// trace_summaries beside the digest (so that a sorted page is read from an
// index, not by decoding every digest of the dataset). A value the trace
// does not have is -1, below every real value: such traces come first
// ascending and last descending.
type Keys struct {
	DurationMs float64
	Tokens     int64
	// Cost is the recorded cost plus the tokens the sources did not
	// price, priced with the price table Lookout ships (usage.Default) at
	// write time: a server started with its own table shows costs priced
	// with it, but sorts with the shipped table's estimate, which a
	// change of table would otherwise force to rewrite every row.
	Cost float64
}

// KeysOf are the sort keys of a digest.
func KeysOf(d store.Digest) Keys {
	k := Keys{DurationMs: -1, Tokens: -1, Cost: -1}
	u := &d.Usage
	if dur, ok := u.Bounds.Duration(); ok {
		k.DurationMs = float64(dur) / float64(time.Millisecond)
	}
	switch {
	case u.Has&usage.HasTotal != 0:
		k.Tokens = u.Total
	case u.Has&(usage.HasInput|usage.HasOutput) != 0:
		k.Tokens = u.Input + u.Output
	}
	cost, has := u.Cost, u.Has&usage.HasCost != 0
	prices := usage.Default()
	// In the models' order, so that the sum is the same every time.
	for _, m := range slices.Sorted(maps.Keys(u.ByModel)) {
		mt := u.ByModel[m]
		if p, _, ok := prices.Lookup(m); ok {
			cost += (float64(mt.Input)*p.Input + float64(mt.Output)*p.Output) / 1e6
			has = true
		}
	}
	if has {
		k.Cost = cost
	}
	return k
}

// SortCursor is where a sorted page starts: after the trace with value
// Value and index Index; for a score sort, Unscored is true once the
// traces with a score are all listed (those with none follow by index).
type SortCursor struct {
	Sort     string // the sort and order it belongs to, "tokens desc"
	Value    float64
	Index    int64
	Unscored bool
}

// EncodeSortCursor is c as an opaque cursor.
func EncodeSortCursor(c SortCursor) string {
	u := "0"
	if c.Unscored {
		u = "1"
	}
	s := "s" + u + strconv.FormatFloat(c.Value, 'g', -1, 64) + " " + strconv.FormatInt(c.Index, 10) + " " + c.Sort
	return base64.RawURLEncoding.EncodeToString([]byte(s))
}

// DecodeSortCursor reads a cursor of sort (with its order, as in
// SortCursor.Sort); ok is false for "" (the first page). A cursor of
// another sort or order is invalid: it would not continue the list.
func DecodeSortCursor(c, sort string) (sc SortCursor, ok bool, err error) {
	if c == "" {
		return SortCursor{}, false, nil
	}
	bad := fmt.Errorf("bad page cursor %q for sort %q: %w", c, sort, store.ErrInvalid)
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || len(raw) < 2 || raw[0] != 's' || (raw[1] != '0' && raw[1] != '1') {
		return SortCursor{}, false, bad
	}
	parts := strings.SplitN(string(raw[2:]), " ", 3)
	if len(parts) != 3 || parts[2] != sort {
		return SortCursor{}, false, bad
	}
	sc = SortCursor{Sort: sort, Unscored: raw[1] == '1'}
	if sc.Value, err = strconv.ParseFloat(parts[0], 64); err != nil {
		return SortCursor{}, false, bad
	}
	if sc.Index, err = strconv.ParseInt(parts[1], 10, 64); err != nil {
		return SortCursor{}, false, bad
	}
	return sc, true, nil
}
