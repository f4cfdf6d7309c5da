package sqlite

import (
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestGramIndex writes random texts in many steps (so that levels fill and
// merge), deletes some, and checks after each step that the texts the
// trigram index gives for a word are all those that hold it (a text may
// come that does not: the caller tests them), never a dropped text once
// its segment was merged, and that merges leave no segment level full.
func TestGramIndex(t *testing.T) {
	t.Run("one segment a step", testGramIndex)
	t.Run("segments cut small", func(t *testing.T) {
		defer func(n int) { gramCut = n }(gramCut)
		gramCut = 40 // most steps write several segments
		testGramIndex(t)
	})
}

func testGramIndex(t *testing.T) {
	ctx := context.Background()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "idx.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := createIndex(ctx, tx); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []rune("abcdeé日 ")
	randText := func(n int) string {
		var b strings.Builder
		for range n {
			b.WriteRune(alphabet[rng.IntN(len(alphabet))])
		}
		return b.String()
	}
	live := map[int64]string{}
	everDead := map[int64]bool{}
	merges := 0
	for step := range 150 {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var ids []int64
		var texts []string
		for range rng.IntN(12) {
			text := randText(rng.IntN(30))
			var id int64
			if err := tx.QueryRowContext(ctx, `INSERT INTO search_texts (text) VALUES (?) RETURNING id`, text).Scan(&id); err != nil {
				t.Fatal(err)
			}
			ids, texts = append(ids, id), append(texts, text)
			live[id] = text
		}
		// Some texts go, as a sweep of unused texts deletes them.
		for id := range live {
			if rng.IntN(20) == 0 {
				if _, err := tx.ExecContext(ctx, `DELETE FROM search_texts WHERE id = ?`, id); err != nil {
					t.Fatal(err)
				}
				delete(live, id)
				everDead[id] = true
			}
		}
		var before int
		tx.QueryRowContext(ctx, `SELECT count(*) FROM search_segs WHERE level > 0`).Scan(&before)
		if err := writeGrams(ctx, tx, ids, texts); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		var after int
		tx.QueryRowContext(ctx, `SELECT count(*) FROM search_segs WHERE level > 0`).Scan(&after)
		if after != before {
			merges++
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		// Words: pieces of live texts, and random ones.
		var words []string
		for _, text := range live {
			if r := []rune(text); len(r) >= 3 && len(words) < 20 {
				i := rng.IntN(len(r) - 2)
				j := i + 3 + rng.IntN(min(4, len(r)-i-3)+1)
				words = append(words, string(r[i:min(j, len(r))]))
			}
		}
		for range 5 {
			words = append(words, randText(3+rng.IntN(3)))
		}
		rtx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		var dead []int64
		rows, err := rtx.QueryContext(ctx, `SELECT id FROM search_dead`)
		eachRow(rows, err, func(rows *sql.Rows) error {
			var id int64
			err := rows.Scan(&id)
			dead = append(dead, id)
			return err
		})
		for _, w := range words {
			got, err := textsWithGrams(ctx, rtx, w)
			if err != nil {
				t.Fatalf("step %d, %q: %v", step, w, err)
			}
			if !slices.IsSorted(got) {
				t.Fatalf("step %d, %q: ids out of order: %v", step, w, got)
			}
			for id, text := range live {
				if strings.Contains(text, w) {
					if _, ok := slices.BinarySearch(got, id); !ok {
						t.Fatalf("step %d: text %d (%q) holds %q; the index gives %v", step, id, text, w, got)
					}
				}
			}
			for _, id := range got {
				if _, ok := live[id]; !ok && !slices.Contains(dead, id) {
					t.Fatalf("step %d, %q: text %d is gone and its segment merged, yet the index gives it", step, w, id)
				}
			}
		}
		var full int
		rtx.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT level FROM search_segs GROUP BY level HAVING count(*) > ?)`, gramFanout).Scan(&full)
		if full > 0 {
			t.Fatalf("step %d: a level holds more than %d segments", step, gramFanout)
		}
		rtx.Rollback()
	}
	if merges < 10 {
		t.Fatalf("only %d merges in the test: it does not exercise them", merges)
	}
	var n int
	db.QueryRow(`SELECT count(*) FROM search_dead`).Scan(&n)
	if n >= len(everDead) {
		t.Fatalf("%d of %d dropped texts still noted: merges do not purge them", n, len(everDead))
	}
}

func TestWordGrams(t *testing.T) {
	if g := wordGrams("ab"); len(g) != 0 {
		t.Errorf("wordGrams(ab) = %v", g)
	}
	if g := wordGrams("aaaa"); len(g) != 1 || g[0] != gram('a', 'a', 'a') {
		t.Errorf("wordGrams(aaaa) = %v", g)
	}
	// A text's trigrams, as the segment builder reads them, hold each of
	// its words' (invalid UTF-8 included, read alike by both).
	text := "x\xffé日 \xe2\x82abc"
	b := newSegBuilder(len(text))
	b.add(1, text)
	have := map[uint64]bool{}
	for _, p := range b.postings() {
		have[p.gram] = true
	}
	for i := range len(text) {
		for j := i + 1; j <= len(text); j++ {
			if !utf8.ValidString(text[i:j]) {
				continue
			}
			for _, g := range wordGrams(text[i:j]) {
				if !have[g] {
					t.Fatalf("%q: trigram %x of %q not found", text, g, text[i:j])
				}
			}
		}
	}
}

// BenchmarkSegBuilder: a segment of 5,000 texts of agent-like prose.
func BenchmarkSegBuilder(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	words := strings.Fields("the agent calls a tool to look up the order status and refunds the customer when the payment failed; ticket tkt0039595q escalated to billing with invoice number")
	texts := make([]string, 5000)
	size := 0
	for i := range texts {
		var sb strings.Builder
		for range 60 {
			sb.WriteString(words[rng.IntN(len(words))])
			sb.WriteByte(' ')
		}
		fmt.Fprintf(&sb, "id-%x", rng.Uint64())
		texts[i] = sb.String()
		size += len(texts[i])
	}
	b.SetBytes(int64(size))
	for b.Loop() {
		sb := newSegBuilder(size)
		for i, t := range texts {
			sb.add(int64(i+1), t)
		}
		var buf []byte
		for _, p := range sb.postings() {
			buf = appendIDs(buf[:0], p.ids)
		}
	}
}

// TestGramBlocksTruncated: a damaged block or directory (a file edited or
// cut short) is an error, never a panic or a wrong read past its end.
func TestGramBlocksTruncated(t *testing.T) {
	b := newSegBuilder(64)
	b.add(7, "hello world")
	b.add(300, "yellow wood")
	var block []byte
	first := uint64(0)
	for i, p := range b.postings() {
		if i == 0 {
			first = p.gram
		}
		block = binary.AppendUvarint(block, p.gram-first)
		first = p.gram
		ids := appendIDs(nil, p.ids)
		block = binary.AppendUvarint(block, uint64(len(p.ids)))
		block = binary.AppendUvarint(block, uint64(len(ids)))
		block = append(block, ids...)
	}
	start := b.postings()[0].gram
	n := 0
	if err := eachEntry(block, start, func(blockEntry) bool { n++; return true }); err != nil || n != len(b.postings()) {
		t.Fatalf("whole block: %d entries, %v", n, err)
	}
	dir := encodeDir([]dirEntry{{start, 1}, {start + 5, 9}})
	for cut := range len(block) {
		err := eachEntry(block[:cut], start, func(e blockEntry) bool {
			if _, err := decodeIDs(nil, e.ids); err != nil {
				t.Fatalf("cut at %d: ids: %v", cut, err)
			}
			return true
		})
		if cut > 0 && err == nil && !entryEnds(block, cut) {
			t.Fatalf("cut at %d: no error", cut)
		}
	}
	for cut := 1; cut < len(dir); cut++ {
		if d, err := decodeDir(dir[:cut]); err == nil && len(d) == 2 {
			t.Fatalf("directory cut at %d reads whole", cut)
		}
	}
}

// entryEnds reports whether cut falls where an entry of block ends.
func entryEnds(block []byte, cut int) bool {
	// Walk the encoding by hand: three varints and the ids.
	rest := block
	for len(rest) > 0 {
		_, ok1 := uvarint(&rest)
		_, ok2 := uvarint(&rest)
		size, ok3 := uvarint(&rest)
		if !ok1 || !ok2 || !ok3 {
			return false
		}
		rest = rest[size:]
		if len(block)-len(rest) == cut {
			return true
		}
	}
	return false
}
