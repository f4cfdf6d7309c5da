package policy_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/lookout-dev/lookout/internal/jsonscan"
	"github.com/lookout-dev/lookout/internal/policy"
	"github.com/lookout-dev/lookout/internal/testcorpus"
	"github.com/lookout-dev/lookout/internal/trace"
)

// The conformance test runs every case of Invariant's analyzer test-suite
// (translated to data in ../shared/conformance/invariant, see its README) in
// every mode with every expectation key except the Python-AST assertions.
// Every case whose needs are met by the registered detectors must pass, and
// CONFORMANCE.md must list exactly the cases that fail.

var updateConformance = flag.Bool("update", false, "rewrite the generated tables of CONFORMANCE.md from this run")

type confCase struct {
	Name           string                     `json:"name"`
	Mode           string                     `json:"mode"`
	Policy         string                     `json:"policy"`
	Trace          json.RawMessage            `json:"trace"`
	Past           json.RawMessage            `json:"past"`
	Pending        json.RawMessage            `json:"pending"`
	Steps          []confStep                 `json:"steps"`
	Parameters     map[string]any             `json:"parameters"`
	Limits         *confLimits                `json:"limits"` // Lookout's budgets; unset fields keep policy.DefaultLimits
	RaiseUnhandled bool                       `json:"raise_unhandled"`
	Expect         map[string]json.RawMessage `json:"expect"`
	Needs          []string                   `json:"needs"`
	Notes          string                     `json:"notes"`
}

type confLimits struct {
	Steps      int64 `json:"steps"`
	Memory     int64 `json:"memory"`
	Violations int   `json:"violations"`
}

type confStep struct {
	Method  string                     `json:"method"`
	Input   json.RawMessage            `json:"input"`
	Past    json.RawMessage            `json:"past"`
	Pending json.RawMessage            `json:"pending"`
	Expect  map[string]json.RawMessage `json:"expect"`
}

// needDetectors maps the suite's capability tags to the detectors that
// provide them; tags mapped to nil are part of the core language.
var needDetectors = map[string][]string{
	"secrets":          {"secrets"},
	"pii":              {"pii"},
	"similarity":       {"is_similar"},
	"python_code":      {"python_code"},
	"fuzzy_contains":   {"fuzzy_contains"},
	"prompt_injection": {"prompt_injection"},
	"semgrep":          {"semgrep"},
	"moderation":       {"moderated"},
	"html":             {"html_code", "links"},
	"unicode":          {"unicode"},
	"images":           nil,
	"access_control":   nil,
	"llm":              {"llm"},
	"copyright":        {"copyright"},
	"ocr":              {"ocr"},
}

func needsMet(needs []string) (bool, []string) {
	var missing []string
	for _, n := range needs {
		dets, ok := needDetectors[n]
		if !ok {
			missing = append(missing, n)
			continue
		}
		for _, d := range dets {
			if !policy.DetectorComplete(d) {
				missing = append(missing, n)
				break
			}
		}
	}
	return len(missing) == 0, missing
}

