package policy

import (
	"fmt"
	"strings"
	"testing"
)

// sexpr prints an expression as an S-expression, to pin down how the
// parser groups operators.
func sexpr(e Expr) string {
	switch n := e.(type) {
	case *Ident:
		return n.Name
	case *TypedIdent:
		return "(" + n.Name + ": " + n.Type + ")"
	case *StringLit:
		m := ""
		if n.Mod != 0 {
			m = string(n.Mod)
		}
		return m + fmt.Sprintf("%q", n.value)
	case *NumberLit:
		return n.Text
	case *BoolLit:
		if n.value {
			return "True"
		}
		return "False"
	case *NoneLit:
		return "None"
	case *ListLit:
		var s []string
		for _, x := range n.Elems {
			s = append(s, sexpr(x))
		}
		if n.Tuple {
			return "(tuple " + strings.Join(s, " ") + ")"
		}
		return "[" + strings.Join(s, " ") + "]"
	case *ObjectLit:
		var s []string
		for i, k := range n.Keys {
			s = append(s, k+": "+sexpr(n.Vals[i]))
		}
		return "{" + strings.Join(s, ", ") + "}"
	case *UnaryExpr:
		return "(" + n.Op + " " + sexpr(n.X) + ")"
	case *BinaryExpr:
		return "(" + n.Op + " " + sexpr(n.L) + " " + sexpr(n.R) + ")"
	case *Assign:
		return "(:= " + n.Name + " " + sexpr(n.value) + ")"
	case *CallExpr:
		s := []string{sexpr(n.Fn)}
		for _, a := range n.Args {
			s = append(s, sexpr(a))
		}
		for i, k := range n.KwNames {
			s = append(s, k+"="+sexpr(n.KwVals[i]))
		}
		return "(call " + strings.Join(s, " ") + ")"
	case *MemberAccess:
		return "(. " + sexpr(n.X) + " " + n.Name + ")"
	case *KeyAccess:
		return "([] " + sexpr(n.X) + " " + sexpr(n.Key) + ")"
	case *ListComprehension:
		s := "(for " + sexpr(n.Elem) + " " + n.Var + " " + sexpr(n.Iter)
		if n.Cond != nil {
			s += " if " + sexpr(n.Cond)
		}
		return s + ")"
	case *TernaryOp:
		return "(?: " + sexpr(n.Cond) + " " + sexpr(n.Then) + " " + sexpr(n.Else) + ")"
	case *ToolReference:
		return "tool:" + n.Name
	case *SemanticPattern:
		s := []string{"tool:" + n.Tool.Name}
		for _, a := range n.Args {
			s = append(s, sexpr(a))
		}
		return "(pattern " + strings.Join(s, " ") + ")"
	case *Wildcard:
		return "*"
	case *ValueReference:
		return "<" + n.Type + ">"
	case *Quantifier:
		var s []string
		for _, x := range n.Body {
			s = append(s, sexpr(x))
		}
		return "(quantifier " + sexpr(n.Head) + " " + strings.Join(s, " ") + ")"
	}
	return fmt.Sprintf("%T", e)
}

func parseBody(t *testing.T, body string) []Expr {
	t.Helper()
	stmts, err := parsePolicy("raise \"x\" if:\n" + body)
	if err != nil {
		t.Fatalf("parse error: %s", err.msg)
	}
	return stmts[0].(*RaiseStmt).Body
}

