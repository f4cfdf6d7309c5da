package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lookout-dev/lookout/internal/testcorpus"
)

// issueCriteria is the criteria file of the README and the issue.
const issueCriteria = `criteria:
  - name: no-cancel
    evaluator: rule
    policy: |
      raise "cancel" if:
          (call: ToolCall)
          call is tool:cancel_reservation
  - name: solved
    evaluator: code
    expr: metadata.reward == 1
    required: true
    threshold: 0.5
`

// TestEvalExitCodes runs lookout eval end to end against a live server
// holding the tau-bench airline traces (84 of 200 solved, 46 with a
// cancel_reservation call): 1 below a required threshold, 0 at or above
// it, 2 for criteria that do not load, an unknown dataset or usage errors.
func TestEvalExitCodes(t *testing.T) {
	for _, b := range cliBackends(t) {
		t.Run(b.name, func(t *testing.T) { evalExitCodes(t, b.db(t)) })
	}
}

func evalExitCodes(t *testing.T, db string) {
	url := startServer(t, db)
	tau := testcorpus.File(t, "openai/tau-bench/gpt-4o-airline.json")
	if code, _, errOut := runCLI(t, "", "push", "--server", url, "--dataset", "tau", tau); code != 0 {
		t.Fatalf("push: exit %d: %s", code, errOut)
	}
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	yamlFile := write("criteria.yaml", issueCriteria)

	// Below the threshold: exit 1, text output.
	code, out, errOut := runCLI(t, "", "eval", "--server", url, "--dataset", "tau", "--criteria", yamlFile)
	want := "no-cancel: 154 passed, 46 failed, 0 errors, rate 0.77\n" +
		"solved: 84 passed, 116 failed, 0 errors, rate 0.42 [required >= 0.5: BELOW]\n"
	if code != 1 || out != want {
		t.Fatalf("exit %d, want 1\nstdout %q\nwant   %q\nstderr %s", code, out, want, errOut)
	}

	// At the threshold, JSON criteria, --json lines: exit 0.
	jsonFile := write("criteria.json", `{"criteria": [{"name": "solved", "evaluator": "code", "expr": "metadata.reward == 1", "required": true, "threshold": 0.42},
	  {"name": "calls", "evaluator": "code", "type": "number", "expr": "len(tool_calls)"}]}`)
	code, out, errOut = runCLI(t, "", "eval", "--server", url, "--dataset", "tau", "--criteria", jsonFile, "--json")
	if code != 0 {
		t.Fatalf("exit %d, want 0: %s %s", code, out, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("--json lines: %q", out)
	}
	var solved, calls struct {
		Criterion              string
		Passed, Failed, Errors int
		Rate                   *float64
		OK                     bool
	}
	if err := json.Unmarshal([]byte(lines[0]), &solved); err != nil || solved.Criterion != "solved" || solved.Passed != 84 || solved.Failed != 116 || solved.Rate == nil || *solved.Rate != 0.42 || !solved.OK {
		t.Errorf("solved line %s (%v)", lines[0], err)
	}
	if err := json.Unmarshal([]byte(lines[1]), &calls); err != nil || calls.Criterion != "calls" || calls.Rate == nil || *calls.Rate <= 0 {
		t.Errorf("calls line %s (%v)", lines[1], err)
	}

	// Criteria from standard input (YAML).
	if code, _, errOut := runCLI(t, strings.Replace(issueCriteria, "0.5", "0.4", 1), "eval", "--server", url, "--dataset", "tau", "--criteria", "-"); code != 0 {
		t.Errorf("stdin criteria: exit %d: %s", code, errOut)
	}

	// Exit 2: criteria that do not load (with the place), an unknown
	// dataset, a missing flag.
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"bad YAML", []string{"--criteria", write("bad.yaml", "criteria:\n  - name: x\n   evaluator: code\n")}, "bad.yaml: yaml: line "},
		{"bad JSON", []string{"--criteria", write("bad.json", "{\"criteria\": [\n{\"name\": }]}")}, "bad.json:2:"},
		{"no expr", []string{"--criteria", write("noexpr.yaml", "criteria:\n  - name: x\n    evaluator: code\n")}, "noexpr.yaml: criteria[0]: x: a code criterion needs expr or compare"},
		{"bad policy", []string{"--criteria", write("badpol.yaml", "criteria:\n  - name: x\n    evaluator: rule\n    policy: raise\n")}, "criteria[0]: x: policy:"},
		{"bad expr", []string{"--criteria", write("badexpr.yaml", "criteria:\n  - name: x\n    evaluator: code\n    expr: 'len(tool_calls) <='\n")}, "expr: column 19: the expression ends too soon"},
		{"unknown member", []string{"--criteria", write("typo.yaml", "criteria:\n  - name: x\n    evaluator: code\n    exp: 'True'\n")}, `unknown field "exp"`},
		{"missing file", []string{"--criteria", filepath.Join(dir, "nope.yaml")}, "no such file"},
	} {
		code, _, errOut := runCLI(t, "", append([]string{"eval", "--server", url, "--dataset", "tau"}, tc.args...)...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%s: exit %d, stderr %q; want 2 and %q", tc.name, code, errOut, tc.want)
		}
	}
	if code, _, errOut := runCLI(t, "", "eval", "--server", url, "--dataset", "nope", "--criteria", yamlFile); code != 2 || !strings.Contains(errOut, "nope") {
		t.Errorf("unknown dataset: exit %d: %s", code, errOut)
	}
	if code, _, _ := runCLI(t, "", "eval", "--server", url, "--dataset", "tau"); code != 2 {
		t.Errorf("no --criteria: exit %d", code)
	}
	// An llm criterion on a server without a judge is refused: exit 2.
	llm := write("llm.yaml", "criteria:\n  - name: judge\n    evaluator: llm\n    prompt: ok?\n")
	if code, _, errOut := runCLI(t, "", "eval", "--server", url, "--dataset", "tau", "--criteria", llm); code != 2 || !strings.Contains(errOut, "no LLM endpoint") {
		t.Errorf("llm without endpoint: exit %d: %s", code, errOut)
	}
}

// TestEvalReadmeExample keeps the README's criteria file the one the exit
// code test runs.
func TestEvalReadmeExample(t *testing.T) {
	if block := fencedBlock(t, readmeSection(t, "## Evaluation\n"), "yaml") + "\n"; block != issueCriteria {
		t.Errorf("README's criteria file:\n%s\nwant:\n%s", block, issueCriteria)
	}
}
