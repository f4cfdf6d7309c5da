package search

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// Dialect is what differs between the store backends in the SQL a query
// compiles to. Placeholders are "?" throughout (a backend that numbers them
// renumbers the finished statement). Both keep these index tables, and
// their own tables from traces to texts (IndexedTraces, ScanTrace):
//
//	search_texts  (id, hash, text)                each distinct Piece text once
//	search_facets (facet, trace_id)               one row per facet
//	search_meta   (id, trace_id, key, text, num)  one row per MetaValue
type Dialect interface {
	// IndexedTraces returns a query of the trace ids with a piece that
	// contains word (at least MinIndexed code points), answered from the
	// full-text index, with the argument of its one "?".
	IndexedTraces(word string) (sql string, arg any)
	// ScanTrace returns a condition that trace t has a piece containing
	// the text of its one "?", tested on the trace's own pieces.
	ScanTrace() string
	// Contains returns a condition that column contains the text of its
	// one "?" (a substring test).
	Contains(column string) string
	// ExtraMember returns an expression of the string member key of the
	// JSON object in column.
	ExtraMember(column, key string) string
	// JSONNumber returns an expression of the number the JSON text in
	// column is, when it is a number within float64's range; NULL when it
	// is not (a boolean, a string, too large).
	JSONNumber(column string) string
	// TraceMeta returns the FROM and WHERE (no keywords before the first
	// table) of the search_meta rows m of trace t whose key is the text of
	// its one "?": a trace's rows are listed by its row of search_traces.
	TraceMeta() string
}

// MinIndexed is the shortest text the trigram indexes can answer.
const MinIndexed = 3

// Leaf is a term the index answers with a set of traces: a text, a facet
// (role, tool, kind) or a metadata test. Set selects the ids of the traces
// (some maybe more than once) of every dataset that satisfy it.
type Leaf struct {
	Key  string
	Set  string
	Args []any
	Word string // the text of a text leaf, else ""
}

// Plan is what the store learned before compiling: which leaves are common
// (the store counted their rows, up to a bound), the saved policies the
// query names, the dataset's name.
type Plan struct {
	// Common leaves, by Key, are tested trace by trace in index order,
	// where a first page comes soon; the others are collected as sets.
	Common map[string]bool
	// Sets, by Key, replace the Set of leaves: the store may give a cheaper
	// form it learned while counting (the texts that hold a word, say), so
	// that the full-text index is not asked again for each use.
	Sets map[string]Leaf
	// PolicyIDs maps the policy names the query names to saved policy ids.
	PolicyIDs map[string]string
	// Dataset is the name of the dataset searched, for dataset:name.
	Dataset string
}

// Compiled is a query as SQL over the traces table (aliased t): Cond with
// Args; and when a rare leaf must hold for any trace to match, Driver (with
// DriverArgs) selects the distinct trace ids that satisfy it, a small set
// to start from instead of every trace of the dataset.
type Compiled struct {
	Cond       string
	Args       []any
	Driver     string
	DriverArgs []any
}

// Leaves returns the query's leaves, each once.
func (q *Query) Leaves(d Dialect) []Leaf {
	var out []Leaf
	seen := map[string]bool{}
	q.visit(func(n Node, _ bool) {
		if l, ok := leaf(d, n); ok && !seen[l.Key] {
			seen[l.Key] = true
			out = append(out, l)
		}
	})
	return out
}

// leaf returns the leaf a term is (meta != is the leaf of its = test).
func leaf(d Dialect, n Node) (Leaf, bool) {
	switch n := n.(type) {
	case Text:
		if utf8.RuneCountInString(n.Value) < MinIndexed {
			return Leaf{}, false
		}
		sql, arg := d.IndexedTraces(n.Value)
		return Leaf{Key: "text " + n.Value, Set: sql, Args: []any{arg}, Word: n.Value}, true
	case Filter:
		switch n.Field {
		case "role", "tool", "kind", "session", "user":
			f := n.Field + ":" + n.Value
			return Leaf{Key: "facet " + f, Set: "SELECT trace_id FROM search_facets WHERE facet = ?", Args: []any{f}}, true
		case "meta":
			if n.Op == "!=" {
				n.Op = "="
			}
			cond, args := metaCond(d, n)
			return Leaf{Key: "meta " + n.String(), Set: "SELECT trace_id FROM search_meta WHERE key = ? AND " + cond,
				Args: append([]any{n.Key}, args...)}, true
		}
	}
	return Leaf{}, false
}

