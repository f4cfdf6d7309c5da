package detectors

import (
	"fmt"
)

// DefaultFuzzyThreshold is fuzzy_contains' default query_similarity_threshold.
const DefaultFuzzyThreshold = 0.8

// MaxFuzzyErrors caps the number of edits fuzzy matching allows.
const MaxFuzzyErrors = 10

// FuzzyErrors is the number of edits a query of n code points may have at
// the given similarity threshold: int(n * (1 - threshold)), at most 10, as in
// Invariant's fuzzy_contains.
func FuzzyErrors(n int, threshold float64) int {
	k := int(float64(n) * (1 - threshold))
	if k > MaxFuzzyErrors {
		k = MaxFuzzyErrors
	}
	if k < 0 {
		k = 0
	}
	return k
}

// FuzzyContains reports whether text contains a substring within
// FuzzyErrors(len(query), threshold) edits (insertions, deletions,
// substitutions; case-sensitive) of query: Invariant's
// fuzzy_contains(text, query, query_similarity_threshold=threshold,
// use_semantic=False). threshold must be in [0, 1].
//
// Invariant compiles the query as a regular expression with the regex
// module's fuzzy syntax; Lookout matches it as literal text, which is the
// same for queries without regular-expression metacharacters.
func FuzzyContains(text, query string, threshold float64) (bool, error) {
	_, ok, err := FuzzyFind(text, query, threshold)
	return ok, err
}

// FuzzyFind is FuzzyContains that also returns the matched span (Kind
// "FUZZY_MATCH"): the leftmost starting match, ending where the fewest edits
// are needed (the shortest such end). The span can differ from the one the
// regex module reports, which depends on its backtracking order.
func FuzzyFind(text, query string, threshold float64) (Match, bool, error) {
	if !(threshold >= 0 && threshold <= 1) {
		return Match{}, false, fmt.Errorf("fuzzy threshold %v must be between 0 and 1", threshold)
	}
	t := []rune(text)
	q := []rune(query)
	k := FuzzyErrors(len(q), threshold)
	if len(q) == 0 {
		return Match{Kind: "FUZZY_MATCH", Score: 1}, true, nil
	}
	// Leftmost start: scan the reversed text for the last position where a
	// reversed match ends.
	rt := reverseRunes(t)
	rq := reverseRunes(q)
	lastEnd := -1
	sellers(rt, rq, func(end, dist int) {
		if dist <= k {
			lastEnd = end
		}
	})
	if lastEnd < 0 {
		return Match{}, false, nil
	}
	start := len(t) - lastEnd
	// Best end for that start: anchored edit distance.
	bestEnd, bestDist := -1, k+1
	m := len(q)
	prev := make([]int, m+1)
	cur := make([]int, m+1)
	for j := 0; j <= m; j++ {
		prev[j] = j
	}
	if prev[m] <= k {
		bestEnd, bestDist = start, prev[m]
	}
	for i := start; i < len(t); i++ {
		cur[0] = i - start + 1
		minRow := cur[0]
		for j := 1; j <= m; j++ {
			cost := 1
			if t[i] == q[j-1] {
				cost = 0
			}
			v := prev[j-1] + cost
			if prev[j]+1 < v {
				v = prev[j] + 1
			}
			if cur[j-1]+1 < v {
				v = cur[j-1] + 1
			}
			cur[j] = v
			if v < minRow {
				minRow = v
			}
		}
		if cur[m] < bestDist {
			bestEnd, bestDist = i+1, cur[m]
		}
		prev, cur = cur, prev
		if minRow > k {
			break
		}
	}
	if bestEnd < 0 {
		return Match{}, false, nil
	}
	return Match{Kind: "FUZZY_MATCH", Start: start, End: bestEnd, Text: string(t[start:bestEnd]), Score: 1}, true, nil
}

// sellers runs the semi-global edit distance of q against every substring
// of t ending at each position, calling f(end, distance) for ends 0..len(t).
func sellers(t, q []rune, f func(end, dist int)) {
	m := len(q)
	prev := make([]int, m+1)
	cur := make([]int, m+1)
	for j := 0; j <= m; j++ {
		prev[j] = j
	}
	f(0, prev[m])
	for i := 0; i < len(t); i++ {
		cur[0] = 0
		for j := 1; j <= m; j++ {
			cost := 1
			if t[i] == q[j-1] {
				cost = 0
			}
			v := prev[j-1] + cost
			if prev[j]+1 < v {
				v = prev[j] + 1
			}
			if cur[j-1]+1 < v {
				v = cur[j-1] + 1
			}
			cur[j] = v
		}
		f(i+1, cur[m])
		prev, cur = cur, prev
	}
}

func reverseRunes(r []rune) []rune {
	out := make([]rune, len(r))
	for i, c := range r {
		out[len(r)-1-i] = c
	}
	return out
}
