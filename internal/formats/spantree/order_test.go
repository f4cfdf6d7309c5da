package spantree

import (
	"slices"
	"testing"

	// registers -update, so that go test ./internal/formats/... -update
	// runs here too
	_ "github.com/lookout-dev/lookout/internal/formats/internal/golden"
)

func TestOrder(t *testing.T) {
	for _, c := range []struct {
		name   string
		parent []int
		start  []int
		order  []int
		loop   int
	}{
		{"empty", nil, nil, []int{}, -1},
		{"roots by start, ties by index", []int{-1, -1, -1}, []int{5, 1, 5}, []int{1, 0, 2}, -1},
		{"children after their parent, siblings by start",
			// 0 root; 1, 2 children of 0 (2 starts first); 3 child of 2
			[]int{-1, 0, 0, 2}, []int{0, 20, 10, 30}, []int{0, 2, 3, 1}, -1},
		{"children listed before their parent", []int{2, 2, -1}, []int{1, 1, 0}, []int{2, 0, 1}, -1},
		{"a loop leaves its spans out", []int{-1, 2, 1, 1}, []int{0, 0, 0, 0}, []int{0}, 1},
		{"a span its own parent", []int{-1, 1}, []int{0, 0}, []int{0}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			order, loop := Order(len(c.parent), func(i int) int { return c.parent[i] }, func(i int) int64 { return int64(c.start[i]) })
			if !slices.Equal(order, c.order) || loop != c.loop {
				t.Errorf("Order = %v, loop %d; want %v, loop %d", order, loop, c.order, c.loop)
			}
		})
	}
}

func TestByStart(t *testing.T) {
	type sp struct {
		id    string
		start int64
	}
	s := []sp{{"a", 3}, {"b", 1}, {"c", 3}, {"d", 0}, {"e", 1}}
	ByStart(s, func(x sp) int64 { return x.start })
	var got string
	for _, x := range s {
		got += x.id
	}
	if got != "dbeac" {
		t.Errorf("ByStart gave %s, want dbeac (stable)", got)
	}
}