// metaCond is the test of one search_meta row for a meta filter whose Op
// is not "!=".
func metaCond(d Dialect, f Filter) (string, []any) {
	switch f.Op {
	case "=":
		// The prefix is what the index holds (see the migrations).
		cond, args := "substr(text, 1, 200) = substr(?, 1, 200) AND text = ?", []any{f.Value, f.Value}
		if f.IsNum {
			return "(" + cond + " OR num = ?)", append(args, f.Num)
		}
		return cond, args
	case "%":
		return d.Contains("text"), []any{f.Value}
	}
	return "num " + f.Op + " ?", []any{f.Num}
}

// Compile turns the query into SQL.
func (q *Query) Compile(d Dialect, plan Plan) (Compiled, error) {
	if q.Root == nil {
		return Compiled{Cond: "1=1"}, nil
	}
	c := &compiler{d: d, plan: plan}
	cond, err := c.node(q.Root)
	if err != nil {
		return Compiled{}, err
	}
	out := Compiled{Cond: cond, Args: c.args}
	// A rare leaf that every match must satisfy drives the search.
	terms := []Node{q.Root}
	if a, ok := q.Root.(And); ok {
		terms = a.Terms
	}
	for _, t := range terms {
		if f, ok := t.(Filter); ok && f.Op == "!=" {
			continue
		}
		if l, ok := leaf(d, t); ok && !plan.Common[l.Key] {
			l = plan.resolve(l)
			out.Driver, out.DriverArgs = "SELECT DISTINCT trace_id FROM ("+l.Set+") d", l.Args
			break
		}
	}
	return out, nil
}

type compiler struct {
	d    Dialect
	plan Plan
	args []any
}

func (c *compiler) node(n Node) (string, error) {
	switch n := n.(type) {
	case And, Or:
		terms, op := []Node(nil), " AND "
		if a, ok := n.(And); ok {
			// Cheap tests first: a trace that fails a filter is never
			// scanned for a text.
			terms = append([]Node(nil), a.Terms...)
			sort.SliceStable(terms, func(i, j int) bool { return cost(terms[i]) < cost(terms[j]) })
		} else {
			terms, op = n.(Or).Terms, " OR "
		}
		parts := make([]string, len(terms))
		for i, t := range terms {
			s, err := c.node(t)
			if err != nil {
				return "", err
			}
			parts[i] = s
		}
		return "(" + strings.Join(parts, op) + ")", nil
	case Not:
		s, err := c.node(n.X)
		if err != nil {
			return "", err
		}
		return "NOT " + s, nil
	case Text:
		l, ok := leaf(c.d, n)
		if !ok || c.plan.Common[l.Key] {
			c.args = append(c.args, n.Value)
			return c.d.ScanTrace(), nil
		}
		return c.in(l), nil
	case Filter:
		return c.filter(n)
	}
	return "", fmt.Errorf("search: unknown node %T", n)
}

// cost ranks a term by the work of testing one trace: texts (scanned)
// last.
func cost(n Node) int {
	switch n := n.(type) {
	case Filter:
		return 0
	case Not:
		return cost(n.X)
	case Text:
		return 2
	}
	return 1
}

// resolve is l, or the set the store gave for it.
func (p Plan) resolve(l Leaf) Leaf {
	if s, ok := p.Sets[l.Key]; ok {
		return s
	}
	return l
}

