package policy

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// Pos is a place in the policy source: 1-based line and column. Columns count
// code points, so a caret lines up under non-ASCII text too.
type Pos struct {
	Line, Col int
}

func (p Pos) String() string { return fmt.Sprintf("%d:%d", p.Line, p.Col) }

// Error classes. Runtime and load errors carry the name of the class the
// Python implementation raises for the same problem, so callers (and the
// conformance suite) can tell them apart without parsing messages.
const (
	ClassSyntax           = "SyntaxError"
	ClassName             = "NameError"
	ClassType             = "TypeError"
	ClassImport           = "ImportError"
	ClassExcessive        = "ExcessivePolicyError"
	ClassAttribute        = "InvariantAttributeError"
	ClassMissingParameter = "MissingPolicyParameter"
	ClassKey              = "KeyError"
	ClassValue            = "ValueError"
	ClassAttributePy      = "AttributeError"
	ClassZeroDivision     = "ZeroDivisionError"
	ClassJSON             = "JSONDecodeError"
	ClassRegex            = "RegexError"
	ClassDetectorFailed   = "DetectorError"
	ClassUnavailable      = "DetectorUnavailable"
	ClassBudget           = "BudgetExceeded"
	ClassInput            = "InvalidInput"
	ClassInternal         = "InternalError"
)

// Diagnostic is one problem found while loading a policy (parsing, scoping,
// type checking, import resolution).
type Diagnostic struct {
	Pos
	Msg   string
	Class string
}

// LoadError is returned by Parse when a policy cannot be used. It holds every
// problem found; a syntax error stops parsing, so it is then the only one.
type LoadError struct {
	// Name is the policy's file name used in messages ("policy" if empty).
	Name        string
	Diagnostics []Diagnostic
	src         string
}

func (e *LoadError) name() string {
	if e.Name == "" {
		return "policy"
	}
	return e.Name
}

func (e *LoadError) Error() string {
	if len(e.Diagnostics) == 0 {
		return e.name() + ": invalid policy"
	}
	d := e.Diagnostics[0]
	msg := fmt.Sprintf("%s:%d:%d: %s", e.name(), d.Line, d.Col, d.Msg)
	if n := len(e.Diagnostics) - 1; n > 0 {
		msg += fmt.Sprintf(" (and %d more)", n)
	}
	return msg
}

// Syntax reports whether the policy failed to parse at all (as opposed to
// parsing but failing name resolution or type checks).
func (e *LoadError) Syntax() bool {
	for _, d := range e.Diagnostics {
		if d.Class == ClassSyntax {
			return true
		}
	}
	return false
}

// Report renders every diagnostic with the offending source line and a caret
// under the column:
//
//	policy:9:37: NameError: unknown name 'CodeIssue'
//	   9 |     call1.function.name == "edit" + CodeIssue
//	     |                                     ^
func (e *LoadError) Report() string {
	return renderReport(e.name(), e.src, e.Diagnostics)
}

func renderReport(name, src string, diags []Diagnostic) string {
	lines := strings.Split(src, "\n")
	var b strings.Builder
	ds := append([]Diagnostic(nil), diags...)
	sort.SliceStable(ds, func(i, j int) bool {
		if ds[i].Line != ds[j].Line {
			return ds[i].Line < ds[j].Line
		}
		return ds[i].Col < ds[j].Col
	})
	for _, d := range ds {
		fmt.Fprintf(&b, "%s:%d:%d: %s: %s\n", name, d.Line, d.Col, d.Class, d.Msg)
		if d.Line < 1 || d.Line > len(lines) {
			continue
		}
		var line string
		line, d.Col = clipLine(strings.TrimRight(lines[d.Line-1], "\r"), d.Col)
		gutter := fmt.Sprintf("%4d | ", d.Line)
		b.WriteString(gutter)
		b.WriteString(line)
		b.WriteByte('\n')
		b.WriteString(strings.Repeat(" ", len(gutter)-2))
		b.WriteString("| ")
		// Copy tabs from the source so the caret stays aligned in terminals.
		col := 1
		for _, r := range line {
			if col >= d.Col {
				break
			}
			if r == '\t' {
				b.WriteByte('\t')
			} else {
				b.WriteByte(' ')
			}
			col++
		}
		for ; col < d.Col; col++ {
			b.WriteByte(' ')
		}
		b.WriteString("^\n")
	}
	return b.String()
}

// clipLine shortens a line longer than maxReportLine code points to a
// window around col, so that the report of a policy written on one huge
// line stays small; it returns the window and col within it.
func clipLine(line string, col int) (string, int) {
	const maxReportLine, before = 160, 80
	if utf8.RuneCountInString(line) <= maxReportLine {
		return line, col
	}
	rs := []rune(line)
	start := max(0, min(col-1-before, len(rs)-maxReportLine))
	end := min(len(rs), start+maxReportLine)
	out := string(rs[start:end])
	col -= start
	if start > 0 {
		out = "..." + out
		col += 3
	}
	if end < len(rs) {
		out += "..."
	}
	return out, col
}

// RuntimeError is a failure while checking a trace: a policy that uses a
// forbidden attribute, a missing parameter, a type error, an exhausted budget.
// Class names the Python exception class the reference implementation raises
// in the same situation (see the Class* constants).
type RuntimeError struct {
	Class string
	Msg   string
	Rule  int    // index of the raise statement being evaluated, -1 if none
	Pos   Pos    // where in the policy, zero if unknown
	Name  string // the policy's file name ("policy" if empty)
}

func (e *RuntimeError) Error() string {
	name := e.Name
	if name == "" {
		name = "policy"
	}
	if e.Pos.Line > 0 {
		return fmt.Sprintf("%s:%d:%d: %s: %s", name, e.Pos.Line, e.Pos.Col, e.Class, e.Msg)
	}
	return fmt.Sprintf("%s: %s: %s", name, e.Class, e.Msg)
}

// lineIndex maps byte offsets of the source to positions.
type lineIndex struct {
	src    string
	starts []int
}

func newLineIndex(src string) *lineIndex {
	li := &lineIndex{src: src, starts: []int{0}}
	for i := 0; i < len(src); i++ {
		if src[i] == '\n' {
			li.starts = append(li.starts, i+1)
		}
	}
	return li
}

func (li *lineIndex) pos(off int) Pos {
	if off < 0 {
		return Pos{}
	}
	if off > len(li.src) {
		off = len(li.src)
	}
	l := sort.Search(len(li.starts), func(i int) bool { return li.starts[i] > off }) - 1
	if l < 0 {
		l = 0
	}
	col := utf8.RuneCountInString(li.src[li.starts[l]:off]) + 1
	return Pos{Line: l + 1, Col: col}
}
