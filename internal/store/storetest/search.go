package storetest

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/lookout-dev/lookout/internal/search"
	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/trace"
)

// SearchQueries are the conformance queries over the corpus dataset the
// search suite builds (see corpusSearchDataset), read from
// testdata/search_queries.txt.
var SearchQueries = func() []string {
	var qs []string
	for line := range strings.SplitSeq(searchQueriesFile, "\n") {
		if line != "" && !strings.HasPrefix(line, "#") {
			qs = append(qs, line)
		}
	}
	return qs
}()

//go:embed testdata/search_queries.txt
var searchQueriesFile string

func testSearchConformance(t *testing.T, open func(t *testing.T) store.Store) {
	e := newEnv(t, open)
	d, ids := corpusSearchDataset(e)
	brute := e.bruteForce(d, ids)
	nontrivial := 0
	for _, src := range SearchQueries {
		q, err := search.Parse(src)
		if err != nil {
			t.Fatalf("Parse(%q): %v", src, err)
		}
		want := brute.run(q)
		// Each term collected as a set (the default here: the corpus is
		// small), then each tested trace by trace.
		got := e.searchAll(d.ID, q, 37, 0)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("query %q:\n got %s\nwant %s", src, describe(got), describe(want))
			continue
		}
		if got := e.searchAll(d.ID, q, 37, 1); !reflect.DeepEqual(got, want) {
			t.Errorf("query %q, every term common:\n got %s\nwant %s", src, describe(got), describe(want))
			continue
		}
		if n := len(want); n > 0 && n < len(ids) {
			nontrivial++
		}
		// The total: exact when every trace is counted or a rare term
		// narrowed the search; else scaled up from the first cap traces.
		for _, cap := range []int{0, 40, 41} { // 41: a count split into unequal parts
			res, err := e.st.SearchTraces(e.ctx, d.ID, q, store.SearchOptions{Page: store.Page{Limit: 5}, CountCap: cap})
			if err != nil {
				t.Fatalf("search %q: %v", src, err)
			}
			exact := int64(len(want))
			if cap == 0 || !res.Estimate {
				if res.Estimate || res.Total != exact {
					t.Errorf("query %q, cap %d: total %d estimate %v; want exactly %d", src, cap, res.Total, res.Estimate, exact)
				}
				continue
			}
			var first int64 // matches among the first cap traces by index
			for _, f := range want {
				if f.Index < int64(cap) {
					first++
				}
			}
			if est := (first*int64(len(ids)) + int64(cap)/2) / int64(cap); res.Total != est {
				t.Errorf("query %q, cap %d: estimate %d; want %d (%d of the first %d traces)", src, cap, res.Total, est, first, cap)
			}
		}
	}
	// Most queries must split the corpus, or the suite proves little.
	if nontrivial < len(SearchQueries)*3/4 {
		t.Errorf("only %d of %d queries match some but not all traces", nontrivial, len(SearchQueries))
	}
	// A policy name the dataset has not saved is an error at its place.
	q, _ := search.Parse(`refund has:violation:"nope"`)
	_, err := e.st.SearchTraces(e.ctx, d.ID, q, store.SearchOptions{})
	var se *search.Error
	if !errors.As(err, &se) || se.Pos != 7 {
		t.Errorf("unknown policy: got %v, want a *search.Error at 7", err)
	}
	_, err = e.st.SearchTraces(e.ctx, "00000000-0000-4000-8000-000000000000", q, store.SearchOptions{})
	wantErr(t, "search of a missing dataset", err, store.ErrNotFound)
}

// corpusSearchDataset stores every corpus trace in dataset "corpus", with
// user annotations on every 7th trace and analyzer results of two saved
// policies on every 5th and every 11th.
func corpusSearchDataset(e *env) (store.Dataset, []string) {
	alice := e.user("alice")
	d := e.dataset(alice, "corpus", false)
	var nts []store.NewTrace
	for _, f := range Corpus(e.t) {
		for _, tr := range f.Traces {
			c := *tr
			c.Index, c.Annotations = nil, nil
			nts = append(nts, store.NewTrace{Trace: &c})
		}
	}
	ids := e.add(alice.ID, d.ID, nts...)
	p1, err := e.st.SavePolicy(e.ctx, store.Policy{DatasetID: d.ID, Name: "no refunds", Source: `raise "r" if: (m: Message)`})
	if err != nil {
		e.t.Fatal(err)
	}
	p2, err := e.st.SavePolicy(e.ctx, store.Policy{DatasetID: d.ID, Name: "other rule", Source: `raise "o" if: (m: Message)`})
	if err != nil {
		e.t.Fatal(err)
	}
	for i, id := range ids {
		if i%7 == 0 {
			e.annotate(id, "user", "")
		}
		if i%5 == 0 {
			e.annotate(id, "analyzer", p1.ID)
		}
		if i%11 == 0 {
			e.annotate(id, "analyzer", p2.ID)
		}
	}
	e.scoreCorpus(ids)
	return d, ids
}

