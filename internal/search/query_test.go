package search

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/lookout-dev/lookout/internal/trace"
)

func TestParse(t *testing.T) {
	cases := []struct{ in, plan string }{
		{``, `(all)`},
		{`   `, `(all)`},
		{`refund`, `"refund"`},
		{`Refund`, `"refund"`},
		{`"I cannot"`, `"i cannot"`},
		{`"say \"hi\""`, `"say \"hi\""`},
		{`refund cancel`, `(and "refund" "cancel")`},
		{`refund AND cancel`, `(and "refund" "cancel")`},
		{`refund OR cancel`, `(or "refund" "cancel")`},
		{`a b OR c`, `(or (and "a" "b") "c")`},
		{`a (b OR c)`, `(and "a" (or "b" "c"))`},
		{`-refund`, `(not "refund")`},
		{`--flag`, `"--flag"`},
		{`- refund`, `(and "-" "refund")`},
		{`-(a OR b)`, `(not (or "a" "b"))`},
		{`--(a)`, `(and "--" "a")`},
		{`or`, `"or"`},
		{`role:assistant`, `role:"assistant"`},
		{`role:User`, `role:"user"`},
		{`-role:system`, `(not role:"system")`},
		{`tool:cancel_reservation`, `tool:"cancel_reservation"`},
		{`kind:RETRIEVAL`, `kind:"retrieval"`},
		{`is:annotated`, `is:annotated`},
		{`not:annotated`, `(not is:annotated)`},
		{`-not:annotated`, `is:annotated`},
		{`has:violation`, `has:violation`},
		{`has:violations`, `has:violation`},
		{`has:violation:"no refunds"`, `has:violation:"no refunds"`},
		{`policy:"no refunds"`, `has:violation:"no refunds"`},
		{`policy:strict`, `has:violation:"strict"`},
		{`meta:model=gpt-4o`, `meta:model="gpt-4o"`},
		{`meta:model="GPT 4"`, `meta:model="gpt 4"`},
		{`meta:model!=gpt-4o`, `meta:model!="gpt-4o"`},
		{`meta:reward>0.5`, `meta:reward>"0.5"`},
		{`meta:reward>=1`, `meta:reward>="1"`},
		{`meta:reward<=-2`, `meta:reward<="-2"`},
		{`meta:info.user_cost<0.05`, `meta:info.user_cost<"0.05"`},
		{`meta:model%gpt`, `meta:model%"gpt"`},
		{`meta:x=`, `meta:x=""`},
		{`events>20`, `events>20`},
		{`events<=3`, `events<=3`},
		{`events=1`, `events=1`},
		{`eventsx`, `"eventsx"`},
		{`dataset:Airline`, `dataset:"Airline"`},
		{`http://example.com`, `"http://example.com"`},
		{`"role:user"`, `"role:user"`},
		{`a:b`, `"a:b"`},
		{`f(x)`, `(and "f" "x")`},
		{`"f(x)"`, `"f(x)"`},
		{`(refund OR cancel) tool:cancel_reservation -meta:reward=1`, `(and (or "refund" "cancel") tool:"cancel_reservation" (not meta:reward="1"))`},
		{`日本語`, `"日本語"`},
		{`session:session_ABC`, `session:"session_abc"`},
		{`user:"g.aprozeanu"`, `user:"g.aprozeanu"`},
		{`-session:x`, `(not session:"x")`},
		{`score:accuracy>0.5`, `score:"accuracy">0.5`},
		{`score:Accuracy>=1`, `score:"Accuracy">=1`},
		{`score:x<=-2`, `score:"x"<=-2`},
		{`score:x<1e3`, `score:"x"<1e3`},
		{`score:x=0`, `score:"x"=0`},
		{`score:"task success">0.5`, `score:"task success">0.5`},
		{`score:"a>b"=1`, `score:"a>b"=1`},
		{`verdict:correct=fail`, `verdict:"correct"=fail`},
		{`verdict:correct=PASS`, `verdict:"correct"=pass`},
		{`verdict:"is polite"=pass`, `verdict:"is polite"=pass`},
	}
	for _, c := range cases {
		q, err := Parse(c.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.in, err)
			continue
		}
		if got := q.String(); got != c.plan {
			t.Errorf("Parse(%q) = %s, want %s", c.in, got, c.plan)
		}
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		in  string
		pos int
		msg string
	}{
		{`"unclosed`, 0, "never closed"},
		{`refund "unclosed`, 7, "never closed"},
		{`(refund`, 0, `"(" is never closed`},
		{`a (b OR c`, 2, `"(" is never closed`},
		{`refund)`, 6, `")" without "("`},
		{`()`, 1, "empty group"},
		{`OR refund`, 0, "OR needs a term before it"},
		{`refund OR`, 9, "OR needs a term after it"},
		{`refund OR OR x`, 10, "OR needs a term after it"},
		{`AND x`, 0, "AND needs a term before it"},
		{`x AND`, 5, "AND needs a term after it"},
		{`(a OR)`, 5, "OR needs a term after it"},
		{`-)`, 1, `")" without "("`},
		{`""`, 0, "empty phrase"},
		{`role:`, 5, "role: needs a value"},
		{`tool:`, 5, "tool: needs a value"},
		{`is:done`, 3, "the only value is is:annotated"},
		{`not:x`, 4, "the only value is not:annotated"},
		{`has:bugs`, 4, "want has:violation"},
		{`has:violation:`, 14, "needs a saved policy's name"},
		{`policy:`, 7, "needs a saved policy's name"},
		{`meta:`, 5, "needs a key"},
		{`meta:model`, 5, "needs a key, an operator"},
		{`meta:=x`, 5, "needs a key before the operator"},
		{`meta:reward>high`, 12, `"high" is not a number`},
		{`meta:reward>`, 12, "needs a number"},
		{`meta:a!x`, 6, `"!" must be followed by "="`},
		{`meta:a%`, 7, "% needs the text"},
		{`meta:r>NaN`, 7, "not a number"},
		{`events>many`, 7, "whole number of events"},
		{`events>=1.5`, 8, "whole number of events"},
		{`x "日本`, 2, "never closed"},
		{`日本 meta:r>x`, 10, "not a number"},
		{strings.Repeat("(", 40) + "x" + strings.Repeat(")", 40), 33, "nest deeper"},
		{strings.Repeat("w ", 65), 0, "at most 64"},
		{strings.Repeat("w", MaxLength+1), 0, "bytes long"},
		{"a \xff", 2, "not valid UTF-8"},
		{`session:`, 8, "session: needs a value"},
		{`user:`, 5, "user: needs a value"},
		{`score:`, 6, "needs a criterion's name"},
		{`score:>1`, 6, "needs a criterion's name"},
		{`score:x`, 7, "an operator"},
		{`score:x>`, 8, "needs a number"},
		{`score:x>high`, 8, `"high" is not a number`},
		{`score:x!=1`, 7, `has no "!="`},
		{`verdict:x!=pass`, 9, `has no "!="`},
		{`score:"a b">NaN`, 12, "not a number"},
		{`verdict:x`, 9, "verdict: needs"},
		{`verdict:x=maybe`, 10, "=pass or =fail"},
		{`verdict:x>pass`, 9, "=pass or =fail"},
		{`verdict:=pass`, 8, "verdict: needs"},
	}
	for _, c := range cases {
		_, err := Parse(c.in)
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("Parse(%q): got %v, want an *Error", c.in, err)
			continue
		}
		if e.Pos != c.pos || !strings.Contains(e.Msg, c.msg) {
			t.Errorf("Parse(%q): error at %d %q; want at %d, containing %q", c.in, e.Pos, e.Msg, c.pos, c.msg)
		}
		if !strings.Contains(e.Error(), "column ") {
			t.Errorf("Parse(%q): %q does not give the column", c.in, e.Error())
		}
	}
}

