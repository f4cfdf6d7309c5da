// Package storeutil holds what the store backends share short of running
// statements: ids, times, cursors, the checks of what is stored (traces,
// annotations, scores, benchmarks, conversation steps), the encoding of
// trace content and its appended parts, metadata merging, index
// assignment and the hashes of the search index's texts. It holds no
// connection and runs nothing: the SQL both backends run is sqlstore's,
// the span ingest spanstore's.
package storeutil

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/lookout-dev/lookout/internal/jsonscan"
	"github.com/lookout-dev/lookout/internal/search"
	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/trace"
)

// NewID returns a time-ordered (version 7) UUID in its canonical text form:
// the milliseconds since the epoch, then 74 random bits. Rows keyed by ids
// made close in time land in the same B-tree pages (the traces and every
// index table keyed by trace), where random ids would scatter each batch's
// writes over the whole index.
func NewID() string {
	var u [16]byte
	if _, err := rand.Read(u[6:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	ms := uint64(time.Now().UnixMilli())
	for i := range 6 {
		u[i] = byte(ms >> (40 - 8*i))
	}
	u[6] = u[6]&0x0f | 0x70
	u[8] = u[8]&0x3f | 0x80
	var b [36]byte
	hex.Encode(b[0:8], u[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], u[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], u[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], u[8:10])
	b[23] = '-'
	hex.Encode(b[24:], u[10:])
	return string(b[:])
}

// ValidID reports whether s is a UUID in canonical lower-case text form, the
// only form the store hands out. Anything else cannot name a stored row.
func ValidID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < 36; i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
				return false
			}
		}
	}
	return true
}

// Now is the current time as the store keeps it: UTC, microseconds (what
// PostgreSQL's timestamptz holds), so a time handed out equals the time read
// back.
func Now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// FromMicros turns microseconds since the epoch into a UTC time.
func FromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

// Page sizes.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
)

// Limit returns the page size to use for a requested one.
func Limit(n int) int {
	switch {
	case n <= 0:
		return DefaultLimit
	case n > MaxLimit:
		return MaxLimit
	}
	return n
}

// EncodeCursor returns the opaque cursor of the page after index.
func EncodeCursor(index int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte("i" + strconv.FormatInt(index, 10)))
}

// DecodeCursor returns the index a cursor continues after; ok is false for
// the empty cursor (start of the list).
func DecodeCursor(c string) (after int64, ok bool, err error) {
	if c == "" {
		return 0, false, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err == nil && len(raw) > 1 && raw[0] == 'i' {
		if after, err = strconv.ParseInt(string(raw[1:]), 10, 64); err == nil {
			return after, true, nil
		}
	}
	return 0, false, fmt.Errorf("bad page cursor %q: %w", c, store.ErrInvalid)
}

// CheckObject checks that raw is a JSON object; nil is allowed when
// nilOK.
func CheckObject(raw json.RawMessage, what string, nilOK bool) error {
	if raw == nil && nilOK {
		return nil
	}
	if !jsonscan.Valid(raw) || firstByte(raw) != '{' {
		return fmt.Errorf("%s is not a JSON object: %w", what, store.ErrInvalid)
	}
	return nil
}

func firstByte(b []byte) byte {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return c
	}
	return 0
}

// member is one key of a JSON object with its raw value.
type member struct {
	key string
	val json.RawMessage
}