// scoreCorpus grades the corpus dataset's traces on two criteria: a number
// ("accuracy": i%10 tenths on every 3rd trace, a label on every 9th, and
// on every 15th a first grade of 0.95 a second one supersedes) and a
// verdict ("correct": true on every 4th trace, false on every 6th, and a
// step's false on every 8th, which fails the trace whatever its own).
func (e *env) scoreCorpus(ids []string) {
	e.t.Helper()
	var first, then []store.Score
	sc := func(id, addr, crit, v string) store.Score {
		return store.Score{TraceID: id, Address: addr, Criterion: crit, Value: json.RawMessage(v), Source: "code"}
	}
	for i, id := range ids {
		switch {
		case i%9 == 0:
			then = append(then, sc(id, "", "accuracy", `"high"`))
		case i%3 == 0:
			if i%15 == 0 {
				first = append(first, sc(id, "", "accuracy", "0.95"))
			}
			then = append(then, sc(id, "", "accuracy", strconv.FormatFloat(float64(i%10)/10, 'f', -1, 64)))
		}
		if i%4 == 0 {
			then = append(then, sc(id, "", "correct", "true"))
		}
		if i%6 == 0 {
			then = append(then, sc(id, "", "correct", "false"))
		}
		if i%8 == 0 {
			then = append(then, sc(id, "messages.0", "correct", "false"))
		}
	}
	for _, b := range [][]store.Score{first, then} {
		if _, err := e.st.AddScores(e.ctx, b); err != nil {
			e.t.Fatal(err)
		}
	}
}

func (e *env) annotate(traceID, source, policyID string) {
	e.t.Helper()
	a := store.Annotation{TraceID: traceID, Address: "messages.0", Content: "note", Source: source}
	if policyID != "" {
		a.Extra = json.RawMessage(`{"policy_id":"` + policyID + `"}`)
	}
	if _, err := e.st.CreateAnnotation(e.ctx, a); err != nil {
		e.t.Fatal(err)
	}
}

// found is one matching trace as the tests compare it.
type found struct {
	Index int64
	ID    string
	Hits  []string // sorted
}

func describe(fs []found) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d traces:", len(fs))
	for i, f := range fs {
		if i == 8 {
			b.WriteString(" ...")
			break
		}
		hits := f.Hits
		if len(hits) > 4 {
			hits = append(hits[:4:4], fmt.Sprintf("... %d in all", len(f.Hits)))
		}
		fmt.Fprintf(&b, " %d%v", f.Index, hits)
	}
	return b.String()
}

// searchAll walks every page of a search.
func (e *env) searchAll(datasetID string, q *search.Query, limit, commonLeaf int) []found {
	e.t.Helper()
	out := []found{}
	cursor := ""
	for range 100000 {
		res, err := e.st.SearchTraces(e.ctx, datasetID, q, store.SearchOptions{Page: store.Page{Cursor: cursor, Limit: limit}, CommonLeaf: commonLeaf})
		if err != nil {
			e.t.Fatalf("search %q: %v", q.Source, err)
		}
		for _, h := range res.Traces {
			hits := append([]string{}, h.Hits...)
			sort.Strings(hits)
			out = append(out, found{Index: h.Index, ID: h.ID, Hits: hits})
		}
		if res.Next == "" {
			return out
		}
		if len(res.Traces) != limit {
			e.t.Fatalf("search %q: a page of %d traces with a next cursor; want %d", q.Source, len(res.Traces), limit)
		}
		cursor = res.Next
	}
	e.t.Fatal("search: too many pages")
	return nil
}

// bruteForce is the reference the index must agree with: each trace's
// searchable strings read from its canonical JSON, the annotations from the
// store, the query's meaning from search.Query.Match.
type bruteForce struct {
	dataset string
	traces  []bruteTrace
}

type bruteTrace struct {
	index int64
	id    string
	doc   search.Doc
	orig  []string // each piece's original string
	props search.Props
}