func TestPrecedence(t *testing.T) {
	cases := []struct{ src, want string }{
		{`a := "Cheerio" + "1" + "test"`, `(:= a (+ (+ "Cheerio" "1") "test"))`},
		{`"abc" + "efg" in output.content`, `(in (+ "abc" "efg") (. output content))`},
		{`"abc" + "efg" + "hij" in output.content`, `(in (+ (+ "abc" "efg") "hij") (. output content))`},
		{`"File " + tc.function.arguments.arg.strip() + " not found" in to.content`,
			`(in (+ (+ "File " (call (. (. (. (. tc function) arguments) arg) strip))) " not found") (. to content))`},
		{`not call.content()`, `(not (call (. call content)))`},
		{`flag := ["a", "b"] in ["a"]`, `(:= flag (in ["a" "b"] ["a"]))`},
		{`a or b and c`, `(or a (and b c))`},
		{`not a == b`, `(not (== a b))`},
		{`a == b or not c in d`, `(or (== a b) (not (in c d)))`},
		{`1 + 2 * 3 - 4 / 2 % 3`, `(- (+ 1 (* 2 3)) (% (/ 4 2) 3))`},
		{`-a ** 2`, `(- (** a 2))`},
		{`2 ** 3 ** 2`, `(** 2 (** 3 2))`},
		{`a.b[c](d, e=f).g`, `(. (call ([] (. a b) c) d e=f) g)`},
		{`x if c else y if d else z`, `(?: c x (?: d y z))`},
		{`True if ("example1" in m.content) else ("example2" in m.content)`, `(?: (in "example1" (. m content)) True (in "example2" (. m content)))`},
		{`(call: ToolCall) -> (call2: ToolCall)`, `(-> (call: ToolCall) (call2: ToolCall))`},
		{`a ~> b`, `(~> a b)`},
		{`x not in y`, `(not in x y)`},
		{`x is not None`, `(is not x None)`},
		{`call is tool:send_email({to: "^(?!Peter$).*$"})`, `(is call (pattern tool:send_email {to: "^(?!Peter$).*$"}))`},
		{`call is tool:x({"key": *, email: <EMAIL_ADDRESS>}, *)`, `(is call (pattern tool:x {key: *, email: <EMAIL_ADDRESS>} *))`},
		{`any([p in m.content for p in ["a", "b"] if len(p) > 0])`, `(call any (for (in p (. m content)) p ["a" "b"] if (> (call len p) 0)))`},
		{`(chunk: str) in text(msg.content)`, `(in (chunk: str) (call text (. msg content)))`},
		{`u contains_only ['Lu', 'Ll']`, `(contains_only u ["Lu" "Ll"])`},
		{`len(x) < 4`, `(< (call len x) 4)`},
		{`a < <VALUE>`, `(< a <VALUE>)`},
		{`a<b`, `(< a b)`},
		{`(1, 2)`, `(tuple 1 2)`},
		{`{"a": [1, 2.5, -3], b: None}`, `{a: [1 2.5 (- 3)], b: None}`},
		{`r"\d+\"x" == '\'q\''`, `(== r"\\d+\"x" "'q'")`},
	}
	for _, c := range cases {
		got := parseBody(t, "    "+c.src+"\n")
		if len(got) != 1 {
			t.Errorf("%s: %d items", c.src, len(got))
			continue
		}
		if s := sexpr(got[0]); s != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.src, s, c.want)
		}
	}
}

