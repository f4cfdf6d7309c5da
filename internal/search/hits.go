package search

import (
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

func sortStrings(s []string) { sort.Strings(s) }

// Hits returns where the words occur in the pieces: for each piece in
// order, each non-overlapping occurrence of each word from left to right,
// as the piece's address with a code point range ("messages.3.content:12-17",
// counted from the start of the string at the address: a piece's At on),
// sorted by piece, then start, then end. Pieces and words are lower-cased.
func Hits(pieces []Piece, words []string) []string {
	var out []string
	type hit struct{ start, end int }
	for _, p := range pieces {
		var hs []hit
		for _, w := range words {
			if w == "" {
				continue
			}
			// Walk the byte offsets, counting code points as we go, so a
			// piece is scanned once per word however many hits it has.
			cp, at := 0, 0
			for from := 0; ; {
				k := strings.Index(p.Text[from:], w)
				if k < 0 {
					break
				}
				k += from
				cp += utf8.RuneCountInString(p.Text[at:k])
				n := utf8.RuneCountInString(w)
				hs = append(hs, hit{p.At + cp, p.At + cp + n})
				cp += n
				at = k + len(w)
				from = at
			}
		}
		sort.Slice(hs, func(i, j int) bool {
			if hs[i].start != hs[j].start {
				return hs[i].start < hs[j].start
			}
			return hs[i].end < hs[j].end
		})
		for i, h := range hs {
			if i > 0 && h == hs[i-1] {
				continue
			}
			out = append(out, p.Address+":"+strconv.Itoa(h.start)+"-"+strconv.Itoa(h.end))
		}
	}
	return out
}

// Props is what a query's filters ask of a trace beyond its index: the
// stored facts the store reads from its tables.
type Props struct {
	Dataset    string          // the dataset's name
	Events     int             // the trace's length
	Annotated  bool            // an annotation other than an analyzer result
	Violations map[string]bool // policy names with results on the trace; "" when any result
	// Scores are the values (JSON) of the trace's current scores, whatever
	// their address, by criterion name.
	Scores map[string][]string
}

// Match evaluates the query on one trace: the reference semantics the SQL
// of the backends must agree with (the store tests check that they do).
func (q *Query) Match(d *Doc, p Props) bool {
	if q.Root == nil {
		return true
	}
	return match(q.Root, d, p)
}

func match(n Node, d *Doc, p Props) bool {
	switch n := n.(type) {
	case And:
		for _, t := range n.Terms {
			if !match(t, d, p) {
				return false
			}
		}
		return true
	case Or:
		for _, t := range n.Terms {
			if match(t, d, p) {
				return true
			}
		}
		return false
	case Not:
		return !match(n.X, d, p)
	case Text:
		for _, pc := range d.Pieces {
			if strings.Contains(pc.Text, n.Value) {
				return true
			}
		}
		return false
	case Filter:
		switch n.Field {
		case "role", "tool", "kind", "session", "user":
			f := n.Field + ":" + n.Value
			for _, x := range d.Facets {
				if x == f {
					return true
				}
			}
			return false
		case "annotated":
			return p.Annotated
		case "violation":
			return p.Violations[n.Value]
		case "dataset":
			return p.Dataset == n.Value
		case "events":
			return compare(float64(p.Events), n.Op, n.Num)
		case "score":
			for _, v := range p.Scores[n.Key] {
				if x, ok := ScoreNumber(v); ok && compare(x, n.Op, n.Num) {
					return true
				}
			}
			return false
		case "verdict":
			pass, fail := false, false
			for _, v := range p.Scores[n.Key] {
				pass, fail = pass || v == "true", fail || v == "false"
			}
			if n.Value == "fail" {
				return fail
			}
			return pass && !fail
		case "meta":
			if n.Op == "!=" {
				eq := n
				eq.Op = "="
				return !match(eq, d, p)
			}
			for _, m := range d.Meta {
				if m.Key == n.Key && n.MetaHolds(m) {
					return true
				}
			}
			return false
		}
	}
	return false
}

// MetaHolds reports whether one metadata value satisfies a meta filter
// whose Op is not "!=".
func (f Filter) MetaHolds(m MetaValue) bool {
	switch f.Op {
	case "=":
		return m.Text == f.Value || f.IsNum && m.IsNum && m.Num == f.Num
	case "%":
		return strings.Contains(m.Text, f.Value)
	}
	return m.IsNum && compare(m.Num, f.Op, f.Num)
}

// ScoreNumber is the number a score's value (compact JSON) is, when it is
// one a float64 holds: score: compares no other.
func ScoreNumber(v string) (float64, bool) {
	if v == "" || v[0] != '-' && (v[0] < '0' || v[0] > '9') {
		return 0, false
	}
	x, err := strconv.ParseFloat(v, 64)
	return x, err == nil
}

func compare(a float64, op string, b float64) bool {
	switch op {
	case "=":
		return a == b
	case ">":
		return a > b
	case "<":
		return a < b
	case ">=":
		return a >= b
	case "<=":
		return a <= b
	}
	return false
}