func (e *env) bruteForce(d store.Dataset, ids []string) *bruteForce {
	e.t.Helper()
	ps, err := e.st.ListPolicies(e.ctx, d.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	names := map[string]string{}
	for _, p := range ps {
		names[p.ID] = p.Name
	}
	bf := &bruteForce{dataset: d.Name}
	for _, id := range ids {
		st := e.get(id)
		canon, err := json.Marshal(st.Trace)
		if err != nil {
			e.t.Fatal(err)
		}
		bt := bruteTrace{index: st.Index, id: id}
		bt.doc, err = canonicalDoc(canon, &bt.orig)
		if err != nil {
			e.t.Fatalf("trace %s: %v", id, err)
		}
		anns, err := e.st.ListAnnotations(e.ctx, id)
		if err != nil {
			e.t.Fatal(err)
		}
		bt.props = search.Props{Dataset: d.Name, Events: len(st.Trace.Events), Violations: map[string]bool{}, Scores: map[string][]string{}}
		scores, err := e.st.ListScores(e.ctx, store.ScoreFilter{TraceID: id})
		if err != nil {
			e.t.Fatal(err)
		}
		for _, sc := range scores {
			if sc.Current {
				bt.props.Scores[sc.Criterion] = append(bt.props.Scores[sc.Criterion], string(sc.Value))
			}
		}
		for _, a := range anns {
			if a.Source != "analyzer" {
				bt.props.Annotated = true
				continue
			}
			bt.props.Violations[""] = true
			var extra struct {
				PolicyID string `json:"policy_id"`
			}
			json.Unmarshal(a.Extra, &extra)
			if n, ok := names[extra.PolicyID]; ok {
				bt.props.Violations[n] = true
			}
		}
		bf.traces = append(bf.traces, bt)
	}
	sort.Slice(bf.traces, func(i, j int) bool { return bf.traces[i].index < bf.traces[j].index })
	return bf
}

func (bf *bruteForce) run(q *search.Query) []found {
	out := []found{}
	words := q.Words()
	for _, bt := range bf.traces {
		if !q.Match(&bt.doc, bt.props) {
			continue
		}
		var hits []string
		for i, p := range bt.doc.Pieces {
			hits = append(hits, naiveHits(p.Address, p.At, bt.orig[i], words)...)
		}
		sort.Strings(hits)
		if hits == nil {
			hits = []string{}
		}
		out = append(out, found{Index: bt.index, ID: bt.id, Hits: hits})
	}
	return out
}

// naiveHits finds the words in s rune by rune, folding case per rune: each
// word's non-overlapping occurrences from the left, deduplicated, at code
// points from at on.
func naiveHits(addr string, at int, s string, words []string) []string {
	rs := []rune(s)
	for i, r := range rs {
		rs[i] = unicode.ToLower(r)
	}
	seen := map[string]bool{}
	var out []string
	for _, w := range words {
		wr := []rune(w)
		for i := 0; i+len(wr) <= len(rs) && len(wr) > 0; {
			if string(rs[i:i+len(wr)]) == w {
				h := addr + ":" + strconv.Itoa(at+i) + "-" + strconv.Itoa(at+i+len(wr))
				if !seen[h] {
					seen[h] = true
					out = append(out, h)
				}
				i += len(wr)
				continue
			}
			i++
		}
	}
	return out
}

// jsonStringToken is a string token of JSON text; group 2 is set when it
// is an object key.
var jsonStringToken = regexp.MustCompile(`"((?:[^"\\]|\\.)*)"(\s*:)?`)

// canonicalDoc reads the searchable strings of a trace from its canonical
// JSON: event content (each text part), tool call names and the strings in
// their arguments (the arguments when they are a string), span names and
// the strings in attributes, inputs, outputs and value (a span's string
// holding a JSON object or array: the string values written in it);
// facets from roles, tool names and span kinds, and the session and user
// the metadata's top-level keys name; metadata scalars by dotted path.
func canonicalDoc(canon []byte, orig *[]string) (search.Doc, error) {
	var doc struct {
		Metadata json.RawMessage `json:"metadata"`
		Events   []struct {
			Role      string          `json:"role"`
			Content   json.RawMessage `json:"content"`
			ToolCalls []struct {
				Function struct {
					Name      string          `json:"name"`
					Arguments json.RawMessage `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"events"`
		Spans []struct {
			ID         string          `json:"id"`
			Name       string          `json:"name"`
			Kind       string          `json:"kind"`
			Attributes json.RawMessage `json:"attributes"`
			Inputs     json.RawMessage `json:"inputs"`
			Outputs    json.RawMessage `json:"outputs"`
			Value      json.RawMessage `json:"value"`
		} `json:"spans"`
	}
	if err := json.Unmarshal(canon, &doc); err != nil {
		return search.Doc{}, err
	}
	var d search.Doc
	facets := map[string]bool{}
	facet := func(f string) {
		f = strings.ToLower(f)
		if !strings.HasSuffix(f, ":") && !facets[f] {
			facets[f] = true
			d.Facets = append(d.Facets, f)
		}
	}
	piece := func(a trace.Address, s string) {
		if s != "" {
			*orig = append(*orig, s)
			d.Pieces = append(d.Pieces, search.Piece{Address: a.String(), Text: strings.ToLower(s)})
		}
	}
	inSpan := false
	var leaves func(v any, a trace.Address)
	leaves = func(v any, a trace.Address) {
		switch v := v.(type) {
		case string:
			if t := strings.TrimLeft(v, " \t\r\n"); inSpan && (strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[")) && json.Valid([]byte(v)) {
				for _, m := range jsonStringToken.FindAllStringSubmatchIndex(v, -1) {
					if m[4] >= 0 || m[3] == m[2] { // a key, or empty
						continue
					}
					*orig = append(*orig, v[m[2]:m[3]])
					d.Pieces = append(d.Pieces, search.Piece{Address: a.String(), Text: strings.ToLower(v[m[2]:m[3]]), At: utf8.RuneCountInString(v[:m[2]])})
				}
				return
			}
			piece(a, v)
		case []any:
			for i, x := range v {
				b := a
				b.Path = append(append([]string{}, a.Path...), strconv.Itoa(i))
				leaves(x, b)
			}
		case map[string]any:
			for k, x := range v {
				b := a
				b.Path = append(append([]string{}, a.Path...), k)
				leaves(x, b)
			}
		}
	}
	decode := func(raw json.RawMessage) any {
		var v any
		if len(raw) > 0 {
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.UseNumber()
			dec.Decode(&v)
		}
		return v
	}
	for i, ev := range doc.Events {
		facet("role:" + ev.Role)
		switch c := decode(ev.Content).(type) {
		case string:
			piece(trace.EventAddress(i, "content"), c)
		case []any:
			for k, p := range c {
				if m, ok := p.(map[string]any); ok && m["type"] == "text" {
					if s, ok := m["text"].(string); ok {
						piece(trace.EventAddress(i, "content", strconv.Itoa(k), "text"), s)
					}
				}
			}
		}
		for j, tc := range ev.ToolCalls {
			facet("tool:" + tc.Function.Name)
			piece(trace.EventAddress(i, "tool_calls", strconv.Itoa(j), "function", "name"), tc.Function.Name)
			leaves(decode(tc.Function.Arguments), trace.EventAddress(i, "tool_calls", strconv.Itoa(j), "function", "arguments"))
		}
	}
	inSpan = true
	for _, sp := range doc.Spans {
		facet("kind:" + sp.Kind)
		piece(trace.SpanAddress(sp.ID, "name"), sp.Name)
		leaves(decode(sp.Attributes), trace.SpanAddress(sp.ID, "attributes"))
		leaves(decode(sp.Inputs), trace.SpanAddress(sp.ID, "inputs"))
		leaves(decode(sp.Outputs), trace.SpanAddress(sp.ID, "outputs"))
		leaves(decode(sp.Value), trace.SpanAddress(sp.ID, "value"))
	}
	// Metadata scalars up to 3 keys deep, and scalar elements of arrays.
	var meta func(v any, key string, depth int)
	meta = func(v any, key string, depth int) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if depth < 3 {
					meta(x, key+"."+k, depth+1)
				}
			}
		case []any:
			for _, x := range v {
				_, arr := x.([]any)
				_, obj := x.(map[string]any)
				if !arr && !obj {
					meta(x, key, depth)
				}
			}
		case string:
			d.Meta = append(d.Meta, search.MetaValue{Key: key, Text: strings.ToLower(v)})
		case json.Number:
			n, err := v.Float64()
			d.Meta = append(d.Meta, search.MetaValue{Key: key, Text: v.String(), Num: n, IsNum: err == nil})
		case bool:
			d.Meta = append(d.Meta, search.MetaValue{Key: key, Text: strconv.FormatBool(v)})
		case nil:
			d.Meta = append(d.Meta, search.MetaValue{Key: key, Text: "null"})
		}
	}
	if m, ok := decode(doc.Metadata).(map[string]any); ok {
		for k, x := range m {
			meta(x, k, 1)
		}
		// The first key, by precedence, with a non-blank string or a number.
		for _, w := range []struct {
			facet string
			keys  []string
		}{{"session:", []string{"session_id", "session", "sessionId"}}, {"user:", []string{"user_id", "user", "userId"}}} {
			for _, k := range w.keys {
				if v, ok := m[k].(string); ok && strings.TrimSpace(v) != "" {
					facet(w.facet + v)
					break
				}
				if v, ok := m[k].(json.Number); ok {
					facet(w.facet + v.String())
					break
				}
			}
		}
	}
	return d, nil
}

// testSearchConsistency checks the index against the brute force after
// random interleavings of push, append, annotate and delete.
func testSearchConsistency(t *testing.T, open func(t *testing.T) store.Store) {
	e := newEnv(t, open)
	alice := e.user("alice")
	var pool []*trace.Trace
	for _, f := range Corpus(t) {
		pool = append(pool, f.Traces...)
	}
	queries := []string{`reservation`, `refund -cancel`, `role:tool`, `tool:get_user_details OR weather`, `is:annotated`,
		`has:violation`, `has:violation:"no refunds" reservation`, `meta:round>2`, `meta:round=1 OR events>30`, `kind:llm`, `"appended text"`, `-role:user`}
	var d store.Dataset
	for seed := range uint64(3) {
		d = e.dataset(alice, "mixed"+strconv.Itoa(int(seed)), false)
		p, err := e.st.SavePolicy(e.ctx, store.Policy{DatasetID: d.ID, Name: "no refunds", Source: `raise "r" if: (m: Message)`})
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(seed, 42))
		var live []string
		// Spans of a few OpenTelemetry traces, each a user event whose text
		// is drawn from a small set, so that a trace rebuilt from its spans
		// keeps, gains, repeats and drops texts. A span id reused replaces
		// that span's text.
		spanTexts := []string{"reservation for two", "refund please", "Appended text, span", "weather in Paris", "reservation for two"}
		var mu sync.Mutex
		var seen [][]string
		build := spanBuild(&mu, &seen)
		for step := range 60 {
			switch op := r.IntN(12); {
			case op < 4 || len(live) == 0: // push a few traces
				var nts []store.NewTrace
				for range 1 + r.IntN(4) {
					c := *pool[r.IntN(len(pool))]
					c.Index, c.Annotations = nil, nil
					c.Metadata = json.RawMessage(fmt.Sprintf(`{"round":%d,"seed":%d}`, step%5, seed))
					nts = append(nts, store.NewTrace{Trace: &c})
				}
				live = append(live, e.add(alice.ID, d.ID, nts...)...)
			case op < 6: // append events taken from another trace, or a conversation step of them and a span
				id := live[r.IntN(len(live))]
				src := pool[r.IntN(len(pool))]
				evs := append([]trace.Event{}, src.Events[:min(len(src.Events), 1+r.IntN(5))]...)
				evs = append(evs, trace.Event{Role: "assistant", Content: trace.TextContent("Appended text, step " + strconv.Itoa(step))})
				if r.IntN(2) == 0 {
					if err := e.st.AppendEvents(e.ctx, id, evs); err != nil {
						t.Fatal(err)
					}
					break
				}
				e.record(alice.ID, d.ID, store.ConversationStep{TraceID: id, ExpectEvents: len(e.get(id).Trace.Events), Events: evs,
					Spans: []trace.Span{{ID: "gw-" + strconv.Itoa(step), Name: "Appended text, span of step " + strconv.Itoa(step), Kind: "llm"}},
					Head:  "step-" + strconv.Itoa(step)})
			case op < 8: // annotate
				id := live[r.IntN(len(live))]
				if r.IntN(2) == 0 {
					e.annotate(id, "user", "")
				} else {
					e.annotate(id, "analyzer", p.ID)
				}
			case op < 10: // spans of an OpenTelemetry trace, a new one or more of one
				var ss []store.StoredSpan
				for range 1 + r.IntN(3) {
					ss = append(ss, store.StoredSpan{SpanID: "s" + strconv.Itoa(r.IntN(6)), Data: []byte(spanTexts[r.IntN(len(spanTexts))])})
				}
				g := []store.SpanGroup{{OTelTraceID: fmt.Sprintf("%032x", r.IntN(4)), Spans: ss}}
				var ids []string
				if r.IntN(2) == 0 {
					var errs []error
					ids, errs, err = e.st.AddSpans(e.ctx, alice.ID, d.ID, g, build)
					if err != nil || errs[0] != nil {
						t.Fatalf("AddSpans: %v, %v", err, errs)
					}
				} else {
					// Accepted now, built now or with the others before
					// the next check.
					if ids, err = e.st.AcceptSpans(e.ctx, alice.ID, d.ID, g); err != nil {
						t.Fatalf("AcceptSpans: %v", err)
					}
					if r.IntN(2) == 0 {
						buildPending(t, e, store.PendingFilter{TraceIDs: ids}, build)
					}
				}
				if !slices.Contains(live, ids[0]) {
					live = append(live, ids[0])
				}
			default: // delete
				k := r.IntN(len(live))
				if err := e.st.DeleteTrace(e.ctx, live[k]); err != nil {
					t.Fatal(err)
				}
				live = append(live[:k], live[k+1:]...)
			}
			if step%20 != 19 {
				continue
			}
			buildPending(t, e, store.PendingFilter{DatasetID: d.ID}, build)
			bf := e.bruteForce(d, live)
			for _, src := range queries {
				q, err := search.Parse(src)
				if err != nil {
					t.Fatal(err)
				}
				if got, want := e.searchAll(d.ID, q, 7, 1+step%3*5), bf.run(q); !reflect.DeepEqual(got, want) {
					t.Fatalf("seed %d step %d, query %q:\n got %s\nwant %s", seed, step, src, describe(got), describe(want))
				}
			}
		}
	}
	// Deleting every trace leaves no text, facet or metadata row behind:
	// the unused texts are swept. An append rewrites the trace's rows:
	// those of the facets and metadata it had go with it.
	del := e.dataset(alice, "swept", false)
	unique := simple("unique", 1, nil)
	unique.Trace.Events[0].Content = trace.TextContent("a text only this trace has: " + d.ID)
	unique.Trace.Metadata = json.RawMessage(`{"round":7,"tag":"swept"}`)
	before0 := e.indexStats()
	id := e.add(alice.ID, del.ID, unique)[0]
	added := e.indexStats()
	if added.Texts != before0.Texts+1 || added.Pieces != before0.Pieces+1 || added.Facets != before0.Facets+1 || added.Meta != before0.Meta+2 {
		t.Errorf("after adding a one-text trace with a role and two metadata values: %+v, before %+v", added, before0)
	}
	if err := e.st.AppendEvents(e.ctx, id, []trace.Event{{Role: "assistant", ToolCalls: []trace.ToolCall{{ID: "c1", Type: "function", Function: trace.Function{Name: "lookup", Arguments: json.RawMessage(`{}`)}}}}}); err != nil {
		t.Fatal(err)
	}
	if got := e.indexStats(); got.Facets != added.Facets+2 || got.Meta != added.Meta {
		t.Errorf("after appending a tool call: %+v, before %+v (want two facets more: its role and its tool)", got, added)
	}
	if err := e.st.DeleteTrace(e.ctx, id); err != nil {
		t.Fatal(err)
	}
	if got := e.indexStats(); got.Texts != before0.Texts || got.Pieces != before0.Pieces || got.Facets != before0.Facets || got.Meta != before0.Meta {
		t.Errorf("after deleting it: %+v, want %+v", got, before0)
	}
	e.add(alice.ID, del.ID, unique)
	if err := e.st.DeleteDataset(e.ctx, del.ID); err != nil {
		t.Fatal(err)
	}
	if got := e.indexStats(); got.Texts != before0.Texts || got.Pieces != before0.Pieces || got.Facets != before0.Facets || got.Meta != before0.Meta {
		t.Errorf("after deleting its dataset: %+v, want %+v", got, before0)
	}

	// Reindex rebuilds the same index.
	before := map[string][]found{}
	for _, src := range queries {
		q, _ := search.Parse(src)
		before[src] = e.searchAll(d.ID, q, 50, 0)
	}
	n, err := e.st.Reindex(e.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("Reindex indexed no traces")
	}
	for _, src := range queries {
		q, _ := search.Parse(src)
		if got := e.searchAll(d.ID, q, 50, 0); !reflect.DeepEqual(got, before[src]) {
			t.Errorf("after Reindex, query %q: got %s, want %s", src, describe(got), describe(before[src]))
		}
	}
}

func (e *env) indexStats() store.SearchIndexStats {
	e.t.Helper()
	st, err := e.st.SearchIndexStats(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	return st
}