func TestBlocks(t *testing.T) {
	cases := []struct {
		name, src string
		want      []string // items of the first rule's body
	}{
		{"continuation after operator", "raise \"x\" if:\n    a or\n    b\n    c\n", []string{"(or a b)", "c"}},
		{"continuation before operator", "raise \"x\" if:\n    a\n    and b\n", []string{"(and a b)"}},
		{"deeper line continues", "raise \"x\" if:\n    a ==\n        b\n    c\n", []string{"(== a b)", "c"}},
		{"few extra spaces stay in the block", "raise \"x\" if:\n    a\n      b\n    c\n", []string{"a", "b", "c"}},
		{"two levels at once", "x :=\n    1\nraise \"x\" if:\n        a\n        b\n", []string{"a", "b"}},
		{"brackets ignore indentation", "raise \"x\" if:\n    call is tool:x({\n  a: 1,\n        b: [\n2]\n    })\n    c\n", []string{"(is call (pattern tool:x {a: 1, b: [2]}))", "c"}},
		{"comments and blank lines", "raise \"x\" if:  # trailing\n\n  # alone\n    a # one\n\n    b\n", []string{"a", "b"}},
		{"quantifier then condition", "raise \"x\" if:\n    count(min=2):\n        (c: ToolCall)\n    not forall:\n        (m: Message)\n    z\n",
			[]string{"(quantifier (call count min=2) (c: ToolCall))", "(not (quantifier forall (m: Message)))", "z"}},
		{"tabs", "raise \"x\" if:\n\ta\n\tb\n", []string{"a", "b"}},
		{"indented policy (dedented first)", "\n        raise \"x\" if:\n            a\n            b\n        ", []string{"a", "b"}},
		{"backslash continuation", "raise \"x\" if:\n    a == \\\n    b\n", []string{"(== a b)"}},
		{"statements indented after the imports", "from m import a\n    x := 1\n    raise \"x\" if:\n        a\n        b\n", []string{"a", "b"}},
		{"rule on a deeper line, body at its level", "from m import a\n    raise \"x\" if:\n    a\n    b\n", []string{"a", "b"}},
		{"assignment on a deeper line", "raise \"x\" if:\n    a\n        y := 1\n    y\n", []string{"a", "(:= y 1)", "y"}},
		{"after a rule indented at once, back at the margin", "from m import a\n    raise \"y\" if:\n        b\nraise \"x\" if:\n    a\n", []string{"b"}},
	}
	for _, c := range cases {
		stmts, err := parsePolicy(c.src)
		if err != nil {
			t.Errorf("%s: %s", c.name, err.msg)
			continue
		}
		var r *RaiseStmt
		for _, s := range stmts {
			if x, ok := s.(*RaiseStmt); ok {
				r = x
				break
			}
		}
		var got []string
		for _, e := range r.Body {
			got = append(got, sexpr(e))
		}
		if strings.Join(got, " | ") != strings.Join(c.want, " | ") {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}

func TestMultilineStrings(t *testing.T) {
	stmts, err := parsePolicy("a := \"\"\"\n    abc\n      def\n    \"\"\"\nb := r'''x\\'y'''\n")
	if err != nil {
		t.Fatal(err.msg)
	}
	if got := stmts[0].(*DeclStmt).Body[0].(*StringLit).value; got != "\nabc\n  def\n" {
		t.Errorf("dedented value %q", got)
	}
	if s := stmts[1].(*DeclStmt).Body[0].(*StringLit); s.value != `x\'y` || s.Mod != 'r' || !s.Multi {
		t.Errorf("raw multi-line string %+v", s)
	}
}

func TestSyntaxErrors(t *testing.T) {
	cases := []struct {
		src       string
		line, col int
		msg       string
	}{
		{"raise \"x\" if:\n(m: Message)\n", 1, 14, "expected an indented block"},
		{"raise \"x\" if:\n    a b\n", 2, 7, "each condition goes on its own line"},
		{"raise \"x\"\n", 1, 10, "expected 'if:'"},
		{"raise \"x\" if:\n    a := \n", 2, 9, "expected an expression"},
		{"x = 1\n", 1, 3, "expected ':='"},
		{"raise \"x\" if:\n    (a: Message\n", 2, 5, "never closed"},
		{"raise \"x\" if:\n    a)\n", 2, 6, "unmatched"},
		{"raise \"x\" if:\n    \"abc\n", 2, 5, "unterminated string"},
		{"raise \"x\" if:\n    a $ b\n", 2, 7, "unexpected character"},
		{"raise \"x\" if:\n    f(a=1, 2)\n", 2, 12, "positional argument after keyword"},
		{"raise \"x\" if:\n    a if b\n", 2, 11, "expected 'else'"},
		{"  raise \"x\" if:\n        a\n  b := 1\n c\n", 3, 3, "matches no open block"},
		{"from m import a\n    raise \"x\" if:\n        a\n    raise \"y\" if:\n        b\n", 4, 5, "start it at column 1"},
		{"raise \"x\" if:\n    a\n        b\n", 3, 9, "each condition goes on its own line"},
		{"from invariant import\n", 1, 22, "expected a name"},
		{"raise \"x\" if:\n    [x for x y]\n", 2, 14, "expected 'in'"},
		{"raise \"x\" if:\n    12abc\n", 2, 5, "invalid number"},
	}
	for _, c := range cases {
		_, err := Parse(c.src)
		le, ok := err.(*LoadError)
		if !ok || !le.Syntax() {
			t.Errorf("%q: want a syntax error, got %v", c.src, err)
			continue
		}
		d := le.Diagnostics[0]
		if d.Line != c.line || d.Col != c.col || !strings.Contains(d.Msg, c.msg) {
			t.Errorf("%q: got %d:%d %q, want %d:%d containing %q", c.src, d.Line, d.Col, d.Msg, c.line, c.col, c.msg)
		}
	}
}

func TestCheckErrors(t *testing.T) {
	cases := []struct {
		src   string
		class string
		pos   string // line:col
		msg   string
	}{
		{"raise \"x\" if:\n    (m: Mesage)\n", ClassName, "2:6", `unknown type "Mesage"`},
		{"raise \"x\" if:\n    (m: Message)\n    m.contents == 1\n", ClassAttribute, "3:7", "Attribute contents not found in Message"},
		{"raise \"x\" if:\n    (c: ToolCall)\n    c.function.nme == 1\n", ClassAttribute, "3:16", "Attribute nme not found in Function"},
		{"raise \"x\" if:\n    (o: ToolOutput)\n    tool_call(o).fn\n", ClassAttribute, "3:18", "not found in ToolCall"},
		{"raise \"x\" if:\n    y > 1\n", ClassName, "2:5", `unknown name "y"`},
		{"raise \"x\" if:\n    n := *\n", ClassSyntax, "2:10", "wildcards outside of semantic patterns"},
		{"raise \"x\" if:\n    n := <EMAIL_ADDRESS>\n", ClassSyntax, "2:10", "value references outside"},
		{"raise \"x\" if:\n    (c: ToolCall)\n    c is tool:x({a: <NOPE>})\n", ClassName, "3:21", "Unsupported value type: NOPE"},
		{"import os\n", ClassExcessive, "1:1", `module "os" is not available`},
		{"from invariant.detectors import nothing_here\n", ClassImport, "1:33", `has no "nothing_here"`},
		{"from invariant.magic import x\n", ClassImport, "1:1", "unknown module"},
		{"p(m: Message) :=\n    m.role == \"user\"\nraise \"x\" if:\n    (m: Message)\n    p(m, m)\n", ClassType, "5:5", "takes 1 argument"},
		{"raise \"x\" if:\n    (m: Message)\n    (m: Message)\n", ClassName, "3:6", "declared twice"},
		{"raise \"x\" if:\n    (a: Message)\n    a -> \"b\"\n", ClassSyntax, "3:10", "relates two variables"},
		{"raise \"x\" if:\n    counter(min=1):\n        a\n", ClassName, "2:5", "not a quantifier"},
		{"raise \"x\" if:\n    match(\"(\", \"a\")\n", ClassRegex, "2:11", "invalid regular expression"},
		{"x := 1\nx := 2\n", ClassName, "2:1", "already declared"},
		{"raise \"x\" if:\n    tool:abc\n", ClassSyntax, "2:5", "only be used after 'is'"},
		{"raise \"x\" if:\n    (x: len)\n", ClassType, "2:6", "not a type"},
	}
	for _, c := range cases {
		_, err := Parse(c.src)
		le, ok := err.(*LoadError)
		if !ok {
			t.Errorf("%q: want a load error, got %v", c.src, err)
			continue
		}
		found := false
		for _, d := range le.Diagnostics {
			if d.Class == c.class && d.Pos.String() == c.pos && strings.Contains(d.Msg, c.msg) {
				found = true
			}
		}
		if !found {
			t.Errorf("%q: want %s at %s containing %q, got:\n%s", c.src, c.class, c.pos, c.msg, le.Report())
		}
	}
}

func TestReportCaret(t *testing.T) {
	src := "raise \"x\" if:\n\t(m: Message)\n\tm.role == \"user\" + UNKNOWN\n"
	_, err := Parse(src)
	le := err.(*LoadError)
	want := "policy:3:21: NameError: unknown name \"UNKNOWN\" (not a variable, declaration, import or builtin)\n" +
		"   3 | \tm.role == \"user\" + UNKNOWN\n" +
		"     | \t                   ^\n"
	if got := le.Report(); got != want {
		t.Errorf("report:\n%s\nwant:\n%s", got, want)
	}
	if got := le.Error(); got != `policy:3:21: unknown name "UNKNOWN" (not a variable, declaration, import or builtin)` {
		t.Errorf("Error() = %q", got)
	}
}
