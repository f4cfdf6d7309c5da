package sqlite

import (
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"unicode/utf8"
)

// The substring index of the search texts (search_texts, lower-cased): for
// each trigram (three consecutive code points) the ids of the texts that
// hold it. A word of three code points or more is looked up as the texts
// that hold all its trigrams, each then tested for the word itself.
//
// It replaced FTS5's trigram tokenizer, which did the same in SQLite's C
// transpiled to Go at about 230 ns a byte of new text: a sixth of the CPU
// of OpenTelemetry ingest (bench/peers). Here the trigrams are counted in
// Go and written as immutable segments, merged in Go as an LSM tree is:
//
//   - Each index step that adds texts writes a segment of level 0 (more
//     past gramCut): its trigrams in order, each with the ids of its
//     texts (delta varints), packed in blocks of about gramBlock bytes
//     (search_grams rows), and a directory of the blocks' first trigrams
//     (its search_segs row).
//   - Once gramFanout segments share a level, the step merges them into
//     one of the level above. Text ids only grow (search_texts is
//     AUTOINCREMENT), so a level's segments hold consecutive id ranges and
//     merged postings are their concatenation.
//   - A deleted text's id is noted in search_dead (a trigger) and dropped
//     from the postings when its segment is merged; until then the test of
//     the word against search_texts leaves it out. (A segment of the top
//     level keeps them until it is merged, or `lookout reindex`.)

// gramBlock is the size a postings block is cut at.
const gramBlock = 4096

// gramFanout is how many segments of a level are merged into one.
const gramFanout = 8

// gramTables are the index's tables of the trigram index (indexTables).
var gramTables = []string{
	`CREATE TABLE search_segs (
		id    INTEGER PRIMARY KEY,
		level INTEGER NOT NULL,
		lo    INTEGER NOT NULL,
		hi    INTEGER NOT NULL,
		dir   BLOB NOT NULL
	)`,
	`CREATE TABLE search_grams (
		id   INTEGER PRIMARY KEY,
		data BLOB NOT NULL
	)`,
	`CREATE TABLE search_dead (id INTEGER PRIMARY KEY)`,
	`CREATE TRIGGER search_texts_delete AFTER DELETE ON search_texts BEGIN
		INSERT OR IGNORE INTO search_dead (id) VALUES (old.id);
	END`,
}

// gram packs three code points (21 bits each) into one key.
func gram(a, b, c rune) uint64 { return uint64(a)<<42 | uint64(b)<<21 | uint64(c) }