// in is the set form of a rare leaf.
func (c *compiler) in(l Leaf) string {
	l = c.plan.resolve(l)
	c.args = append(c.args, l.Args...)
	return "t.id IN (" + l.Set + ")"
}

func (c *compiler) filter(f Filter) (string, error) {
	switch f.Field {
	case "role", "tool", "kind", "session", "user":
		l, _ := leaf(c.d, f)
		if c.plan.Common[l.Key] {
			c.args = append(c.args, l.Args...)
			return "EXISTS (SELECT 1 FROM search_facets f WHERE f.facet = ? AND f.trace_id = t.id)", nil
		}
		return c.in(l), nil
	case "annotated":
		return "EXISTS (SELECT 1 FROM annotations a WHERE a.trace_id = t.id AND a.source <> 'analyzer')", nil
	case "violation":
		if f.Value == "" {
			return "EXISTS (SELECT 1 FROM annotations a WHERE a.trace_id = t.id AND a.source = 'analyzer')", nil
		}
		id, ok := c.plan.PolicyIDs[f.Value]
		if !ok {
			return "", &Error{Pos: f.Pos, Msg: fmt.Sprintf("this dataset has no saved policy named %q", f.Value)}
		}
		c.args = append(c.args, id)
		return "EXISTS (SELECT 1 FROM annotations a WHERE a.trace_id = t.id AND a.source = 'analyzer' AND " +
			c.d.ExtraMember("a.extra", "policy_id") + " = ?)", nil
	case "dataset":
		if f.Value == c.plan.Dataset {
			return "1=1", nil
		}
		return "1=0", nil
	case "events":
		c.args = append(c.args, int64(f.Num))
		return "t.event_count " + f.Op + " ?", nil
	case "score":
		c.args = append(c.args, f.Key, f.Num)
		return "EXISTS (SELECT 1 FROM scores s WHERE s.trace_id = t.id AND s.current AND s.criterion = ? AND " +
			c.d.JSONNumber("s.value") + " " + f.Op + " ?)", nil
	case "verdict":
		// As the evaluation summary counts a trace: it fails when any of
		// its scores on the criterion (one a step) is false.
		has := "EXISTS (SELECT 1 FROM scores s WHERE s.trace_id = t.id AND s.current AND s.criterion = ? AND s.value = ?)"
		if f.Value == "fail" {
			c.args = append(c.args, f.Key, "false")
			return has, nil
		}
		c.args = append(c.args, f.Key, "true", f.Key, "false")
		return "(" + has + " AND NOT " + has + ")", nil
	case "meta":
		neg := ""
		if f.Op == "!=" {
			neg = "NOT "
		}
		l, _ := leaf(c.d, f)
		if c.plan.Common[l.Key] {
			eq := f
			if eq.Op == "!=" {
				eq.Op = "="
			}
			cond, args := metaCond(c.d, eq)
			c.args = append(append(c.args, f.Key), args...)
			return neg + "EXISTS (SELECT 1 FROM " + c.d.TraceMeta() + " AND " + cond + ")", nil
		}
		return neg + c.in(l), nil
	}
	return "", fmt.Errorf("search: unknown filter %q", f.Field)
}

// Texts returns every text term of the query that the index could answer
// (long enough), each once.
func (q *Query) Texts() []string {
	var out []string
	seen := map[string]bool{}
	q.visit(func(n Node, _ bool) {
		if t, ok := n.(Text); ok && !seen[t.Value] && utf8.RuneCountInString(t.Value) >= MinIndexed {
			seen[t.Value] = true
			out = append(out, t.Value)
		}
	})
	return out
}

// LikePattern escapes s for LIKE ... ESCAPE '\' and wraps it in %.
func LikePattern(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(s) + "%"
}

// Numbered rewrites the "?" placeholders of a statement as $1, $2, ...
// (the statements this package makes have no "?" inside literals).
func Numbered(sql string) string {
	var b strings.Builder
	n := 0
	for i := 0; i < len(sql); i++ {
		if sql[i] == '?' {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteByte(sql[i])
	}
	return b.String()
}