func TestWords(t *testing.T) {
	q, err := Parse(`refund -cancel (Baggage OR -(x OR y)) refund -(-seat)`)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(q.Words(), ",")
	if want := "refund,baggage,seat"; got != want {
		t.Errorf("Words = %s, want %s", got, want)
	}
	if got := strings.Join(q.Texts(), ","); got != "refund,cancel,baggage,seat" {
		t.Errorf("Texts = %s", got)
	}
}

func TestHits(t *testing.T) {
	pieces := []Piece{
		{Address: "messages.0.content", Text: Lower("Refund? REFUND refund")},
		{Address: "messages.1.content", Text: Lower("日本語のrefundです refund")},
		{Address: "messages.2.content", Text: "aaaa"},
		{Address: "messages.3.content", Text: "nothing"},
	}
	got := Hits(pieces, []string{"refund", "aa", "und"})
	want := []string{
		"messages.0.content:0-6", "messages.0.content:3-6", "messages.0.content:8-14", "messages.0.content:11-14",
		"messages.0.content:15-21", "messages.0.content:18-21",
		"messages.1.content:4-10", "messages.1.content:7-10", "messages.1.content:13-19", "messages.1.content:16-19",
		"messages.2.content:0-2", "messages.2.content:2-4",
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("Hits =\n%v\nwant\n%v", got, want)
	}
}

