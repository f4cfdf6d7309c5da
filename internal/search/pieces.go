package search

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
	"unsafe"

	"github.com/lookout-dev/lookout/internal/jsonscan"
	"github.com/lookout-dev/lookout/internal/trace"
)

// IndexVersion names the shape of what Index returns. A store whose index
// was built with another version rebuilds it (lookout reindex).
const IndexVersion = 3 // 3: session and user facets

// Piece is one searchable string of a trace: Text is the string
// lower-cased rune by rune (so code point offsets in it are offsets in the
// original), at Address; or, for a span's string that holds JSON text,
// one of the strings in it as written there (escapes and all), At code
// points into the string at Address.
type Piece struct {
	Address string
	Text    string
	At      int
}

// MetaValue is one scalar of a trace's metadata: Key is its path (object
// keys joined by "."; every element of an array sits at the array's key),
// Text its lower-cased text (a string as is, other scalars as JSON), Num its
// value when it is a number.
type MetaValue struct {
	Key   string
	Text  string
	Num   float64
	IsNum bool
}

// Doc is what the index keeps of one trace.
type Doc struct {
	Pieces []Piece
	Facets []string // "role:user", "tool:get_order", "kind:retrieval", "session:s1", "user:u1", lower-cased, each once
	Meta   []MetaValue
	// Hashes: each piece's TextHash (HashPieces), nil until computed.
	Hashes []TextHash
}

// TextHash names a distinct text of the index: the first 16 bytes of its
// SHA-256.
type TextHash [16]byte

// HashPieces sets d.Hashes, if not set, hashing each distinct text of the
// pieces once (a trace repeats its texts: a conversation's history is in
// each of its model calls).
func (d *Doc) HashPieces() {
	if d.Hashes != nil || len(d.Pieces) == 0 {
		return
	}
	hs := make([]TextHash, len(d.Pieces))
	at := make(map[string]int, len(d.Pieces))
	for i, p := range d.Pieces {
		if k, ok := at[p.Text]; ok {
			hs[i] = hs[k]
			continue
		}
		at[p.Text] = i
		hs[i] = hashText(p.Text)
	}
	d.Hashes = hs
}

func hashText(s string) TextHash {
	sum := sha256.Sum256(unsafe.Slice(unsafe.StringData(s), len(s)))
	return TextHash(sum[:16])
}