func loadCases(t testing.TB) map[string][]confCase {
	conformanceDir := testcorpus.Conformance(t, "invariant")
	files, err := filepath.Glob(filepath.Join(conformanceDir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("conformance suite not found in %s (err %v)", conformanceDir, err)
	}
	out := map[string][]confCase{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var cs []confCase
		if err := json.Unmarshal(data, &cs); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[filepath.Base(f)] = cs
	}
	return out
}

func decodeEvents(raw json.RawMessage) ([]trace.Event, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	return trace.DecodeEvents(jsonscan.New(raw), "trace")
}

// TestConformance runs the suite.
func TestConformance(t *testing.T) {
	suites := loadCases(t)
	listed := readConformanceList(t)
	var names []string
	for f := range suites {
		names = append(names, f)
	}
	sort.Strings(names)
	failing := map[string]string{}
	failingRows := map[string]string{}
	total, passed := 0, 0
	coreTotal, corePassed := 0, 0
	var counts []string
	for _, f := range names {
		fp := 0
		for _, c := range suites[f] {
			total++
			core := len(c.Needs) == 0
			if core {
				coreTotal++
			}
			err := runCase(c)
			if err == nil {
				fp++
				passed++
				if core {
					corePassed++
				}
				continue
			}
			failing[c.Name] = err.Error()
			met, missing := needsMet(c.Needs)
			if met {
				t.Errorf("%s: %v", c.Name, err)
				failingRows[c.Name] = fmt.Sprintf("| `%s` | %s | fails: %s |", c.Name, strings.Join(c.Needs, ", "), mdCell(err.Error()))
			} else {
				t.Logf("%s: fails without %s: %v", c.Name, strings.Join(missing, ", "), firstLine(err.Error()))
				failingRows[c.Name] = fmt.Sprintf("| `%s` | %s | %s |", c.Name, strings.Join(c.Needs, ", "), missingReason(missing))
			}
		}
		t.Logf("%-36s %3d/%3d", f, fp, len(suites[f]))
		counts = append(counts, fmt.Sprintf("| %s | %d | %d |", f, fp, len(suites[f])))
	}
	t.Logf("conformance: %d/%d cases pass; core (needs: []) %d/%d", passed, total, corePassed, coreTotal)
	if *updateConformance {
		writeConformance(t, counts, failingRows, passed, total, corePassed, coreTotal)
		return
	}
	for name := range failing {
		if _, ok := listed[name]; !ok {
			t.Errorf("%s fails but is not listed in CONFORMANCE.md: %s", name, failing[name])
		}
	}
	for name := range listed {
		if _, ok := failing[name]; !ok {
			t.Errorf("%s is listed in CONFORMANCE.md as failing but passes (or does not exist)", name)
		}
	}
}

// lookoutCasesDirs hold Lookout-owned cases in the suite's format:
// testdata/conformance has behaviour of Invariant's analyzer that its own
// test-suite does not cover, each case's notes saying where in Invariant it
// comes from; testdata/lookout has Lookout-only semantics (budgets, ranges),
// each case's notes saying why Lookout behaves so.
var lookoutCasesDirs = []string{"testdata/conformance", "testdata/lookout"}

// TestConformanceLookoutCases runs the Lookout-owned cases; every one must
// pass.
func TestConformanceLookoutCases(t *testing.T) {
	var files []string
	for _, dir := range lookoutCasesDirs {
		fs, err := filepath.Glob(filepath.Join(dir, "*.json"))
		if err != nil || len(fs) == 0 {
			t.Fatalf("no cases in %s (err %v)", dir, err)
		}
		files = append(files, fs...)
	}
	names := map[string]bool{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var cs []confCase
		if err := json.Unmarshal(data, &cs); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, c := range cs {
			if names[c.Name] || !strings.HasPrefix(c.Name, "lookout::") || c.Notes == "" {
				t.Errorf("%s: %q: names must be unique and start with lookout::, and notes must say where the behaviour comes from", f, c.Name)
			}
			names[c.Name] = true
			if met, missing := needsMet(c.Needs); !met {
				t.Errorf("%s: needs %v, which this build lacks", c.Name, missing)
				continue
			}
			if err := runCase(c); err != nil {
				t.Errorf("%s: %v", c.Name, err)
			}
		}
	}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func mdCell(s string) string {
	s = firstLine(s)
	if len(s) > 160 {
		s = s[:160] + "..."
	}
	return strings.ReplaceAll(s, "|", "\\|")
}

// missingReason explains why a case cannot pass in this build.
func missingReason(tags []string) string {
	var parts []string
	for _, tag := range tags {
		dets, ok := needDetectors[tag]
		if !ok {
			parts = append(parts, tag+": unknown capability")
			continue
		}
		for _, d := range dets {
			if policy.DetectorComplete(d) {
				continue
			}
			stub, partial := false, ""
			for _, r := range policy.RegisteredDetectors() {
				if r.Name == d {
					stub = r.Unavailable != ""
					partial = r.Partial
				}
			}
			if partial != "" {
				parts = append(parts, "`"+d+"` is partial in this build: "+partial)
			} else if stub {
				parts = append(parts, "`"+d+"` needs a model or external service: not available in this build")
			} else {
				parts = append(parts, "`"+d+"` is not registered (model-free; see internal/policy/detectors)")
			}
		}
	}
	return strings.Join(parts, "; ")
}

const (
	beginGenerated = "<!-- BEGIN GENERATED: go test -run TestConformance -update -->"
	endGenerated   = "<!-- END GENERATED -->"
)

// writeConformance replaces the generated part of CONFORMANCE.md.
func writeConformance(t *testing.T, counts []string, rows map[string]string, passed, total, corePassed, coreTotal int) {
	data, err := os.ReadFile("CONFORMANCE.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	i, j := strings.Index(doc, beginGenerated), strings.Index(doc, endGenerated)
	if i < 0 || j < i {
		t.Fatal("CONFORMANCE.md has no generated section markers")
	}
	var b strings.Builder
	b.WriteString(beginGenerated + "\n\n")
	fmt.Fprintf(&b, "%d of %d cases pass; all %d of %d core cases (`needs: []`) pass.\n\n", passed, total, corePassed, coreTotal)
	b.WriteString("## Pass counts\n\n| file | passing | cases |\n|---|---|---|\n")
	for _, c := range counts {
		b.WriteString(c + "\n")
	}
	b.WriteString("\n## Failing cases\n\n| case | needs | reason |\n|---|---|---|\n")
	var names []string
	for n := range rows {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		b.WriteString(rows[n] + "\n")
	}
	b.WriteString("\n")
	doc = doc[:i] + b.String() + doc[j:]
	if err := os.WriteFile("CONFORMANCE.md", []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
}

// readConformanceList reads the case names in the first column of the
// table under "## Failing cases" in CONFORMANCE.md.
func readConformanceList(t *testing.T) map[string]string {
	f, err := os.Open("CONFORMANCE.md")
	if err != nil {
		t.Fatalf("CONFORMANCE.md: %v", err)
	}
	defer f.Close()
	out := map[string]string{}
	in := false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	cell := regexp.MustCompile("^\\|\\s*`([^`]+)`\\s*\\|")
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			in = strings.HasPrefix(line, "## Failing cases")
			continue
		}
		if !in {
			continue
		}
		if m := cell.FindStringSubmatch(line); m != nil {
			out[m[1]] = line
		}
	}
	return out
}

func runCase(c confCase) error {
	mode := c.Mode
	if mode == "" {
		mode = "analyze"
	}
	if mode == "parse" {
		return runParseCase(c)
	}
	p, err := policy.Parse(c.Policy)
	if err != nil {
		return checkError(c.Expect, err)
	}
	if c.Limits != nil {
		l := policy.DefaultLimits
		if c.Limits.Steps > 0 {
			l.Steps = c.Limits.Steps
		}
		if c.Limits.Memory > 0 {
			l.Memory = c.Limits.Memory
		}
		if c.Limits.Violations > 0 {
			l.Violations = c.Limits.Violations
		}
		p.SetLimits(l)
	}
	switch mode {
	case "analyze", "analyze_pending":
		var res *policy.Result
		if mode == "analyze" {
			var events []trace.Event
			events, err = decodeEvents(c.Trace)
			if err != nil {
				return fmt.Errorf("decoding trace: %v", err)
			}
			res, err = p.Analyze(events, c.Parameters)
		} else {
			past, err1 := decodeEvents(c.Past)
			pending, err2 := decodeEvents(c.Pending)
			if err := errors.Join(err1, err2); err != nil {
				return fmt.Errorf("decoding trace: %v", err)
			}
			res, err = p.AnalyzePending(past, pending, c.Parameters)
		}
		if err == nil && c.RaiseUnhandled && len(res.Violations) > 0 {
			err = &policy.RuntimeError{Class: "UnhandledError", Msg: fmt.Sprintf("%d unhandled violation(s)", len(res.Violations))}
		}
		if err != nil {
			return checkError(c.Expect, err)
		}
		if _, ok := c.Expect["runtime_error"]; ok {
			return fmt.Errorf("expected error %s, got %d violations", c.Expect["runtime_error"], len(res.Violations))
		}
		raw := c.Trace
		if mode == "analyze_pending" {
			raw = joinArrays(c.Past, c.Pending)
		}
		return checkResult(c.Expect, res, raw)
	case "monitor":
		m := policy.NewMonitor(p, c.Parameters)
		for i, s := range c.Steps {
			var res *policy.Result
			var raw json.RawMessage
			switch s.Method {
			case "analyze":
				events, err := decodeEvents(s.Input)
				if err != nil {
					return fmt.Errorf("step %d: decoding: %v", i, err)
				}
				res, err = m.Analyze(events)
				if err != nil {
					return fmt.Errorf("step %d: %v", i, err)
				}
				raw = s.Input
			case "analyze_pending", "check":
				past, err1 := decodeEvents(s.Past)
				pending, err2 := decodeEvents(s.Pending)
				if err := errors.Join(err1, err2); err != nil {
					return fmt.Errorf("step %d: decoding: %v", i, err)
				}
				res, err = m.AnalyzePending(past, pending)
				if err != nil {
					return fmt.Errorf("step %d: %v", i, err)
				}
				raw = joinArrays(s.Past, s.Pending)
			default:
				return fmt.Errorf("step %d: unknown method %q", i, s.Method)
			}
			if s.Expect != nil {
				if err := checkResult(s.Expect, res, raw); err != nil {
					return fmt.Errorf("step %d: %v", i, err)
				}
			}
		}
		return nil
	}
	return fmt.Errorf("unknown mode %q", mode)
}

func joinArrays(a, b json.RawMessage) json.RawMessage {
	var x, y []json.RawMessage
	json.Unmarshal(a, &x)
	json.Unmarshal(b, &y)
	out, _ := json.Marshal(append(x, y...))
	return out
}

func errorClassAndText(err error) (classes []string, text string) {
	var le *policy.LoadError
	var re *policy.RuntimeError
	switch {
	case errors.As(err, &le):
		var msgs []string
		for _, d := range le.Diagnostics {
			classes = append(classes, d.Class)
			msgs = append(msgs, d.Msg)
		}
		return classes, strings.Join(msgs, "\n")
	case errors.As(err, &re):
		return []string{re.Class}, re.Error()
	}
	return nil, err.Error()
}

func checkError(expect map[string]json.RawMessage, err error) error {
	raw, ok := expect["runtime_error"]
	if !ok {
		if le, ok := err.(*policy.LoadError); ok {
			return fmt.Errorf("unexpected error:\n%s", le.Report())
		}
		return fmt.Errorf("unexpected error: %v", err)
	}
	var want string
	json.Unmarshal(raw, &want)
	classes, text := errorClassAndText(err)
	found := false
	for _, c := range classes {
		if c == want {
			found = true
		}
	}
	if !found {
		return fmt.Errorf("want error class %s, got %v: %v", want, classes, err)
	}
	var contains []string
	json.Unmarshal(expect["error_contains"], &contains)
	for _, s := range contains {
		if !strings.Contains(text, s) {
			return fmt.Errorf("error %q does not contain %q", text, s)
		}
	}
	return nil
}

func checkResult(expect map[string]json.RawMessage, res *policy.Result, traceJSON json.RawMessage) error {
	vs := res.Violations
	allRanges := map[string]bool{}
	nranges := 0
	for _, v := range vs {
		for _, r := range v.Ranges {
			allRanges[r] = true
			nranges++
		}
	}
	describe := func() string {
		var s []string
		for _, v := range vs {
			s = append(s, fmt.Sprintf("%s %v", v.String(), v.Ranges))
		}
		return "[" + strings.Join(s, "; ") + "]"
	}
	var ordered []string
	for _, v := range vs {
		ordered = append(ordered, v.Ranges...)
	}
	keys := make([]string, 0, len(expect))
	for k := range expect {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		raw := expect[k]
		switch k {
		case "errors":
			var n int
			json.Unmarshal(raw, &n)
			if len(vs) != n {
				return fmt.Errorf("want %d violations, got %d: %s", n, len(vs), describe())
			}
		case "errors_min":
			var n int
			json.Unmarshal(raw, &n)
			if len(vs) < n {
				return fmt.Errorf("want at least %d violations, got %d", n, len(vs))
			}
		case "violation_contains":
			var items []struct {
				Index int    `json:"index"`
				Text  string `json:"text"`
			}
			json.Unmarshal(raw, &items)
			for _, it := range items {
				if it.Index >= len(vs) || !strings.Contains(vs[it.Index].String(), it.Text) {
					return fmt.Errorf("violation %d does not contain %q: %s", it.Index, it.Text, describe())
				}
			}
		case "ranges", "ranges_absent":
			var rs []string
			json.Unmarshal(raw, &rs)
			for _, r := range rs {
				if allRanges[r] != (k == "ranges") {
					return fmt.Errorf("%s: %q; got %s", k, r, describe())
				}
			}
		case "ranges_exact": // every range of every violation, in order
			var rs []string
			json.Unmarshal(raw, &rs)
			if !slices.Equal(ordered, rs) {
				return fmt.Errorf("ranges %q, want %q", ordered, rs)
			}
		case "truncated":
			var want bool
			json.Unmarshal(raw, &want)
			if res.Truncated != want {
				return fmt.Errorf("truncated %v, want %v (%d violations)", res.Truncated, want, len(vs))
			}
		case "ranges_count":
			var n int
			json.Unmarshal(raw, &n)
			if nranges != n {
				return fmt.Errorf("want %d ranges, got %d: %s", n, nranges, describe())
			}
		case "masked":
			var want map[string]string
			json.Unmarshal(raw, &want)
			var tr any
			if err := json.Unmarshal(traceJSON, &tr); err != nil {
				return err
			}
			for _, v := range vs {
				for _, r := range v.Ranges {
					if err := maskRange(tr, r); err != nil {
						return err
					}
				}
			}
			for path, s := range want {
				got, ok := lookupPath(tr, path).(string)
				if !ok || got != s {
					return fmt.Errorf("masked %s = %q, want %q", path, got, s)
				}
			}
		case "violations_by_assignment":
			if err := checkAssignments(raw, vs); err != nil {
				return err
			}
		case "runtime_error", "error_contains":
		default:
			return fmt.Errorf("unknown expect key %q", k)
		}
	}
	return nil
}

func lookupPath(v any, path string) any {
	for _, seg := range strings.Split(path, ".") {
		switch x := v.(type) {
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(x) {
				return nil
			}
			v = x[i]
		case map[string]any:
			v = x[seg]
		default:
			return nil
		}
	}
	return v
}

// maskRange replaces the characters of a substring range with '*', as
// Invariant's mask_json_paths does; object ranges are ignored.
func maskRange(tr any, r string) error {
	i := strings.LastIndexByte(r, ':')
	if i < 0 {
		return nil
	}
	path, span := r[:i], r[i+1:]
	var s, e int
	if _, err := fmt.Sscanf(span, "%d-%d", &s, &e); err != nil {
		return fmt.Errorf("bad range %q", r)
	}
	segs := strings.Split(path, ".")
	parent := lookupPath(tr, strings.Join(segs[:len(segs)-1], "."))
	last := segs[len(segs)-1]
	if len(segs) == 1 {
		parent = tr
	}
	set := func(str string) string {
		rs := []rune(str)
		if s < 0 || e > len(rs) || s > e {
			return str
		}
		for k := s; k < e; k++ {
			rs[k] = '*'
		}
		return string(rs)
	}
	switch x := parent.(type) {
	case []any:
		k, _ := strconv.Atoi(last)
		if str, ok := x[k].(string); ok {
			x[k] = set(str)
		}
	case map[string]any:
		if str, ok := x[last].(string); ok {
			x[last] = set(str)
		}
	}
	return nil
}

var toolsAddr = regexp.MustCompile(`^\d+\.tools\.(\d+)$`)

func checkAssignments(raw json.RawMessage, vs []*policy.Violation) error {
	var want []struct {
		Assignment map[string]int `json:"assignment"`
		Args       []string       `json:"args"`
	}
	json.Unmarshal(raw, &want)
	key := func(a map[string]int) string {
		var ks []string
		for k, v := range a {
			ks = append(ks, fmt.Sprintf("%s=%d", k, v))
		}
		sort.Strings(ks)
		return strings.Join(ks, ",")
	}
	got := map[string]map[string]bool{}
	for _, v := range vs {
		a := map[string]int{}
		for _, b := range v.Vars {
			idx := b.Event
			if m := toolsAddr.FindStringSubmatch(b.Address); m != nil {
				idx, _ = strconv.Atoi(m[1])
			}
			a[b.Name] = idx
		}
		k := key(a)
		if got[k] == nil {
			got[k] = map[string]bool{}
		}
		for _, x := range v.Args {
			got[k][fmt.Sprint(x)] = true
		}
	}
	if len(got) != len(want) {
		return fmt.Errorf("want %d assignment groups, got %d: %v", len(want), len(got), got)
	}
	for _, w := range want {
		g, ok := got[key(w.Assignment)]
		if !ok {
			return fmt.Errorf("missing assignment %v; got %v", w.Assignment, got)
		}
		if len(g) != len(w.Args) {
			return fmt.Errorf("assignment %v: args %v, want %v", w.Assignment, g, w.Args)
		}
		for _, a := range w.Args {
			if !g[a] {
				return fmt.Errorf("assignment %v: args %v, want %v", w.Assignment, g, w.Args)
			}
		}
	}
	return nil
}

func runParseCase(c confCase) error {
	_, err := policy.Parse(c.Policy)
	var le *policy.LoadError
	if err != nil && !errors.As(err, &le) {
		return fmt.Errorf("Parse returned %T: %v", err, err)
	}
	var diags []policy.Diagnostic
	report := ""
	if le != nil {
		diags = le.Diagnostics
		report = le.Report()
	}
	for k, raw := range c.Expect {
		switch k {
		case "parse_error":
			var want bool
			json.Unmarshal(raw, &want)
			if (err != nil) != want {
				return fmt.Errorf("parse_error %v, got %v", want, err)
			}
		case "parse_errors":
			var n int
			json.Unmarshal(raw, &n)
			if len(diags) != n {
				return fmt.Errorf("want %d errors, got %d:\n%s", n, len(diags), report)
			}
		case "error_contains":
			var ss []string
			json.Unmarshal(raw, &ss)
			for _, s := range ss {
				found := false
				for _, d := range diags {
					if strings.Contains(d.Msg, s) {
						found = true
					}
				}
				if !found {
					return fmt.Errorf("no error contains %q:\n%s", s, report)
				}
			}
		case "syntax_ok":
			var want bool
			json.Unmarshal(raw, &want)
			if ok := le == nil || !le.Syntax(); ok != want {
				return fmt.Errorf("syntax_ok %v, got:\n%s", want, report)
			}
		case "error_blocks", "error_blocks_absent":
			var blocks [][]string
			json.Unmarshal(raw, &blocks)
			for _, b := range blocks {
				if containsBlock(report, b) != (k == "error_blocks") {
					return fmt.Errorf("%s %q in report:\n%s", k, b, report)
				}
			}
		case "ast":
			// Python-specific structure; syntax_ok covers the portable part.
		default:
			return fmt.Errorf("unknown expect key %q", k)
		}
	}
	return nil
}

// containsBlock is upstream's contains_successive_block: some report line
// contains block[0] at column c, and the following lines, read from column
// c on, start with block[1], block[2], ...
func containsBlock(report string, block []string) bool {
	lines := strings.Split(report, "\n")
	for i, line := range lines {
		rl := []rune(line)
		for c := 0; c < len(rl); c++ {
			if !strings.HasPrefix(string(rl[c:]), block[0]) {
				continue
			}
			ok := true
			for k := 1; k < len(block); k++ {
				if i+k >= len(lines) {
					ok = false
					break
				}
				next := []rune(lines[i+k])
				if c > len(next) || !strings.HasPrefix(string(next[c:]), block[k]) {
					ok = false
					break
				}
			}
			if ok {
				return true
			}
		}
	}
	return false
}