func TestLowerKeepsCodePoints(t *testing.T) {
	for _, s := range []string{"ABC", "İstanbul", "ΣΑΣ", "Ǆ", "ẞ", "K", "Ⅻ", "\u0130\u0049"} {
		if l := Lower(s); utf8.RuneCountInString(l) != utf8.RuneCountInString(s) {
			t.Errorf("Lower(%q) = %q: %d code points, want %d", s, l, utf8.RuneCountInString(l), utf8.RuneCountInString(s))
		}
	}
}

func TestIndex(t *testing.T) {
	var tr trace.Trace
	src := `{"metadata": {"model": "GPT-4o", "reward": 1, "tags": ["a", "B"], "nested": {"k": true},
		"deep": {"a": {"b": {"c": 1}, "x": 2}}, "recs": [{"k": 1}, 5, [6]]},
		"events": [
		{"role": "user", "content": "Cancel it"},
		{"role": "assistant", "content": null, "tool_calls": [{"id": "1", "type": "function", "function": {"name": "Cancel_Reservation", "arguments": {"id": "ABC", "n": 2, "list": ["x y"]}}}]},
		{"role": "tool", "tool_call_id": "1", "content": [{"type": "text", "text": "Done"}, {"type": "image_url", "image_url": {"url": "u"}}]},
		{"role": "assistant", "tool_calls": [{"id": "2", "type": "function", "function": {"name": "f", "arguments": "not json {"}}]}],
		"spans": [{"id": "s.1", "name": "Agent", "kind": "AGENT", "attributes": {"gen_ai.system": "OpenAI"}, "inputs": "question"}]}`
	if err := tr.UnmarshalJSON([]byte(src)); err != nil {
		t.Fatal(err)
	}
	d := Index(&tr)
	var got []string
	for _, p := range d.Pieces {
		got = append(got, p.Address+"="+p.Text)
	}
	want := []string{
		"messages.0.content=cancel it",
		"messages.1.tool_calls.0.function.name=cancel_reservation",
		"messages.1.tool_calls.0.function.arguments.id=abc",
		"messages.1.tool_calls.0.function.arguments.list.0=x y",
		"messages.2.content.0.text=done",
		"messages.3.tool_calls.0.function.name=f",
		"messages.3.tool_calls.0.function.arguments=not json {",
		`spans["s.1"].name=agent`,
		`spans["s.1"].attributes["gen_ai.system"]=openai`,
		`spans["s.1"].inputs=question`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("pieces:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if f := strings.Join(d.Facets, ","); f != "role:user,role:assistant,tool:cancel_reservation,role:tool,tool:f,kind:agent" {
		t.Errorf("facets = %s", f)
	}
	var meta []string
	for _, m := range d.Meta {
		meta = append(meta, m.Key+"="+m.Text)
	}
	if m := strings.Join(meta, ","); m != "deep.a.x=2,model=gpt-4o,nested.k=true,recs=5,reward=1,tags=a,tags=b" {
		t.Errorf("meta = %s", m)
	}
}

func TestMatch(t *testing.T) {
	d := &Doc{
		Pieces: []Piece{{Address: "messages.0.content", Text: "please refund me"}},
		Facets: []string{"role:user", "tool:refund"},
		Meta:   []MetaValue{{Key: "reward", Text: "1.0", Num: 1, IsNum: true}, {Key: "model", Text: "gpt-4o"}},
	}
	p := Props{Dataset: "air", Events: 3, Annotated: true, Violations: map[string]bool{"": true, "strict": true}}
	cases := map[string]bool{
		`refund`: true, `REFUND -please`: false, `cancel OR refund`: true, `role:user`: true, `role:tool`: false,
		`tool:refund`: true, `is:annotated`: true, `not:annotated`: false, `has:violation`: true,
		`policy:strict`: true, `policy:lax`: false, `meta:reward=1`: true, `meta:reward=1.0`: true, `meta:reward>1`: false,
		`meta:reward>=1`: true, `meta:model=GPT-4o`: true, `meta:model!=gpt-4o`: false, `meta:other!=x`: true,
		`meta:model%gpt`: true, `meta:model>1`: false, `events>2`: true, `events<3`: false, `dataset:air`: true, `dataset:Air`: false,
	}
	for src, want := range cases {
		q, err := Parse(src)
		if err != nil {
			t.Fatalf("Parse(%q): %v", src, err)
		}
		if got := q.Match(d, p); got != want {
			t.Errorf("%q matched %v, want %v", src, got, want)
		}
	}
}

// FuzzParse checks that Parse never panics, that errors point inside the
// query, and that a parsed query prints a plan and compiles.
func FuzzParse(f *testing.F) {
	for _, s := range []string{`refund`, `"a b" OR (c -d)`, `meta:reward>=0.5 tool:x`, `has:violation:"p q"`, `events>3`, `-(-a)`, `((`, `"`, `日本 meta:k%v`} {
		f.Add(s)
	}
	// the store conformance suite's queries (storetest.SearchQueries)
	data, err := os.ReadFile(filepath.Join("..", "store", "storetest", "testdata", "search_queries.txt"))
	if err != nil {
		f.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		f.Add(line)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q, err := Parse(s)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Parse(%q): %T %v", s, err, err)
			}
			if e.Pos < 0 || e.Pos > utf8.RuneCountInString(s) {
				t.Fatalf("Parse(%q): error position %d outside the query", s, e.Pos)
			}
			return
		}
		_ = q.String()
		plan := Plan{Common: map[string]bool{}, PolicyIDs: map[string]string{}}
		for _, n := range q.Policies() {
			plan.PolicyIDs[n] = "id"
		}
		plan.Sets = map[string]Leaf{}
		for i, l := range q.Leaves(testDialect{}) {
			plan.Common[l.Key] = i%2 == 0
			if i%4 == 1 { // a rare leaf in the store's own form
				plan.Sets[l.Key] = Leaf{Key: l.Key, Set: "SELECT list(?, ?)", Args: []any{1, 2}}
			}
		}
		c, err := q.Compile(testDialect{}, plan)
		if err != nil {
			t.Fatalf("Compile(%q): %v", s, err)
		}
		// Every placeholder has its argument.
		if n := strings.Count(c.Cond, "?"); n != len(c.Args) {
			t.Fatalf("Compile(%q): %d placeholders, %d arguments: %s", s, n, len(c.Args), c.Cond)
		}
		if n := strings.Count(c.Driver, "?"); n != len(c.DriverArgs) {
			t.Fatalf("Compile(%q): driver with %d placeholders, %d arguments", s, n, len(c.DriverArgs))
		}
		q.Match(&Doc{}, Props{})
	})
}

