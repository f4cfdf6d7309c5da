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

// benchmarkCriteria is the criteria file of README "Benchmarks".
const benchmarkCriteria = `criteria:
  - name: solved
    evaluator: code
    expr: metadata.reward == 1
`

// TestBenchmarkCLI makes a benchmark of the tau-bench airline tasks with
// lookout benchmark create, scores the dataset against it (84 of its 200
// traces are solved, 4 trials of each of 50 tasks, so the accuracy is 0.42)
// and reads the leaderboard; exit codes: 1 below --min-accuracy, 2 for an
// unknown benchmark or criteria a benchmark cannot take.
func TestBenchmarkCLI(t *testing.T) {
	db := cliBackends(t)[0].db(t)
	url := startServer(t, db)
	tau := testcorpus.File(t, "openai/tau-bench/gpt-4o-airline.json")
	if code, _, errOut := runCLI(t, "", "push", "--server", url, "--dataset", "tau", tau); code != 0 {
		t.Fatalf("push: exit %d: %s", code, errOut)
	}
	dir := t.TempDir()
	criteria := filepath.Join(dir, "criteria.yaml")
	if err := os.WriteFile(criteria, []byte(benchmarkCriteria), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "", "benchmark", "create", "--server", url, "--dataset", "tau", "--name", "airline",
		"--criteria", criteria, "--reference", "info.task.outputs")
	if code != 0 || !regexp.MustCompile(`^local/airline@1: 50 tasks \(id [0-9a-f-]{36}\)\n$`).MatchString(out) {
		t.Fatalf("create: exit %d\n%s%s", code, out, errOut)
	}

	code, out, errOut = runCLI(t, "", "benchmark", "run", "--server", url, "--benchmark", "airline", "--dataset", "tau", "--min-accuracy", "0.5")
	wantHead := "local/airline@1, dataset tau: accuracy 0.42 (50 of 50 tasks covered, 0 missing; 84 of 200 traces passed; 0 traces of no task)\n" +
		"  solved: 84 passed, 116 failed, 0 errors, rate 0.42\n"
	if code != 1 || out != wantHead || !strings.Contains(errOut, "below --min-accuracy 0.5") {
		t.Fatalf("run below the bar: exit %d, want 1\nstdout %q\nwant   %q\nstderr %s", code, out, wantHead, errOut)
	}
	code, out, errOut = runCLI(t, "", "benchmark", "run", "--server", url, "--benchmark", "local/airline@1", "--dataset", "tau", "--min-accuracy", "0.42", "--json")
	var res struct {
		Accuracy float64
		Dataset  string
		Items    []struct {
			Key    string
			Traces int
		}
	}
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || res.Accuracy != 0.42 || res.Dataset != "tau" || len(res.Items) != 50 || res.Items[0].Traces != 4 {
		t.Fatalf("run --json: exit %d %+v\n%s%s", code, res, out, errOut)
	}

	code, out, errOut = runCLI(t, "", "benchmark", "leaderboard", "--server", url, "--benchmark", "airline")
	if code != 0 || !regexp.MustCompile(`(?m)^1 +0\.4200 +50/50 +tau +local$`).MatchString(out) {
		t.Fatalf("leaderboard: exit %d\n%s%s", code, out, errOut)
	}
	// The dataset's metadata names the benchmark and carries the accuracy.
	if code, _, _ := runCLI(t, "", "export", "--server", url, "--dataset", "tau", "--format", "invariant", "-o", filepath.Join(dir, "x.jsonl")); code != 0 {
		t.Fatalf("export: exit %d", code)
	}
	meta, err := os.ReadFile(filepath.Join(dir, "x.jsonl"))
	if err != nil || !strings.Contains(strings.SplitN(string(meta), "\n", 2)[0], `"accuracy":0.42`) {
		t.Errorf("the export's metadata line does not carry the accuracy: %.300s (%v)", meta, err)
	}

	for name, args := range map[string][]string{
		"unknown benchmark": {"benchmark", "run", "--server", url, "--benchmark", "nope", "--dataset", "tau"},
		"bad version":       {"benchmark", "leaderboard", "--server", url, "--benchmark", "airline@x"},
		"accuracy over 1":   {"benchmark", "run", "--server", url, "--benchmark", "airline", "--dataset", "tau", "--min-accuracy", "2"},
		"unknown dataset":   {"benchmark", "create", "--server", url, "--dataset", "nope", "--name", "b", "--criteria", criteria},
		"missing key":       {"benchmark", "create", "--server", url, "--dataset", "tau", "--name", "b", "--criteria", criteria, "--key", "nope"},
	} {
		if code, _, errOut := runCLI(t, "", args...); code != 2 || errOut == "" {
			t.Errorf("%s: exit %d, want 2 with a message; stderr %q", name, code, errOut)
		}
	}
	human := filepath.Join(dir, "human.yaml")
	if err := os.WriteFile(human, []byte("criteria:\n  - name: tone\n    evaluator: human\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runCLI(t, "", "benchmark", "create", "--server", url, "--dataset", "tau", "--name", "b", "--criteria", human); code != 2 || !strings.Contains(errOut, "no human criteria") {
		t.Errorf("human criteria: exit %d, stderr %q", code, errOut)
	}
}

func TestBenchmarkReadmeExample(t *testing.T) {
	if block := fencedBlock(t, readmeSection(t, "### Benchmarks\n"), "yaml") + "\n"; block != benchmarkCriteria {
		t.Errorf("README's benchmark criteria:\n%s\nwant:\n%s", block, benchmarkCriteria)
	}
}
