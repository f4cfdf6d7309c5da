package store

import (
	"fmt"
	"strings"
)

// Sort keys of a trace list (store.Page.Sort).
const (
	SortTime       = "time"
	SortDuration   = "duration"
	SortTokens     = "tokens"
	SortCost       = "cost"
	SortViolations = "violations"
	SortScore      = "score" // "score:<criterion>"
)

// ParseSort checks a sort key: "" (time), one of the keys above, or
// "score:<criterion>"; it returns the key and the criterion.
func ParseSort(s string) (key, criterion string, err error) {
	switch s {
	case "", SortTime:
		return SortTime, "", nil
	case SortDuration, SortTokens, SortCost, SortViolations:
		return s, "", nil
	}
	if c, ok := strings.CutPrefix(s, SortScore+":"); ok && c != "" {
		return SortScore, c, nil
	}
	return "", "", fmt.Errorf("sort by %q: sort by time, duration, tokens, cost, violations or score:<criterion>: %w", s, ErrInvalid)
}