type testDialect struct{}

func (testDialect) IndexedTraces(w string) (string, any) { return "SELECT ?", w }
func (testDialect) ScanTrace() string                    { return "scan(?)" }
func (testDialect) Contains(col string) string           { return "instr(" + col + ", ?)" }
func (testDialect) ExtraMember(col, key string) string   { return col + "." + key }
func (testDialect) TraceMeta() string                    { return "meta(t) m WHERE m.key = ?" }
func (testDialect) JSONNumber(col string) string         { return "num(" + col + ")" }

// TestPlanSets: a set the store gives for a rare leaf replaces the leaf's
// own, in the driver and in the condition; a common leaf is scanned.
func TestPlanSets(t *testing.T) {
	q, err := Parse("refund tool:x")
	if err != nil {
		t.Fatal(err)
	}
	ls := q.Leaves(testDialect{})
	if len(ls) != 2 || ls[0].Word != "refund" || ls[1].Word != "" {
		t.Fatalf("leaves %+v", ls)
	}
	given := Leaf{Key: ls[0].Key, Set: "SELECT given(?)", Args: []any{"ids"}}
	c, err := q.Compile(testDialect{}, Plan{Common: map[string]bool{ls[1].Key: true}, Sets: map[string]Leaf{ls[0].Key: given}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(c.Driver, "SELECT given(?)") || fmt.Sprint(c.DriverArgs) != "[ids]" {
		t.Errorf("driver %q %v", c.Driver, c.DriverArgs)
	}
	if !strings.Contains(c.Cond, "t.id IN (SELECT given(?))") || strings.Contains(c.Cond, "scan(?)") {
		t.Errorf("condition %q", c.Cond)
	}
	// Common, the word is scanned and the given set is not used.
	c, err = q.Compile(testDialect{}, Plan{Common: map[string]bool{ls[0].Key: true, ls[1].Key: true}, Sets: map[string]Leaf{ls[0].Key: given}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(c.Cond, "given") || !strings.Contains(c.Cond, "scan(?)") || c.Driver != "" {
		t.Errorf("common: condition %q, driver %q", c.Cond, c.Driver)
	}
}
