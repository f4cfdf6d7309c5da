package policy

import (
	"container/list"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestLocate(t *testing.T) {
	tests := []struct {
		s, quote string
		want     string // byte ranges
	}{
		{"say hi, hi", "hi", "[[4 6] [8 10]]"},
		{"say hi", "  hi ", "[[4 6]]"},
		{"Über  Zürich\nnow", "über zürich now", "[[0 18]]"}, // case and white space
		{"abc", "abcd", "[]"},
		{"abc", "", "[]"},
		{"aaa", "aa", "[[0 2]]"}, // occurrences do not overlap
		{"ß and SS", "ss", "[[7 9]]"},
	}
	for _, tc := range tests {
		got := fmt.Sprint(locate(tc.s, tc.quote))
		if got != tc.want {
			t.Errorf("locate(%q, %q) = %s, want %s", tc.s, tc.quote, got, tc.want)
		}
	}
}

func TestChunkText(t *testing.T) {
	s := strings.Repeat("é", 10) + "\n" + strings.Repeat("b", 3) + strings.Repeat("c", 20)
	chunks := chunkText(s, 12)
	var b strings.Builder
	for i, c := range chunks {
		if n := utf8.RuneCountInString(c.s); n > 12 || n == 0 {
			t.Errorf("chunk %d has %d code points", i, n)
		}
		if c.off != b.Len() {
			t.Errorf("chunk %d at %d, want %d", i, c.off, b.Len())
		}
		b.WriteString(c.s)
	}
	if b.String() != s {
		t.Fatal("chunks do not make up the text")
	}
	if chunks[0].s != strings.Repeat("é", 10)+"\n" {
		t.Errorf("first chunk %q: want it cut after the line break", chunks[0].s)
	}
	if len(chunkText("", 5)) != 0 {
		t.Error("chunks of nothing")
	}
}

func TestLRU(t *testing.T) {
	c := lru{maxEntries: 3, maxBytes: 100, items: map[[32]byte]*list.Element{}}
	k := func(i byte) [32]byte { return [32]byte{i} }
	for i := range byte(4) {
		c.add(k(i), i, 10)
	}
	if _, ok := c.get(k(0)); ok {
		t.Error("the oldest of 4 entries is kept with room for 3")
	}
	c.get(k(1)) // used: k(2) is now the oldest
	c.add(k(9), 9, 75)
	// 10 (k1) + 10 (k3) + 75: k2 had to go for the bytes
	if _, ok := c.get(k(2)); ok || c.bytes != 95 || c.order.Len() != 3 {
		t.Errorf("bytes %d, entries %d", c.bytes, c.order.Len())
	}
	c.add(k(10), 10, 101) // larger than the cache: not kept
	if _, ok := c.get(k(10)); ok {
		t.Error("an entry larger than the cache is kept")
	}
}