// Lower lower-cases s rune by rune, keeping the number of code points: it
// is strings.ToLower (an invalid byte becomes U+FFFD), with a faster path
// for ASCII. Lower-casing every text was a third of Index's time.
func Lower(s string) string {
	i := 0
	for i < len(s) && s[i] < utf8.RuneSelf && !('A' <= s[i] && s[i] <= 'Z') {
		i++
	}
	if i == len(s) {
		return s
	}
	if s[i] >= utf8.RuneSelf {
		return lowerFrom(append(make([]byte, 0, len(s)+utf8.UTFMax), s[:i]...), s, i)
	}
	b := []byte(s)
	for j := i; j < len(b); j++ {
		c := b[j]
		if c >= utf8.RuneSelf {
			return lowerFrom(b[:j], s, j)
		}
		if 'A' <= c && c <= 'Z' {
			b[j] = c + 'a' - 'A'
		}
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// lowerFrom appends to b, which holds s[:i] lower-cased, the rest of s
// lower-cased rune by rune; s itself when nothing changes.
func lowerFrom(b []byte, s string, i int) string {
	changed := string(b) != s[:i]
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
				changed = true
			}
			b = append(b, c)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if l := unicode.ToLower(r); l != r || r == utf8.RuneError && size == 1 {
			b = utf8.AppendRune(b, l)
			changed = true
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	if !changed {
		return s
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// Index extracts the searchable pieces, facets and metadata of a trace:
// each event's content (each text part of a list), each tool call's name
// and the strings in its arguments (the arguments themselves when they are
// an unparsed string); each span's name and the strings in its attributes,
// inputs, outputs and value; its session and user (trace.SessionAndUser)
// as facets.
func Index(t *trace.Trace) Doc {
	return index(t, false, nil)
}

// IndexTexts is Index without the pieces' addresses, which the search
// index does not keep (a search finds where its hits are in the traces it
// shows): building them was a quarter of Index's time.
func IndexTexts(t *trace.Trace) Doc {
	return index(t, true, nil)
}

// IndexHashed is IndexTexts with the pieces' hashes (HashPieces), a text
// met before in c lower-cased and hashed no more: an indexer's batch of
// traces repeats its system prompts, tool descriptions and outputs.
func IndexHashed(t *trace.Trace, c TextCache) Doc {
	return index(t, true, c)
}

// TextCache maps a text as a trace holds it to its lower-cased form and
// that form's TextHash (a new map for each batch of traces: it keeps their
// strings).
type TextCache map[string]HashedText

// HashedText is a text lower-cased and hashed.
type HashedText struct {
	Lower string
	Hash  TextHash
}

func index(t *trace.Trace, noAddr bool, c TextCache) Doc {
	b := docBuilder{noAddr: noAddr, cache: c}
	// Sized for what agents' traces hold (GenAI spans about 20 pieces a
	// span, events one or two), within a bound: growing from nothing
	// copied the pieces ten times over.
	hint := min(2*len(t.Events)+20*len(t.Spans), maxPiecesHint)
	b.d.Pieces = make([]Piece, 0, hint)
	if c != nil {
		b.d.Hashes = make([]TextHash, 0, hint)
	}
	b.events(t.Events, 0)
	b.spans(t.Spans)
	session, user := trace.SessionAndUser(t.Metadata)
	b.facet("session", session)
	b.facet("user", user)
	b.d.Meta = Meta(t.Metadata)
	return b.d
}

// maxPiecesHint bounds the pieces a document is sized for before it is
// walked (a trace of many spans with few texts would waste the rest).
const maxPiecesHint = 4096

type docBuilder struct {
	d      Doc
	seen   map[string]bool
	noAddr bool      // pieces without their addresses
	cache  TextCache // nil: the pieces are not hashed
	// viewing: the strings given to piece are views of the trace's JSON
	// or of scratch (walk), copied before they are kept.
	viewing bool
	scratch []byte

	// The scans of walk and of textStrings, and their callbacks, made once
	// a trace rather than once a string (they escape to the heap): what
	// the callbacks work on is set in the fields below before each scan.
	values, texts   jsonscan.Scanner
	onValue, onText func(raw []byte, escaped bool)
	valueRaw        []byte
	valueBase       trace.Address
	valueAdd        func(trace.Address, string)
	text            struct {
		s         string
		data      []byte
		a         trace.Address
		addr      string
		addressed bool
		cp, at    int // code points in s[:at]
	}
}

// piece appends a piece of the text s (as the trace holds it).
func (b *docBuilder) piece(addr, s string, at int) {
	if b.cache == nil {
		if b.viewing {
			s = strings.Clone(s)
		}
		b.d.Pieces = append(b.d.Pieces, Piece{Address: addr, Text: Lower(s), At: at})
		return
	}
	h, ok := b.cache[s]
	if !ok {
		if b.viewing {
			s = strings.Clone(s)
		}
		h.Lower = Lower(s)
		h.Hash = hashText(h.Lower)
		b.cache[s] = h
	}
	b.d.Pieces = append(b.d.Pieces, Piece{Address: addr, Text: h.Lower, At: at})
	b.d.Hashes = append(b.d.Hashes, h.Hash)
}

func (b *docBuilder) facet(kind, v string) {
	if v == "" {
		return
	}
	f := kind + ":" + Lower(v)
	if b.seen == nil {
		b.seen = map[string]bool{}
	}
	if !b.seen[f] {
		b.seen[f] = true
		b.d.Facets = append(b.d.Facets, f)
	}
}

func (b *docBuilder) add(a trace.Address, s string) {
	if s != "" {
		b.piece(b.address(a), s, 0)
	}
}

func (b *docBuilder) address(a trace.Address) string {
	if b.noAddr {
		return ""
	}
	return a.String()
}

// walk is walkStrings, with paths only when the pieces have addresses.
// Without them, the strings are given in the order they are written, in
// the pass that checks raw is JSON (jsonscan's Strings): the pieces' order
// does not matter then, and the member order walkStrings keeps cost a pass
// over each object's values for every level it nests in (over half of
// indexing an agent's spans).
func (b *docBuilder) walk(raw json.RawMessage, base trace.Address, add func(trace.Address, string)) {
	if !b.noAddr {
		walkStringsAt(raw, base, add, true)
		return
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return
	}
	if b.onValue == nil {
		b.onValue = b.value
	}
	// What the scan added goes again if raw is not one JSON value.
	pieces, hashes := len(b.d.Pieces), len(b.d.Hashes)
	b.valueRaw, b.valueBase, b.valueAdd = raw, base, add
	b.viewing = true
	b.values.Reset(raw)
	err := b.values.Strings(b.onValue)
	b.viewing = false
	if err != nil || b.values.End() != nil {
		b.d.Pieces, b.d.Hashes = b.d.Pieces[:pieces], b.d.Hashes[:hashes]
		walkDecoded(raw, base, add)
	}
}

// value gives walk's add a string value v of b.valueRaw, unescaped.
func (b *docBuilder) value(v []byte, escaped bool) {
	switch {
	case len(v) == 0:
	case escaped:
		// As jsonscan reads it (surrogates, invalid UTF-8).
		at := cap(b.valueRaw) - cap(v) // v's offset, between its quotes
		b.scratch, _ = jsonscan.AppendUnescaped(b.scratch[:0], b.valueRaw[at-1:at+len(v)+1])
		b.valueAdd(b.valueBase, unsafe.String(unsafe.SliceData(b.scratch), len(b.scratch)))
	case !utf8.Valid(v):
		b.valueAdd(b.valueBase, jsonscan.ValidUTF8(v))
	default:
		b.valueAdd(b.valueBase, unsafe.String(unsafe.SliceData(v), len(v)))
	}
}

func (b *docBuilder) events(events []trace.Event, first int) {
	for k := range events {
		e, i := &events[k], first+k
		b.facet("role", e.Role)
		switch e.Content.Kind {
		case trace.ContentText:
			b.add(trace.EventAddress(i, "content"), e.Content.Text)
		case trace.ContentParts:
			for k, p := range e.Content.Parts {
				if p.Type == "text" {
					b.add(trace.EventAddress(i, "content", strconv.Itoa(k), "text"), p.Text)
				}
			}
		}
		for j := range e.ToolCalls {
			f := &e.ToolCalls[j].Function
			b.facet("tool", f.Name)
			b.add(trace.EventAddress(i, "tool_calls", strconv.Itoa(j), "function", "name"), f.Name)
			b.walk(f.Arguments, trace.EventAddress(i, "tool_calls", strconv.Itoa(j), "function", "arguments"), b.add)
		}
	}
}

// spans indexes the spans' strings. A string of a span that holds a JSON
// object or array (OpenTelemetry's gen_ai.input.messages, a tool's result,
// an instrumentation's input.value) is searched by the strings inside it,
// not by its JSON syntax: its messages are the trace's events already, so
// those strings are texts the index holds, where the whole JSON, unique to
// the span by its ids and the history agents resend on every call, was
// most of the text indexed from an agent's spans (the trigram index's
// cost grows with it).
func (b *docBuilder) spans(spans []trace.Span) {
	for i := range spans {
		s := &spans[i]
		b.facet("kind", s.Kind)
		b.add(trace.SpanAddress(s.ID, "name"), s.Name)
		b.walk(s.Attributes, trace.SpanAddress(s.ID, "attributes"), b.addSpanString)
		b.walk(s.Inputs, trace.SpanAddress(s.ID, "inputs"), b.addSpanString)
		b.walk(s.Outputs, trace.SpanAddress(s.ID, "outputs"), b.addSpanString)
		b.walk(s.Value, trace.SpanAddress(s.ID, "value"), b.addSpanString)
	}
}

func (b *docBuilder) addSpanString(a trace.Address, s string) {
	pieces, hashes := len(b.d.Pieces), len(b.d.Hashes)
	if b.textStrings(a, s) {
		return
	}
	b.d.Pieces, b.d.Hashes = b.d.Pieces[:pieces], b.d.Hashes[:hashes]
	b.add(a, s)
}

// textStrings adds, at a, each string value (not object key) of s as
// written between its quotes, at the code point offset in s where it
// starts, empty ones left out; it reports whether s is a JSON object or
// array, whole (when it is not, it may have added pieces before that was
// known).
func (b *docBuilder) textStrings(a trace.Address, s string) bool {
	i := 0
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	if i == len(s) || s[i] != '{' && s[i] != '[' {
		return false
	}
	if b.onText == nil {
		b.onText = b.textString
	}
	t := &b.text
	t.s, t.data, t.a, t.addr, t.addressed, t.cp, t.at = s, unsafe.Slice(unsafe.StringData(s), len(s)), a, "", false, 0, 0
	b.texts.Reset(t.data)
	return b.texts.Strings(b.onText) == nil && b.texts.End() == nil
}

// textString adds a string value raw of b.text.s.
func (b *docBuilder) textString(raw []byte, _ bool) {
	if len(raw) == 0 {
		return
	}
	t := &b.text
	at := cap(t.data) - cap(raw)
	t.cp += utf8.RuneCount(t.data[t.at:at])
	t.at = at
	if !t.addressed {
		t.addr, t.addressed = b.address(t.a), true
	}
	b.piece(t.addr, t.s[at:at+len(raw)], t.cp)
}

// walkStrings calls add for every string in the JSON value raw, at its path
// below base, object members in key order (a repeated key: its last value,
// as a decoded map has it). A value that is not JSON (arguments kept raw) is
// one string.
func walkStrings(raw json.RawMessage, base trace.Address, add func(trace.Address, string)) {
	walkStringsAt(raw, base, add, true)
}

// walkStringsAt is walkStrings; without paths, add is given base alone.
func walkStringsAt(raw json.RawMessage, base trace.Address, add func(trace.Address, string), paths bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return
	}
	// jsonscan reads in place; encoding/json, which a value with more after
	// it is left to, decoded into maps at four times the cost (an eighth of
	// the CPU of OpenTelemetry ingest).
	if s := jsonscan.New(raw); s.Skip() == nil && s.End() == nil {
		w := stringWalker{s: jsonscan.New(raw), base: base, add: add, paths: paths}
		w.value()
		return
	}
	walkDecoded(raw, base, add)
}

// walkDecoded is walkStrings by encoding/json, for input that jsonscan does
// not read whole.
func walkDecoded(raw json.RawMessage, base trace.Address, add func(trace.Address, string)) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		add(base, string(raw))
		return
	}
	var walk func(v any, path []string)
	walk = func(v any, path []string) {
		switch v := v.(type) {
		case string:
			a := base
			a.Path = append(append([]string(nil), base.Path...), path...)
			add(a, v)
		case []any:
			for i, x := range v {
				walk(x, append(path, strconv.Itoa(i)))
			}
		case map[string]any:
			for _, k := range sortedKeys(v) {
				walk(v[k], append(path, k))
			}
		}
	}
	walk(v, nil)
}

// stringWalker walks a well-formed JSON value with jsonscan.
type stringWalker struct {
	s     *jsonscan.Scanner
	base  trace.Address
	add   func(trace.Address, string)
	path  []string
	paths bool // keep path (else add is given base)
}

// sortedMembers reads the object at the scanner's position, which was read
// whole before, calling fn for each member in key order (of a repeated key,
// the last, as a decoded map keeps it) with the scanner on its value; it
// leaves the scanner after the object.
func sortedMembers(s *jsonscan.Scanner, fn func(key string)) {
	var ms []member
	s.Object(func(key string) error {
		ms = append(ms, member{key, s.Offset()})
		return s.Skip()
	})
	end := s.Offset()
	slices.SortStableFunc(ms, func(a, b member) int { return strings.Compare(a.key, b.key) })
	for i, m := range ms {
		if i+1 < len(ms) && ms[i+1].key == m.key {
			continue
		}
		s.Seek(m.at)
		fn(m.key)
	}
	s.Seek(end)
}

// member is an object member: its key and where its value starts.
type member struct {
	key string
	at  int
}

// value walks the value at the scanner's position. The input was checked
// whole, so the scanner's errors cannot occur and are not looked at.
func (w *stringWalker) value() {
	s := w.s
	switch s.Peek() {
	case jsonscan.String:
		v, _ := s.String("")
		a := w.base
		if w.paths {
			a.Path = append(append([]string(nil), w.base.Path...), w.path...)
		}
		w.add(a, v)
	case jsonscan.Array:
		s.Array(func(i int) error {
			if !w.paths {
				w.value()
				return nil
			}
			w.path = append(w.path, strconv.Itoa(i))
			w.value()
			w.path = w.path[:len(w.path)-1]
			return nil
		})
	case jsonscan.Object:
		sortedMembers(s, func(key string) {
			w.path = append(w.path, key)
			w.value()
			w.path = w.path[:len(w.path)-1]
		})
	default:
		s.Skip()
	}
}

// MaxMetaDepth is how many keys deep the index reads metadata.
const MaxMetaDepth = 3

// Meta flattens a metadata object into the scalars filters can name: those
// at most MaxMetaDepth keys deep ("info.task.user_id"), and the scalar
// elements of arrays there ("tags" = each tag). Objects inside arrays, and
// anything deeper, are left out: agent metadata nests whole records (a
// benchmark task's expected actions, say) that would multiply the rows.
// Keys come in sorted order; of a repeated key, the last value counts (as
// in a decoded map).
func Meta(raw json.RawMessage) []MetaValue {
	// jsonscan skips what is left out without decoding it; decoding the
	// whole object into maps was a quarter of Index's time.
	s := jsonscan.New(raw)
	if s.Peek() != jsonscan.Object || s.Skip() != nil {
		return metaDecoded(raw)
	}
	s.Seek(0)
	w := metaWalker{s: s}
	w.value("", 0)
	return w.out
}

// metaWalker walks a metadata object that jsonscan has read whole, so the
// scanner's errors cannot occur and are not looked at.
type metaWalker struct {
	s   *jsonscan.Scanner
	out []MetaValue
}

// value reads the value at the scanner's position, at key, depth keys deep.
func (w *metaWalker) value(key string, depth int) {
	s := w.s
	switch s.Peek() {
	case jsonscan.Object:
		if depth >= MaxMetaDepth {
			s.Skip()
			return
		}
		sortedMembers(s, func(k string) {
			if depth > 0 {
				k = key + "." + k
			}
			w.value(k, depth+1)
		})
	case jsonscan.Array:
		if depth == 0 {
			s.Skip()
			return
		}
		s.Array(func(int) error {
			if k := s.Peek(); k == jsonscan.Array || k == jsonscan.Object {
				return s.Skip()
			}
			w.value(key, depth)
			return nil
		})
	case jsonscan.String:
		v, _ := s.String("")
		w.out = append(w.out, MetaValue{Key: key, Text: Lower(v)})
	case jsonscan.Number:
		v, _ := s.NumberText("")
		n, err := strconv.ParseFloat(v, 64)
		w.out = append(w.out, MetaValue{Key: key, Text: v, Num: n, IsNum: err == nil})
	case jsonscan.Bool:
		v, _ := s.Bool("")
		w.out = append(w.out, MetaValue{Key: key, Text: strconv.FormatBool(v)})
	case jsonscan.Null:
		s.Null()
		w.out = append(w.out, MetaValue{Key: key, Text: "null"})
	default:
		s.Skip()
	}
}

// metaDecoded is Meta by encoding/json, for input that jsonscan does not
// read whole.
func metaDecoded(raw json.RawMessage) []MetaValue {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if len(bytes.TrimSpace(raw)) == 0 || dec.Decode(&v) != nil {
		return nil
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	var out []MetaValue
	var walk func(v any, key string, depth int)
	walk = func(v any, key string, depth int) {
		switch v := v.(type) {
		case map[string]any:
			if depth < MaxMetaDepth {
				for _, k := range sortedKeys(v) {
					walk(v[k], key+"."+k, depth+1)
				}
			}
		case []any:
			for _, x := range v {
				switch x.(type) {
				case []any, map[string]any:
				default:
					walk(x, key, depth)
				}
			}
		case string:
			out = append(out, MetaValue{Key: key, Text: Lower(v)})
		case json.Number:
			n, err := strconv.ParseFloat(string(v), 64)
			out = append(out, MetaValue{Key: key, Text: string(v), Num: n, IsNum: err == nil})
		case bool:
			out = append(out, MetaValue{Key: key, Text: strconv.FormatBool(v)})
		case nil:
			out = append(out, MetaValue{Key: key, Text: "null"})
		}
	}
	for _, k := range sortedKeys(obj) {
		walk(obj[k], k, 1)
	}
	return out
}

func sortedKeys(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sortStrings(ks)
	return ks
}