func members(obj json.RawMessage) ([]member, error) {
	s := jsonscan.New(obj)
	if err := s.Expect(jsonscan.Object, "metadata"); err != nil {
		return nil, err
	}
	var ms []member
	err := s.Object(func(key string) error {
		raw, err := trace.DecodeRaw(s)
		if err != nil {
			return err
		}
		for i := range ms {
			if ms[i].key == key { // a repeated key: the last one wins, in place
				ms[i].val = raw
				return nil
			}
		}
		ms = append(ms, member{key, raw})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ms, s.End()
}

// MergeObject returns old with the top-level members of patch set: members
// of old keep their order (a patched one keeps its place), new ones follow in
// patch order. Both must be JSON objects; old may be empty (no object yet).
func MergeObject(old, patch json.RawMessage) (json.RawMessage, error) {
	pm, err := members(FixUTF8(patch))
	if err != nil {
		return nil, fmt.Errorf("metadata: %w: %w", err, store.ErrInvalid)
	}
	var om []member
	if len(old) > 0 {
		if om, err = members(old); err != nil {
			return nil, fmt.Errorf("stored metadata: %w", err)
		}
	}
next:
	for _, p := range pm {
		for i := range om {
			if om[i].key == p.key {
				om[i].val = p.val
				continue next
			}
		}
		om = append(om, p)
	}
	b := []byte{'{'}
	for i, m := range om {
		if i > 0 {
			b = append(b, ',')
		}
		b = trace.AppendString(b, m.key)
		b = append(b, ':')
		b = append(b, m.val...)
	}
	return append(b, '}'), nil
}

// CompactObject checks that raw is a JSON object and returns it compact.
func CompactObject(raw json.RawMessage, what string) (json.RawMessage, error) {
	if err := CheckObject(raw, what, false); err != nil {
		return nil, err
	}
	return trace.Compact(FixUTF8(raw)), nil
}

// AssignIndexes gives every trace of a batch its index in a dataset whose
// next free index is next: a given index is kept (a taken one is caught by
// the unique constraint), the others get next, next+1, ..., skipping indexes
// given in the same batch. It returns the indexes and the new next.
func AssignIndexes(next int64, given []*int64) ([]int64, int64) {
	out := make([]int64, len(given))
	var taken map[int64]bool
	for _, g := range given {
		if g != nil {
			if taken == nil {
				taken = make(map[int64]bool)
			}
			taken[*g] = true
		}
	}
	for i, g := range given {
		if g != nil {
			out[i] = *g
			if *g >= next {
				next = *g + 1
			}
			continue
		}
		for taken[next] {
			next++
		}
		out[i] = next
		next++
	}
	return out, next
}

// HierarchyJSON encodes a hierarchy path; nil for none.
func HierarchyJSON(h []string) []byte {
	if len(h) == 0 {
		return nil
	}
	b := []byte{'['}
	for i, s := range h {
		if i > 0 {
			b = append(b, ',')
		}
		b = trace.AppendString(b, strings.ToValidUTF8(s, "\uFFFD"))
	}
	return append(b, ']')
}

// ParseHierarchy decodes what HierarchyJSON wrote.
func ParseHierarchy(b []byte) ([]string, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var h []string
	if err := json.Unmarshal(b, &h); err != nil {
		return nil, fmt.Errorf("stored hierarchy: %w", err)
	}
	return h, nil
}

// CheckName checks a user, dataset or policy name.
func CheckName(what, name string) error {
	if err := CheckText(what+" name", name); err != nil {
		return err
	}
	if strings.TrimSpace(name) == "" {
		return fmt.Errorf("%s name is empty: %w", what, store.ErrInvalid)
	}
	if len(name) > 1024 {
		return fmt.Errorf("%s name is longer than 1024 bytes: %w", what, store.ErrInvalid)
	}
	return nil
}

// PolicyMode returns the mode a policy is stored with: "" is
// store.PolicyLog; anything but block or log is ErrInvalid.
func PolicyMode(mode string) (string, error) {
	switch mode {
	case "":
		return store.PolicyLog, nil
	case store.PolicyBlock, store.PolicyLog:
		return mode, nil
	}
	return "", fmt.Errorf("policy mode %q: want %q or %q: %w", mode, store.PolicyBlock, store.PolicyLog, store.ErrInvalid)
}

// CheckText checks a string the store keeps as text: it must be UTF-8
// without NUL characters (what PostgreSQL's text type holds).
func CheckText(what, s string) error {
	if strings.IndexByte(s, 0) >= 0 {
		return fmt.Errorf("%s contains a NUL character: %w", what, store.ErrInvalid)
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("%s is not valid UTF-8: %w", what, store.ErrInvalid)
	}
	return nil
}

// ListName is a trace name as the list column keeps it: NUL characters
// dropped and invalid UTF-8 replaced (the content keeps the exact name).
func ListName(s string) string {
	if strings.IndexByte(s, 0) < 0 && utf8.ValidString(s) {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "")
}

// FixUTF8 returns raw JSON with each byte that is not part of valid UTF-8
// replaced by U+FFFD, as encoding/json does when it decodes a string; valid
// input is returned as is. (JSON is UTF-8; PostgreSQL's text holds nothing
// else.)
func FixUTF8(raw []byte) []byte {
	if raw == nil || utf8.Valid(raw) {
		return raw
	}
	out := make([]byte, 0, len(raw)+8)
	for i := 0; i < len(raw); {
		r, n := utf8.DecodeRune(raw[i:])
		if r == utf8.RuneError && n == 1 {
			out = utf8.AppendRune(out, utf8.RuneError)
		} else {
			out = append(out, raw[i:i+n]...)
		}
		i += n
	}
	return out
}

// CheckTexts checks pairs of (field name, value) with CheckText.
func CheckTexts(what string, pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if err := CheckText(what+" "+pairs[i], pairs[i+1]); err != nil {
			return err
		}
	}
	return nil
}

// ValidKey reports whether s can name a member of an annotation's extra in
// a query: 1 to 64 ASCII letters, digits and underscores.
func ValidKey(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// PolicyIDs maps saved policies' names to their ids.
func PolicyIDs(ps []store.Policy) map[string]string {
	m := make(map[string]string, len(ps))
	for _, p := range ps {
		m[p.Name] = p.ID
	}
	return m
}

// TextHash names a distinct text of the search index: the first 16 bytes
// of its SHA-256.
type TextHash = search.TextHash

// IndexDoc is a trace's index document (its pieces' hashes in
// Doc.Hashes, computed by DistinctTexts when nil).
type IndexDoc struct {
	Doc *search.Doc
}

// DistinctTexts fills in missing hashes and returns the distinct texts of
// the documents by hash.
func DistinctTexts(docs []IndexDoc) map[TextHash]string {
	n := 0
	for _, d := range docs {
		n += len(d.Doc.Pieces)
	}
	texts := make(map[TextHash]string, n)
	for i := range docs {
		d := docs[i].Doc
		d.HashPieces()
		for k, p := range d.Pieces {
			texts[d.Hashes[k]] = p.Text
		}
	}
	return texts
}
