package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/lookout-dev/lookout/internal/testcorpus"
)

// writeFile writes content to name in a fresh temporary directory and
// returns its path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const inboxPolicy = `raise PolicyViolation("assistant read the inbox", call) if:
    (call: ToolCall)
    call is tool:get_inbox
`

// Two JSONL traces: the first reads the inbox, the second does not.
const twoTraces = `[{"role":"user","content":"inbox?"},{"role":"assistant","content":null,"tool_calls":[{"id":"1","type":"function","function":{"name":"get_inbox","arguments":{}}}]}]
[{"role":"user","content":"hello"},{"role":"assistant","content":"hi"}]
`

func TestCheckText(t *testing.T) {
	pol := writeFile(t, "inbox.iv", inboxPolicy)
	inbox := testcorpus.File(t, "seeds/invariant-inbox.json")
	code, out, errOut := runCLI(t, "", "check", "--policy", pol, inbox)
	if code != 1 {
		t.Fatalf("exit %d, want 1 (a violation)\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	want := "trace 0: assistant read the inbox [messages.1.tool_calls.0]\n1 trace checked, 1 with violations, 1 violation\n"
	if out != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", out, want)
	}
	if errOut != "" {
		t.Errorf("stderr should be empty: %q", errOut)
	}

	// A policy that nothing violates: exit 0.
	clean := writeFile(t, "clean.iv", "raise \"deleted\" if:\n    (call: ToolCall)\n    call is tool:delete_everything\n")
	code, out, _ = runCLI(t, "", "check", "--policy", clean, inbox)
	if code != 0 || out != "1 trace checked, 0 with violations, 0 violations\n" {
		t.Errorf("clean policy: exit %d, stdout %q", code, out)
	}
}

// TestCheckMissingParam: traces the policy fails on (here for want of a
// --param) are not reported as checked with no violations.
func TestCheckMissingParam(t *testing.T) {
	pol := writeFile(t, "param.iv", "raise \"named\" if:\n    (msg: Message)\n    msg.content == input.name\n")
	traces := writeFile(t, "two.jsonl", twoTraces)
	code, out, errOut := runCLI(t, "", "check", "--policy", pol, traces)
	if code != 2 || out != "0 traces checked, 0 with violations, 0 violations; 2 traces not checked: the policy failed on them (see above)\n" {
		t.Errorf("without --param: exit %d, stdout %q", code, out)
	}
	if !strings.Contains(errOut, "input.name") {
		t.Errorf("stderr does not name the missing parameter: %s", errOut)
	}
	code, out, _ = runCLI(t, "", "check", "--policy", pol, "--param", "name=hello", traces)
	if code != 1 || out != "trace 1: named [messages.0]\n2 traces checked, 1 with violations, 1 violation\n" {
		t.Errorf("with --param: exit %d, stdout %q", code, out)
	}
}

func TestCheckJSON(t *testing.T) {
	pol := writeFile(t, "p.iv", `raise PolicyViolation("found an address", msg, kind="email") if:
    (msg: Message)
    msg.role == "user"
    "bob@example.com" in msg.content
