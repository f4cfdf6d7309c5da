package main

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/lookout-dev/lookout/internal/testcorpus"
)

// policyFlow flags an email sent after reading the inbox.
const policyFlow = `raise PolicyViolation("email sent after reading the inbox", call) if:
    (out: ToolOutput) -> (call: ToolCall)
    out is tool:get_inbox
    call is tool:send_email
`

// TestPolicyCLI manages a dataset's saved policies with lookout policy
// against a real server: add (from a file and from standard input), list
// (text and JSON), set-mode, delete, and the errors of each.
func TestPolicyCLI(t *testing.T) {
	for _, b := range cliBackends(t) {
		t.Run(b.name, func(t *testing.T) { policyCLI(t, b.db(t)) })
	}
}

func policyCLI(t *testing.T, db string) {
	url := startServer(t, db)
	inbox := testcorpus.File(t, "seeds/invariant-inbox.json")
	if code, _, errOut := runCLI(t, "", "push", "--server", url, "--dataset", "agent", inbox); code != 0 {
		t.Fatalf("push: exit %d: %s", code, errOut)
	}
	on := func(args ...string) []string {
		return append(append([]string{"policy"}, args...), "--server", url, "--dataset", "agent")
	}
	must := func(stdin string, want *regexp.Regexp, args ...string) string {
		t.Helper()
		code, out, errOut := runCLI(t, stdin, on(args...)...)
		if code != 0 || !want.MatchString(out) {
			t.Fatalf("lookout %s: exit %d, want 0 and output matching %s\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, want, out, errOut)
		}
		return out
	}
	must("", regexp.MustCompile(`^NAME +MODE +UPDATED +ID\n$`), "list")

	file := writeFile(t, "flow.iv", policyFlow)
	must("", regexp.MustCompile(`^added policy flow to agent: mode log \(id [0-9a-f-]{36}\)\n$`), "add", "--name", "flow", file)
	must(`raise "user spoke" if:
    (m: Message)
    m.role == "user"
`, regexp.MustCompile(`^added policy strict to agent: mode block \(id [0-9a-f-]{36}\)\n$`), "add", "--name", "strict", "--mode", "block", "-")
	must("", regexp.MustCompile(`^NAME +MODE +UPDATED +ID\nflow +log +\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ +[0-9a-f-]{36}\nstrict +block +`), "list")

	must("", regexp.MustCompile(`^policy flow of agent: mode block\n$`), "set-mode", "flow", "block")
	must("", regexp.MustCompile(`^policy strict of agent: mode log\n$`), "set-mode", "strict", "log")
	out := must("", regexp.MustCompile(`^\{`), "list", "--json")
	var got []string
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var p struct{ ID, Name, Source, Mode string }
		if err := json.Unmarshal([]byte(line), &p); err != nil || p.ID == "" || p.Source == "" {
			t.Fatalf("list --json line %q: %+v, %v", line, p, err)
		}
		got = append(got, p.Name+"="+p.Mode)
	}
	if strings.Join(got, " ") != "flow=block strict=log" {
		t.Errorf("list --json after set-mode: %q, want flow=block strict=log", got)
	}

	broken := writeFile(t, "broken.iv", "raise \"x\" if\n    (m: Message)\n")
	for name, c := range map[string]struct {
		args  []string
		stdin string
		err   string
	}{
		"an unknown mode to set":    {args: []string{"set-mode", "flow", "warn"}, err: `mode "warn": want block or log`},
		"an unknown mode to add":    {args: []string{"add", "--name", "x", "--mode", "Block", file}, err: `mode "Block": want block or log`},
		"a policy that won't load":  {args: []string{"add", "--name", "broken", broken}, err: "broken:2:5: SyntaxError: "},
		"a taken name":              {args: []string{"add", "--name", "flow", file}, err: `already has a policy named "flow"`},
		"an unknown policy to set":  {args: []string{"set-mode", "nope", "log"}, err: `dataset agent has no policy named "nope"`},
		"an unknown policy to drop": {args: []string{"delete", "nope"}, err: `dataset agent has no policy named "nope"`},
		"a missing file":            {args: []string{"add", "--name", "x", filepath.Join(t.TempDir(), "none.iv")}, err: "no such file"},
		"no name":                   {args: []string{"add", file}, err: `required flag(s) "name" not set`},
		"too many arguments":        {args: []string{"set-mode", "flow", "block", "x"}, err: "accepts 2 arg(s)"},
	} {
		code, out, errOut := runCLI(t, c.stdin, on(c.args...)...)
		if code != exitInternal || out != "" || !strings.Contains(errOut, c.err) {
			t.Errorf("%s: exit %d, want 2\nstdout %q\nstderr %q, want it to say %q", name, code, out, errOut, c.err)
		}
	}
	// The report of a policy that does not load points at its place.
	_, _, errOut := runCLI(t, "", on("add", "--name", "broken", broken)...)
	if !strings.HasSuffix(errOut, "   2 |     (m: Message)\n     |     ^\n") {
		t.Errorf("no caret report for a policy that does not load:\n%s", errOut)
	}
	if code, _, errOut := runCLI(t, "", "policy", "list", "--server", url, "--dataset", "nope"); code != exitInternal || !strings.Contains(errOut, "nope") {
		t.Errorf("list of an unknown dataset: exit %d, %s", code, errOut)
	}

	must("", regexp.MustCompile(`^deleted policy strict of agent\n$`), "delete", "strict")
	must("", regexp.MustCompile(`^NAME +MODE +UPDATED +ID\nflow +block +[^\n]+\n$`), "list")
}

// TestPolicyReadmeExample runs the console session of the README's "Saved
// policies from the command line" (with the Guardrails section's rules.iv)
// and compares each command's output with the one shown, ids and times
// aside, so that the documentation stays true.
func TestPolicyReadmeExample(t *testing.T) {
	rules := writeFile(t, "rules.iv", fencedBlock(t, readmeSection(t, "\n## Guardrails\n"), "python")+"\n")
	url := startServer(t, filepath.Join(t.TempDir(), "lookout.db"))
	if code, _, errOut := runCLI(t, "", "push", "--server", url, "--dataset", "inbox", testcorpus.File(t, "seeds/invariant-inbox.json")); code != 0 {
		t.Fatalf("push: exit %d: %s", code, errOut)
	}
	session := fencedBlock(t, readmeSection(t, "\n### Saved policies from the command line\n"), "console")
	ids := regexp.MustCompile(`[0-9a-f]{8}-…`)
	times := regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ`)
	steps := strings.Split(strings.TrimPrefix(session, "$ "), "\n$ ")
	if len(steps) != 3 {
		t.Fatalf("the README session has %d commands, want 3", len(steps))
	}
	for _, step := range steps {
		cmdline, shown, _ := strings.Cut(step, "\n")
		var args []string
		for _, w := range strings.Fields(strings.TrimPrefix(cmdline, "lookout ")) {
			switch w {
			case "http://127.0.0.1:8000":
				w = url
			case "rules.iv":
				w = rules
			}
			args = append(args, w)
		}
		want := regexp.QuoteMeta(shown + "\n")
		want = ids.ReplaceAllString(want, `[0-9a-f-]{36}`)
		want = times.ReplaceAllString(want, `\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ`)
		code, out, errOut := runCLI(t, "", args...)
		if code != 0 || !regexp.MustCompile("^"+want+"$").MatchString(out) {
			t.Errorf("%s: exit %d\n%s%s\nthe README shows:\n%s", cmdline, code, out, errOut, shown)
		}
	}
}
