// Package spantree holds what the span formats (MLflow and OpenTelemetry)
// share once their spans are decoded: the order of the span tree, and the
// conversation derived from its model-call and tool spans.
package spantree

import "slices"

// Order returns the indices of n spans in tree order: parents before
// children, roots and the children of each span by start time, then by
// index. parent(i) is the index of span i's parent, or -1 for a root; a
// span whose parent is not among the spans (an orphan) is given as a root
// by the caller. Spans whose parent chain loops are never reached: loop is
// the smallest index of such a span, or -1 when every span is in order.
func Order(n int, parent func(i int) int, start func(i int) int64) (order []int, loop int) {
	children := make([][]int, n)
	var roots []int
	for i := range n {
		if p := parent(i); p >= 0 {
			children[p] = append(children[p], i)
		} else {
			roots = append(roots, i)
		}
	}
	byStart := func(a, b int) int {
		if sa, sb := start(a), start(b); sa != sb {
			if sa < sb {
				return -1
			}
			return 1
		}
		return a - b
	}
	slices.SortFunc(roots, byStart)
	order = make([]int, 0, n)
	stack := make([]int, 0, len(roots))
	for i := len(roots) - 1; i >= 0; i-- {
		stack = append(stack, roots[i])
	}
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		order = append(order, i)
		kids := children[i]
		slices.SortFunc(kids, byStart)
		for k := len(kids) - 1; k >= 0; k-- {
			stack = append(stack, kids[k])
		}
	}
	if len(order) == n {
		return order, -1
	}
	seen := make([]bool, n)
	for _, i := range order {
		seen[i] = true
	}
	for i, ok := range seen {
		if !ok {
			return order, i
		}
	}
	return order, -1 // not reached: fewer spans in order than n
}

// ByStart sorts spans stably by start time, ties keeping their order.
func ByStart[S any](spans []S, start func(S) int64) {
	slices.SortStableFunc(spans, func(a, b S) int {
		switch x, y := start(a), start(b); {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	})
}