`)
	traces := `[{"role":"user","content":"mail bob@example.com now"}]` + "\n" + `[{"role":"user","content":"nothing"}]` + "\n"
	code, out, errOut := runCLI(t, traces, "check", "--policy", pol, "--json", "-")
	if code != 1 {
		t.Fatalf("exit %d, want 1\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("want one line per trace, got %d:\n%s", len(lines), out)
	}
	type errInfo struct {
		Key    string            `json:"key"`
		Args   []json.RawMessage `json:"args"`
		Kwargs map[string]any    `json:"kwargs"`
		Ranges []string          `json:"ranges"`
	}
	var first struct {
		Index  int       `json:"index"`
		Errors []errInfo `json:"errors"`
		File   *string   `json:"file"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
		t.Fatal(err)
	}
	if first.Index != 0 || len(first.Errors) != 1 || first.File != nil {
		t.Fatalf("line 1 = %s", lines[0])
	}
	e := first.Errors[0]
	if e.Key != "(0, (0,))" || len(e.Args) != 2 || string(e.Args[0]) != `"found an address"` ||
		!strings.Contains(string(e.Args[1]), `"role":"user"`) || e.Kwargs["kind"] != "email" {
		t.Errorf("violation = %+v", e)
	}
	wantRanges := []string{"messages.0", "messages.0.content:5-20"}
	if strings.Join(e.Ranges, " ") != strings.Join(wantRanges, " ") {
		t.Errorf("ranges %v, want %v", e.Ranges, wantRanges)
	}
	// Each line has exactly the members of the documented shape.
	var raw map[string]json.RawMessage
	json.Unmarshal([]byte(lines[0]), &raw)
	var members []string
	for k := range raw {
		members = append(members, k)
	}
	if len(members) != 2 || raw["index"] == nil || raw["errors"] == nil {
		t.Errorf("members %v, want index and errors", members)
	}
	var errMembers []map[string]json.RawMessage
	json.Unmarshal(raw["errors"], &errMembers)
	if len(errMembers[0]) != 4 {
		t.Errorf("an error has members %v, want key, args, kwargs, ranges", errMembers[0])
	}
	if lines[1] != `{"index":1,"errors":[]}` {
		t.Errorf("line 2 = %s", lines[1])
	}
}

