package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestCheckTimeBudget: issue 19's backtracking policy ran 28.6 s on one
// 1.5 KB message; lookout check stops it at its --timeout with a budget
// error (exit 2, the policy failed on the trace).
func TestCheckTimeBudget(t *testing.T) {
	pol := writeFile(t, "backtrack.iv", "raise \"x\" if:\n    (m: Message)\n    any(find(\"x(?!(a+)+$)\", m.content))\n")
	content := strings.Repeat("x"+strings.Repeat("a", 22)+"!", 60)
	tr := writeFile(t, "t.jsonl", `[{"role": "user", "content": "`+content+`"}]`+"\n")
	start := time.Now()
	code, out, errOut := runCLI(t, "", "check", "--timeout", "2s", "--policy", pol, tr)
	d := time.Since(start)
	t.Logf("exit %d after %v: %s", code, d, errOut)
	if code != 2 || !strings.Contains(errOut, "BudgetExceeded") || !strings.Contains(errOut, "time budget of 2s") {
		t.Fatalf("exit %d, want 2 with a time budget error\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if d > 20*time.Second { // generous for -race
		t.Errorf("a 2s budget stopped the check after %v", d)
	}
}

// TestCheckTruncated: a rule with a million assignments reports the first
// 1,000 and says the result is truncated, in text and JSON.
func TestCheckTruncated(t *testing.T) {
	pol := writeFile(t, "pairs.iv", "raise \"different\" if:\n    (a: Message)\n    (b: Message)\n    a.content != b.content\n")
	var msgs []string
	for i := range 1000 {
		msgs = append(msgs, fmt.Sprintf(`{"role": "user", "content": "m%d"}`, i))
	}
	tr := writeFile(t, "t.jsonl", "["+strings.Join(msgs, ",")+"]\n")
	code, out, _ := runCLI(t, "", "check", "--policy", pol, tr)
	if code != 1 || !strings.Contains(out, "trace 0: violations truncated at 1000: the rule has more\n") ||
		!strings.HasSuffix(out, "1 trace checked, 1 with violations, 1000 violations\n") {
		t.Fatalf("exit %d, stdout tail %q", code, out[max(0, len(out)-300):])
	}
	code, out, _ = runCLI(t, "", "check", "--json", "--policy", pol, tr)
	var line struct {
		Errors    []json.RawMessage
		Truncated bool
	}
	if err := json.Unmarshal([]byte(out), &line); err != nil || code != 1 || len(line.Errors) != 1000 || !line.Truncated {
		t.Fatalf("--json: exit %d, %d errors, truncated %v, %v", code, len(line.Errors), line.Truncated, err)
	}
}
