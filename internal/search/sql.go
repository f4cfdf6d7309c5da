package search

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Dialect is what differs between the store backends in the SQL a query
// compiles to. Both keep these index tables:
//
//	search_texts  (id, hash, text)                each distinct Piece text once
//	search_pieces (trace_id, address, text_id)    one row per Piece
//	search_facets (trace_id, facet)               one row per facet
//	search_meta   (trace_id, key, text, num)      one row per MetaValue
type Dialect interface {
	// Placeholder returns the placeholder of the n-th argument (1-based).
	Placeholder(n int) string
	// IndexedTraces returns a query of the trace ids with a piece that
	// contains word (at least MinIndexed code points), answered from the
	// full-text index, with the argument it takes (its one "?").
	IndexedTraces(word string) (sql string, arg any)
	// ScanTrace returns a condition that trace t has a piece containing the
	// text of the placeholder, tested on the trace's own pieces.
	ScanTrace(placeholder string) string
	// Contains returns a condition that column contains the text of the
	// placeholder (a substring test).
	Contains(column, placeholder string) string
	// ExtraMember returns an expression of the string member key of the
	// JSON object in column.
	ExtraMember(column, key string) string
}

// MinIndexed is the shortest text the trigram indexes can answer.
const MinIndexed = 3

// Plan is how the store should answer the text terms of a query: a text in
// Scan is tested trace by trace on the pieces (common texts, where the
// first page comes soon); the others go through the index.
type Plan struct {
	Scan map[string]bool
	// PolicyIDs maps the policy names the query names to saved policy ids.
	PolicyIDs map[string]string
	// Dataset is the name of the dataset searched, for dataset:name.
	Dataset string
}

// Compile turns the query into a condition on the traces table (aliased t)
// with its arguments, numbered from first.
func (q *Query) Compile(d Dialect, plan Plan, first int) (string, []any, error) {
	if q.Root == nil {
		return "1=1", nil, nil
	}
	c := &compiler{d: d, plan: plan, n: first - 1}
	s, err := c.node(q.Root)
	return s, c.args, err
}

type compiler struct {
	d    Dialect
	plan Plan
	args []any
	n    int
}

func (c *compiler) arg(v any) string {
	c.args = append(c.args, v)
	c.n++
	return c.d.Placeholder(c.n)
}

func (c *compiler) node(n Node) (string, error) {
	switch n := n.(type) {
	case And, Or:
		terms, op := []Node(nil), " AND "
		if a, ok := n.(And); ok {
			terms = a.Terms
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
		if c.plan.Scan[n.Value] || utf8.RuneCountInString(n.Value) < MinIndexed {
			return c.d.ScanTrace(c.arg(n.Value)), nil
		}
		sub, arg := c.d.IndexedTraces(n.Value)
		sub = strings.Replace(sub, "?", c.arg(arg), 1)
		return "t.id IN (" + sub + ")", nil
	case Filter:
		return c.filter(n)
	}
	return "", fmt.Errorf("search: unknown node %T", n)
}

func (c *compiler) filter(f Filter) (string, error) {
	switch f.Field {
	case "role", "tool", "kind":
		return "t.id IN (SELECT trace_id FROM search_facets WHERE facet = " + c.arg(f.Field+":"+f.Value) + ")", nil
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
		return "EXISTS (SELECT 1 FROM annotations a WHERE a.trace_id = t.id AND a.source = 'analyzer' AND " +
			c.d.ExtraMember("a.extra", "policy_id") + " = " + c.arg(id) + ")", nil
	case "dataset":
		if f.Value == c.plan.Dataset {
			return "1=1", nil
		}
		return "1=0", nil
	case "events":
		return "t.event_count " + f.Op + " " + c.arg(int64(f.Num)), nil
	case "meta":
		neg, key := "", c.arg(f.Key) // placeholders in the order they appear
		var cond string
		switch f.Op {
		case "=", "!=":
			if f.Op == "!=" {
				neg = "NOT "
			}
			// The prefix is what the index holds (see the migrations).
			cond = "substr(text, 1, 200) = substr(" + c.arg(f.Value) + ", 1, 200) AND text = " + c.arg(f.Value)
			if f.IsNum {
				cond = "(" + cond + " OR num = " + c.arg(f.Num) + ")"
			}
		case "%":
			cond = c.d.Contains("text", c.arg(f.Value))
		default:
			cond = "num " + f.Op + " " + c.arg(f.Num)
		}
		return neg + "t.id IN (SELECT trace_id FROM search_meta WHERE key = " + key + " AND " + cond + ")", nil
	}
	return "", fmt.Errorf("search: unknown filter %q", f.Field)
}

// Texts returns every text term of the query that the index could answer
// (long enough), each once: the ones whose commonness the store measures
// to choose a Plan.
func (q *Query) Texts() []string {
	var out []string
	seen := map[string]bool{}
	var walk func(n Node)
	walk = func(n Node) {
		switch n := n.(type) {
		case And:
			for _, t := range n.Terms {
				walk(t)
			}
		case Or:
			for _, t := range n.Terms {
				walk(t)
			}
		case Not:
			walk(n.X)
		case Text:
			if !seen[n.Value] && utf8.RuneCountInString(n.Value) >= MinIndexed {
				seen[n.Value] = true
				out = append(out, n.Value)
			}
		}
	}
	if q.Root != nil {
		walk(q.Root)
	}
	return out
}

// LikePattern escapes s for LIKE ... ESCAPE '\' and wraps it in %.
func LikePattern(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(s) + "%"
}