func TestCheckTauBench(t *testing.T) {
	pol := writeFile(t, "tool.iv", `raise "reservation cancelled" if:
    (call: ToolCall)
    call is tool:cancel_reservation
`)
	tau := testcorpus.File(t, "openai/tau-bench/gpt-4o-airline.json")
	code, out, errOut := runCLI(t, "", "check", "--policy", pol, "--json", tau)
	if code != 1 || errOut != "" {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != 200 {
		t.Fatalf("%d lines, want 200", len(lines))
	}
	total := 0
	for i, l := range lines {
		var r struct {
			Index  int `json:"index"`
			Errors []struct {
				Ranges []string `json:"ranges"`
			} `json:"errors"`
		}
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		if r.Index != i {
			t.Fatalf("line %d has index %d", i, r.Index)
		}
		for _, e := range r.Errors {
			if len(e.Ranges) != 1 || !regexp.MustCompile(`^messages\.\d+\.tool_calls\.\d+$`).MatchString(e.Ranges[0]) {
				t.Errorf("trace %d: ranges %v", i, e.Ranges)
			}
		}
		total += len(r.Errors)
	}
	// the figure BenchmarkTauBench/tool-name reports for the same rule
	if total != 69 {
		t.Errorf("%d violations, want 69", total)
	}
}

func TestCheckParams(t *testing.T) {
	pol := writeFile(t, "p.iv", `raise "greeted the wrong user" if:
    (msg: Message)
    msg.role == "assistant"
    input.name in msg.content
    len(msg.content) > input.min
`)
	trace := `[{"role":"assistant","content":"hello alice"}]` + "\n"
	code, out, errOut := runCLI(t, trace, "check", "--policy", pol, "--param", "name=alice", "--param", "min=3", "-")
	if code != 1 || !strings.HasPrefix(out, "trace 0: greeted the wrong user [messages.0, messages.0.content:6-11]\n") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// min is JSON, so a number: the comparison decides.
	code, out, _ = runCLI(t, trace, "check", "--policy", pol, "--param", "name=alice", "--param", "min=30", "-")
	if code != 0 {
		t.Errorf("min=30: exit %d, stdout %q", code, out)
	}
	// A missing parameter is an error of the policy: exit 2, with its place.
	code, out, errOut = runCLI(t, trace, "check", "--policy", pol, "--param", "name=alice", "-")
	if code != 2 || !strings.Contains(errOut, "trace 0: "+pol+":5:") || !strings.Contains(errOut, "MissingPolicyParameter") {
		t.Errorf("missing parameter: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, _, errOut = runCLI(t, trace, "check", "--policy", pol, "--json", "--param", "name=alice", "-")
	if code != 2 {
		t.Errorf("missing parameter --json: exit %d, stderr %q", code, errOut)
	}
	for _, bad := range []string{"noequals", "1x=2", "a.b=3"} {
		if code, _, errOut := runCLI(t, trace, "check", "--policy", pol, "--param", bad, "-"); code != 2 || !strings.Contains(errOut, "parameter") {
			t.Errorf("--param %s: exit %d, stderr %q", bad, code, errOut)
		}
	}
}

func TestCheckPolicyErrors(t *testing.T) {
	inbox := testcorpus.File(t, "seeds/invariant-inbox.json")
	tests := []struct {
		name   string
		policy string
		stderr []string // regexps
	}{
		{"syntax error", "raise \"x\" if:\n    (call: ToolCall)\n    call.function.name == \n",
			[]string{`^FILE:3:\d+: SyntaxError: `, `(?m)^   3 \|     call\.function\.name == $`, `(?m)^     \| +\^$`}},
		{"unknown type", "raise \"x\" if:\n    (msg: Mesage)\n    msg.role == \"user\"\n",
			[]string{`^FILE:2:6: NameError: unknown type "Mesage"`, `(?m)^     \|      \^$`}},
		{"unknown name", "raise \"x\" if:\n    (msg: Message)\n    msg.role == nobody\n",
			[]string{`^FILE:3:17: NameError: `}},
		{"missing colon", "raise \"x\" if\n    (msg: Message)\n",
			[]string{`^FILE:2:5: SyntaxError: expected ":"`}},
		{"unclosed bracket", "raise \"x\" if:\n    (msg: Message)\n    msg.role in [\"user\", \"assistant\"\n",
			[]string{`^FILE:3:17: SyntaxError: "\[" is never closed`, `(?m)^     \|                 \^$`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pol := writeFile(t, "bad.iv", tc.policy)
			code, out, errOut := runCLI(t, "", "check", "--policy", pol, inbox)
			if code != 2 {
				t.Fatalf("exit %d, want 2\nstdout: %s\nstderr: %s", code, out, errOut)
			}
			if out != "" {
				t.Errorf("no trace should be checked, stdout %q", out)
			}
			for _, re := range tc.stderr {
				re = strings.ReplaceAll(re, "FILE", regexp.QuoteMeta(pol))
				if !regexp.MustCompile(re).MatchString(errOut) {
					t.Errorf("stderr does not match %s:\n%s", re, errOut)
				}
			}
		})
	}
}

func TestCheckInputs(t *testing.T) {
	pol := writeFile(t, "inbox.iv", inboxPolicy)
	good := writeFile(t, "two.jsonl", twoTraces)

	// One broken line among good ones: the others are checked with their
	// own index, the broken one reported with its place; exit 1.
	broken := "[{\"role\":\"user\",\"content\":\"a\"}]\n[{\"role\":\"user\",\"content\":5}]\n" + strings.SplitN(twoTraces, "\n", 2)[0] + "\n"
	code, out, errOut := runCLI(t, broken, "check", "--policy", pol, "-")
	if code != 1 {
		t.Fatalf("exit %d, want 1; stderr %s", code, errOut)
	}
	if !regexp.MustCompile(`^-:2:\d+: `).MatchString(errOut) {
		t.Errorf("stderr %q does not place the error on line 2", errOut)
	}
	if !strings.HasPrefix(out, "trace 2: assistant read the inbox") {
		t.Errorf("the trace after the broken one should keep index 2:\n%s", out)
	}

	// A broken line and no violation still exits 1.
	code, _, _ = runCLI(t, "[{\"role\":\"user\",\"content\":\"a\"}]\n[{\"role\":\"user\"\n", "check", "--policy", pol, "-")
	if code != 1 {
		t.Errorf("invalid input without violations: exit %d, want 1", code)
	}

	// Several files: each line names its file, indices restart per file.
	code, out, _ = runCLI(t, "", "check", "--policy", pol, "--json", good, good)
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if code != 1 || len(lines) != 4 || !strings.HasPrefix(lines[2], `{"file":"`+good+`","index":0,"errors":[{`) {
		t.Errorf("two files: exit %d\n%s", code, out)
	}
	code, out, _ = runCLI(t, "", "check", "--policy", pol, good, good)
	if code != 1 || !strings.Contains(out, good+": trace 0: assistant read the inbox") || !strings.HasSuffix(out, "4 traces checked, 2 with violations, 2 violations\n") {
		t.Errorf("two files, text: exit %d\n%s", code, out)
	}

	// Usage errors and unreadable files: exit 2.
	for name, args := range map[string][]string{
		"no policy flag":     {"check", good},
		"no trace file":      {"check", "--policy", pol},
		"missing policy":     {"check", "--policy", "no/such.iv", good},
		"missing trace file": {"check", "--policy", pol, "no/such.jsonl"},
		"both on stdin":      {"check", "--policy", "-", "-"},
		"unknown format":     {"check", "--policy", pol, "--format", "yaml", good},
	} {
		if code, _, _ := runCLI(t, "", args...); code != 2 {
			t.Errorf("%s: exit %d, want 2", name, code)
		}
	}
	// The policy itself may come from standard input.
	if code, out, _ := runCLI(t, inboxPolicy, "check", "--policy", "-", good); code != 1 || !strings.HasPrefix(out, "trace 0: ") {
		t.Errorf("policy on stdin: exit %d, %q", code, out)
	}
}

// TestCheckReadmeExample runs the example of the README's Guardrails
// section (its policy, its trace and its command) and compares the output
// with the one the README shows, so that the documentation stays true.
func TestCheckReadmeExample(t *testing.T) {
	section := readmeSection(t, "\n## Guardrails\n")
	block := func(lang string) string { return fencedBlock(t, section, lang) + "\n" }
	dir := t.TempDir()
	files := map[string]string{"rules.iv": block("python"), "demo.json": block("json")}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	console := strings.SplitN(block("console"), "\n", 2)
	cmdline, want := console[0], console[1]
	if !strings.HasPrefix(cmdline, "$ lookout check ") {
		t.Fatalf("the console block starts with %q", cmdline)
	}
	// split the command as a shell would: words, 'quoted' words
	var args []string
	for _, m := range regexp.MustCompile(`'[^']*'|[^ ]+`).FindAllString(strings.TrimPrefix(cmdline, "$ lookout "), -1) {
		m = strings.ReplaceAll(m, "'", "")
		if _, ok := files[m]; ok {
			m = filepath.Join(dir, m)
		}
		args = append(args, m)
	}
	code, out, errOut := runCLI(t, "", args...)
	if code != 1 || out != want {
		t.Errorf("exit %d (want 1); stderr %q\noutput:\n%s\nthe README shows:\n%s", code, errOut, out, want)
	}
	if n := strings.Count(want, "\ntrace 0: ") + 1; n != 6 {
		t.Errorf("the README example shows %d violations, want one per rule (6)", n)
	}
}

// readmeSection is the README from heading on.
func readmeSection(t *testing.T, heading string) string {
	t.Helper()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), heading)
	if !ok {
		t.Fatalf("README has no %q", strings.TrimSpace(heading))
	}
	return section
}

// fencedBlock is the text of the first fenced block of language lang in
// section, without its last newline.
func fencedBlock(t *testing.T, section, lang string) string {
	t.Helper()
	_, rest, ok := strings.Cut(section, "\n```"+lang+"\n")
	if !ok {
		t.Fatalf("no %s block in the README section", lang)
	}
	body, _, _ := strings.Cut(rest, "\n```\n")
	return body
}