// wordGrams returns the distinct trigrams of s, sorted.
func wordGrams(s string) []uint64 {
	var out []uint64
	var a, b rune
	n := 0
	for _, r := range s {
		if n >= 2 {
			out = append(out, gram(a, b, r))
		}
		a, b = b, r
		n++
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// segBuilder gathers the postings of a segment: texts are added in
// increasing id order. Each trigram's first sight gives it a number (an
// open-addressing table: Go's map was a third of the builder's time);
// each (number, text) pair is noted once, and postings sorts them by
// trigram, keeping the ids' order.
type segBuilder struct {
	keys  []uint64 // the table: trigram+1 (0: free)
	nums  []int32
	grams []uint64 // by number
	last  []int64  // by number: the last text id noted, +1
	occ   []uint64 // the pairs noted: number<<40 | id-lo
	lo    int64
	hi    int64
	texts int
}

// newSegBuilder returns a builder for texts of about size bytes in all.
func newSegBuilder(size int) *segBuilder {
	const table = 1 << 12
	return &segBuilder{keys: make([]uint64, table), nums: make([]int32, table), occ: make([]uint64, 0, size)}
}

// num returns the number of trigram g, giving it one at first sight.
func (b *segBuilder) num(g uint64) int32 {
	k := g + 1
	mask := uint64(len(b.keys) - 1)
	for i := (k * 0x9e3779b97f4a7c15) >> 32 & mask; ; i = (i + 1) & mask {
		switch b.keys[i] {
		case k:
			return b.nums[i]
		case 0:
			n := int32(len(b.grams))
			b.keys[i], b.nums[i] = k, n
			b.grams, b.last = append(b.grams, g), append(b.last, 0)
			if 2*len(b.grams) > len(b.keys) {
				b.grow()
			}
			return n
		}
	}
}

// grow doubles the table.
func (b *segBuilder) grow() {
	keys, nums := b.keys, b.nums
	b.keys, b.nums = make([]uint64, 2*len(keys)), make([]int32, 2*len(keys))
	mask := uint64(len(b.keys) - 1)
	for j, k := range keys {
		if k == 0 {
			continue
		}
		i := (k * 0x9e3779b97f4a7c15) >> 32 & mask
		for b.keys[i] != 0 {
			i = (i + 1) & mask
		}
		b.keys[i], b.nums[i] = k, nums[j]
	}
}

// add adds the text id holds (ids must grow from one add to the next).
func (b *segBuilder) add(id int64, text string) {
	if b.texts == 0 {
		b.lo = id
	}
	b.hi = id
	b.texts++
	var x, y rune
	n := 0
	for i := 0; i < len(text); {
		r, size := rune(text[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(text[i:])
		}
		i += size
		if n >= 2 {
			k := b.num(gram(x, y, r))
			if b.last[k] != id+1 {
				b.last[k] = id + 1
				b.occ = append(b.occ, uint64(k)<<40|uint64(id-b.lo))
			}
		}
		x, y = y, r
		n++
	}
}

// gramPostings is a trigram and the ids of its texts, in order.
type gramPostings struct {
	gram uint64
	ids  []int64
}

// postings returns the segment's trigrams in order.
func (b *segBuilder) postings() []gramPostings {
	// The pairs by number (a counting sort: each number's ids stay in the
	// order they came), then the numbers by trigram.
	start := make([]int32, len(b.grams)+1)
	for _, o := range b.occ {
		start[o>>40+1]++
	}
	for k := range b.grams {
		start[k+1] += start[k]
	}
	ids := make([]int64, len(b.occ))
	at := slices.Clone(start[:len(b.grams)])
	for _, o := range b.occ {
		k := o >> 40
		ids[at[k]] = b.lo + int64(o&(1<<40-1))
		at[k]++
	}
	// Sorting the trigrams alone and looking each up again is twice as
	// fast as sorting the postings by trigram.
	sorted := slices.Clone(b.grams)
	slices.Sort(sorted)
	out := make([]gramPostings, len(sorted))
	for i, g := range sorted {
		k := b.num(g)
		out[i] = gramPostings{g, ids[start[k]:start[k+1]]}
	}
	return out
}

// appendIDs appends ids (sorted) as postings: deltas, the first from 0.
func appendIDs(buf []byte, ids []int64) []byte {
	var prev int64
	for _, id := range ids {
		buf = binary.AppendUvarint(buf, uint64(id-prev))
		prev = id
	}
	return buf
}

// dirEntry is a block of a segment: its first trigram and its row.
type dirEntry struct {
	first uint64
	block int64
}

func encodeDir(d []dirEntry) []byte {
	out := make([]byte, 0, 8*len(d))
	var g uint64
	var id int64
	for _, e := range d {
		out = binary.AppendUvarint(out, e.first-g)
		out = binary.AppendUvarint(out, uint64(e.block-id))
		g, id = e.first, e.block
	}
	return out
}

func decodeDir(b []byte) ([]dirEntry, error) {
	var out []dirEntry
	var g uint64
	var id int64
	for len(b) > 0 {
		dg, ok1 := uvarint(&b)
		di, ok2 := uvarint(&b)
		if !ok1 || !ok2 {
			return nil, errBadGrams
		}
		g, id = g+dg, id+int64(di)
		out = append(out, dirEntry{g, id})
	}
	return out, nil
}

// uvarint reads a varint off the front of b.
func uvarint(b *[]byte) (uint64, bool) {
	v, n := binary.Uvarint(*b)
	if n <= 0 {
		return 0, false
	}
	*b = (*b)[n:]
	return v, true
}

var errBadGrams = errors.New("search index: a trigram block does not decode (run lookout reindex)")

// blockOf returns the block of d that would hold g (-1: before the first).
func blockOf(d []dirEntry, g uint64) int {
	i, found := slices.BinarySearchFunc(d, g, func(e dirEntry, g uint64) int {
		switch {
		case e.first < g:
			return -1
		case e.first > g:
			return 1
		}
		return 0
	})
	if found {
		return i
	}
	return i - 1
}

// blockEntry is one trigram's postings in a block.
type blockEntry struct {
	gram uint64
	n    int
	ids  []byte
}

// eachEntry calls fn with each entry of a block whose first trigram is
// first, in order, until fn returns false.
func eachEntry(data []byte, first uint64, fn func(blockEntry) bool) error {
	g := first
	for len(data) > 0 {
		dg, ok1 := uvarint(&data)
		n, ok2 := uvarint(&data)
		size, ok3 := uvarint(&data)
		if !ok1 || !ok2 || !ok3 || size > uint64(len(data)) {
			return errBadGrams
		}
		g += dg
		if !fn(blockEntry{g, int(n), data[:size]}) {
			return nil
		}
		data = data[size:]
	}
	return nil
}

// decodeIDs appends the ids of postings to out.
func decodeIDs(out []int64, ids []byte) ([]int64, error) {
	var id int64
	for len(ids) > 0 {
		d, ok := uvarint(&ids)
		if !ok {
			return out, errBadGrams
		}
		id += int64(d)
		out = append(out, id)
	}
	return out, nil
}

// segWriter writes a segment's blocks as its trigrams come, in order.
type segWriter struct {
	tx     *sql.Tx
	next   int64 // the next block's row id
	blocks batcher
	dir    []dirEntry
	block  []byte
	first  uint64
	prev   uint64
	open   bool
}

func newSegWriter(ctx context.Context, tx *sql.Tx) (*segWriter, error) {
	w := &segWriter{tx: tx, blocks: batcher{tx: tx, head: "INSERT INTO search_grams (id, data) VALUES ", cols: 2}}
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(id), 0) FROM search_grams`).Scan(&w.next); err != nil {
		return nil, err
	}
	w.next++
	return w, nil
}

// add appends a trigram's postings (n ids, encoded as buf is).
func (w *segWriter) add(ctx context.Context, g uint64, n int, buf []byte) error {
	if !w.open {
		w.first, w.prev, w.open = g, g, true
	}
	w.block = binary.AppendUvarint(w.block, g-w.prev)
	w.block = binary.AppendUvarint(w.block, uint64(n))
	w.block = binary.AppendUvarint(w.block, uint64(len(buf)))
	w.block = append(w.block, buf...)
	w.prev = g
	if len(w.block) >= gramBlock {
		return w.cut(ctx)
	}
	return nil
}

// cut ends the block being filled.
func (w *segWriter) cut(ctx context.Context) error {
	if !w.open {
		return nil
	}
	w.dir = append(w.dir, dirEntry{w.first, w.next})
	// The batcher keeps the argument until it runs: a copy of the block.
	err := w.blocks.add(ctx, w.next, slices.Clone(w.block))
	w.next++
	w.block, w.open = w.block[:0], false
	return err
}

// finish writes the last block and the segment's row.
func (w *segWriter) finish(ctx context.Context, level int, lo, hi int64) error {
	if err := w.cut(ctx); err != nil {
		return err
	}
	if err := w.blocks.flush(ctx); err != nil {
		return err
	}
	if len(w.dir) == 0 {
		return nil
	}
	_, err := w.tx.ExecContext(ctx, `INSERT INTO search_segs (level, lo, hi, dir) VALUES (?, ?, ?, ?)`, level, lo, hi, encodeDir(w.dir))
	return err
}

// gramCut is how many (trigram, text) pairs a segment being built holds
// at most before it is written (8 bytes each), past the text that crosses
// it: the memory a step's texts take is bounded by that and its largest
// text, whatever their total.
var gramCut = 1 << 21 // a variable for tests

// writeGrams writes the segments of new texts (ids increasing), then merges
// the levels that are full.
func writeGrams(ctx context.Context, tx *sql.Tx, ids []int64, texts []string) error {
	size := 0 // the bytes of the texts left
	for _, t := range texts {
		size += len(t)
	}
	for len(ids) > 0 {
		b := newSegBuilder(min(size, gramCut))
		n := 0
		for n < len(ids) && len(b.occ) < gramCut {
			b.add(ids[n], texts[n])
			size -= len(texts[n])
			n++
		}
		ids, texts = ids[n:], texts[n:]
		w, err := newSegWriter(ctx, tx)
		if err != nil {
			return err
		}
		var buf []byte
		for _, p := range b.postings() {
			buf = appendIDs(buf[:0], p.ids)
			if err := w.add(ctx, p.gram, len(p.ids), buf); err != nil {
				return err
			}
		}
		if err := w.finish(ctx, 0, b.lo, b.hi); err != nil {
			return err
		}
	}
	for {
		merged, err := mergeGrams(ctx, tx)
		if err != nil || !merged {
			return err
		}
	}
}

// mergeGrams merges the segments of the lowest level that has gramFanout
// of them into one of the level above, and reports whether there was one.
func mergeGrams(ctx context.Context, tx *sql.Tx) (bool, error) {
	var level int
	err := tx.QueryRowContext(ctx, `SELECT level FROM search_segs GROUP BY level HAVING count(*) >= ? ORDER BY level LIMIT 1`, gramFanout).Scan(&level)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	segs, err := readSegments(ctx, tx, `WHERE level = ? ORDER BY lo`, level)
	if err != nil {
		return false, err
	}
	lo, hi := segs[0].lo, segs[len(segs)-1].hi
	dead := map[int64]bool{}
	rows, err := tx.QueryContext(ctx, `SELECT id FROM search_dead WHERE id BETWEEN ? AND ?`, lo, hi)
	err = eachRow(rows, err, func(rows *sql.Rows) error {
		var id int64
		err := rows.Scan(&id)
		dead[id] = true
		return err
	})
	if err != nil {
		return false, err
	}
	read, err := tx.PrepareContext(ctx, `SELECT data FROM search_grams WHERE id = ?`)
	if err != nil {
		return false, err
	}
	defer read.Close()
	its := make([]*segIter, len(segs))
	var old []int64
	for i, s := range segs {
		its[i] = &segIter{dir: s.dir, read: func(id int64) ([]byte, error) {
			var data []byte
			err := read.QueryRowContext(ctx, id).Scan(&data)
			return data, err
		}}
		if err := its[i].next(); err != nil {
			return false, err
		}
		for _, e := range s.dir {
			old = append(old, e.block)
		}
	}
	w, err := newSegWriter(ctx, tx)
	if err != nil {
		return false, err
	}
	var buf []byte
	var ids []int64
	for {
		// The least trigram among the segments' current entries.
		var g uint64
		have := false
		for _, it := range its {
			if !it.done && (!have || it.cur.gram < g) {
				g, have = it.cur.gram, true
			}
		}
		if !have {
			break
		}
		// Its postings, segment after segment (their ids in order).
		buf, ids = buf[:0], ids[:0]
		for _, it := range its {
			if it.done || it.cur.gram != g {
				continue
			}
			if ids, err = decodeIDs(ids, it.cur.ids); err != nil {
				return false, err
			}
			if err := it.next(); err != nil {
				return false, err
			}
		}
		var prev int64
		n := 0
		for _, id := range ids {
			if dead[id] || id == prev && n > 0 {
				continue
			}
			buf = binary.AppendUvarint(buf, uint64(id-prev))
			prev = id
			n++
		}
		if n > 0 {
			if err := w.add(ctx, g, n, buf); err != nil {
				return false, err
			}
		}
	}
	if err := w.finish(ctx, level+1, lo, hi); err != nil {
		return false, err
	}
	oldList, _ := json.Marshal(old)
	segList := make([]int64, len(segs))
	for i, s := range segs {
		segList[i] = s.id
	}
	segJSON, _ := json.Marshal(segList)
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`DELETE FROM search_grams WHERE id IN (SELECT value FROM json_each(?))`, []any{string(oldList)}},
		{`DELETE FROM search_segs WHERE id IN (SELECT value FROM json_each(?))`, []any{string(segJSON)}},
		{`DELETE FROM search_dead WHERE id BETWEEN ? AND ?`, []any{lo, hi}},
	} {
		if _, err := tx.ExecContext(ctx, q.sql, q.args...); err != nil {
			return false, err
		}
	}
	return true, nil
}

// segment is a row of search_segs, its directory decoded.
type segment struct {
	id, lo, hi int64
	dir        []dirEntry
}

// readSegments reads the segments that tail (a WHERE and ORDER BY, or
// nothing) selects.
func readSegments(ctx context.Context, tx *sql.Tx, tail string, args ...any) ([]segment, error) {
	var segs []segment
	rows, err := tx.QueryContext(ctx, `SELECT id, lo, hi, dir FROM search_segs `+tail, args...)
	err = eachRow(rows, err, func(rows *sql.Rows) error {
		var s segment
		var dir sql.RawBytes
		if err := rows.Scan(&s.id, &s.lo, &s.hi, &dir); err != nil {
			return err
		}
		var err error
		s.dir, err = decodeDir(dir)
		segs = append(segs, s)
		return err
	})
	return segs, err
}

// segIter reads a segment's entries in order, a block at a time.
type segIter struct {
	dir     []dirEntry
	read    func(block int64) ([]byte, error)
	entries []blockEntry
	at      int // the next block of dir to read
	cur     blockEntry
	done    bool
}

func (it *segIter) next() error {
	for len(it.entries) == 0 {
		if it.at == len(it.dir) {
			it.done = true
			return nil
		}
		e := it.dir[it.at]
		it.at++
		data, err := it.read(e.block)
		if err != nil {
			return fmt.Errorf("search index: block %d: %w", e.block, err)
		}
		if err := eachEntry(data, e.first, func(be blockEntry) bool {
			it.entries = append(it.entries, be)
			return true
		}); err != nil {
			return err
		}
	}
	it.cur, it.entries = it.entries[0], it.entries[1:]
	return nil
}

// textsWithGrams returns the ids of the texts (sorted) that hold every
// trigram of word, read in tx (one snapshot of the index): the texts that
// may hold word, for the caller to test.
func textsWithGrams(ctx context.Context, tx *sql.Tx, word string) ([]int64, error) {
	grams := wordGrams(word)
	if len(grams) == 0 {
		return nil, errors.New("search index: a word of fewer than 3 characters")
	}
	segs, err := readSegments(ctx, tx, ``)
	if err != nil {
		return nil, err
	}
	// The block of each trigram in each segment, read at once.
	var blocks []int64
	for _, s := range segs {
		for _, g := range grams {
			if i := blockOf(s.dir, g); i >= 0 {
				blocks = append(blocks, s.dir[i].block)
			}
		}
	}
	slices.Sort(blocks)
	blocks = slices.Compact(blocks)
	data := make(map[int64][]byte, len(blocks))
	if len(blocks) > 0 {
		list, _ := json.Marshal(blocks)
		rows, err := tx.QueryContext(ctx, `SELECT id, data FROM search_grams WHERE id IN (SELECT value FROM json_each(?))`, string(list))
		err = eachRow(rows, err, func(rows *sql.Rows) error {
			var id int64
			var d []byte
			err := rows.Scan(&id, &d)
			data[id] = d
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	var out []int64
	lists := make([][]byte, len(grams))
	for _, s := range segs {
		all := true
		for k, g := range grams {
			lists[k] = nil
			i := blockOf(s.dir, g)
			if i < 0 {
				all = false
				break
			}
			d, ok := data[s.dir[i].block]
			if !ok {
				return nil, fmt.Errorf("search index: block %d of segment %d is gone: %w", s.dir[i].block, s.id, errBadGrams)
			}
			if err := eachEntry(d, s.dir[i].first, func(e blockEntry) bool {
				if e.gram == g {
					lists[k] = e.ids
				}
				return e.gram < g
			}); err != nil {
				return nil, err
			}
			if lists[k] == nil {
				all = false
				break
			}
		}
		if !all {
			continue
		}
		// The shortest list first; each other one keeps what it holds.
		slices.SortFunc(lists, func(a, b []byte) int { return len(a) - len(b) })
		ids, err := decodeIDs(nil, lists[0])
		if err != nil {
			return nil, err
		}
		var other []int64
		for _, l := range lists[1:] {
			if len(ids) == 0 {
				break
			}
			if other, err = decodeIDs(other[:0], l); err != nil {
				return nil, err
			}
			ids = intersectSorted(ids, other)
		}
		out = append(out, ids...)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// intersectSorted keeps, in a, the ids b holds too (both sorted).
func intersectSorted(a, b []int64) []int64 {
	out := a[:0]
	j := 0
	for _, x := range a {
		for j < len(b) && b[j] < x {
			j++
		}
		if j < len(b) && b[j] == x {
			out = append(out, x)
		}
	}
	return out
}
