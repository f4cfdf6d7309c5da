package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/lookout-dev/lookout/internal/testcorpus"
)

func runCLI(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func TestValidate(t *testing.T) {
	inbox := testcorpus.File(t, "seeds/invariant-inbox.json")
	inboxData, err := os.ReadFile(inbox)
	if err != nil {
		t.Fatal(err)
	}
	otel := testcorpus.File(t, "otel/any-agent/OPENAI_trace.json")
	chatml := testcorpus.File(t, "otel/langfuse/autogen-2025-06-06.chatml.json")
	dup := testcorpus.File(t, "openai/explorer/duplicate_index.jsonl")
	tau := testcorpus.File(t, "openai/tau-bench/gpt-4o-airline.json")
	tests := []struct {
		name   string
		args   []string
		stdin  string
		code   int
		stdout []string // regexps, one per line, in order
	}{
		{"valid file", []string{"validate", inbox}, "", 0, []string{`^` + regexp.QuoteMeta(inbox) + `: 1 trace, 4 events$`}},
		{"tau-bench", []string{"validate", tau}, "", 0, []string{`: 200 traces, 5308 events$`}},
		{"stdin", []string{"validate", "-"}, string(inboxData), 0, []string{`^-: 1 trace, 4 events$`}},
		{"forced format", []string{"validate", "--format", "invariant", inbox}, "", 0, []string{`: 1 trace, 4 events$`}},
		{"otel span dump", []string{"validate", otel}, "", 0, []string{`^` + regexp.QuoteMeta(otel) + `: 1 trace, 7 events$`}},
		{"unsupported file", []string{"validate", chatml}, "", 1, []string{`^` + regexp.QuoteMeta(chatml) + `: unsupported format langfuse-chatml: `}},
		{"explorer rejection with line", []string{"validate", dup}, "", 1, []string{`^` + regexp.QuoteMeta(dup) + `:\d+:\d+: .*[Dd]uplicate index`}},
		{"valid and invalid", []string{"validate", inbox, dup}, "", 1, []string{`: 1 trace, 4 events$`, `[Dd]uplicate index`}},
		{"broken JSON on stdin", []string{"validate", "-"}, "[{\"role\": \"user\", \"content\": 5}]", 1, []string{`^-:1:\d+: \$\[0\]\.content: content must be`}},
		{"missing file", []string{"validate", "no/such/file.json"}, "", 2, []string{`no/such/file.json`}},
		{"a directory", []string{"validate", "testdata"}, "", 2, []string{`^testdata is a directory: give the trace files in it \(such as testdata/\*\.jsonl\)$`}},
		{"cut before its format shows", []string{"validate", "-"}, `{"mess`, 1, []string{`^-:1:7: unexpected end of input: the file ends inside its first JSON value`}},
		{"a whole file of unknown keys", []string{"validate", "-"}, `{"foo": 1}`, 1, []string{`^-: unrecognised format: no known trace format matches its first keys \(foo\)$`}},
		// The rule at the door, with file, line, column and JSON path.
		{"a member given twice", []string{"validate", "-"}, "[{\"role\": \"user\"}]\n[{\"role\": \"user\", \"role\": \"assistant\"}]\n", 1,
			[]string{`^-:2:19: \$\[0\]\.role: member "role" is given twice$`}},
		{"a number past a float64", []string{"validate", "-"}, `{"messages": [], "metadata": {"a": [1e400]}}`, 1,
			[]string{`^-:1:37: \$\.metadata\.a\[0\]: number 1e400 is out of the range of a 64-bit float$`}},
		{"bytes that are not UTF-8", []string{"validate", "-"}, "[{\"role\": \"user\", \"content\": \"h\xffi\"}]", 1,
			[]string{`^-:1:32: \$\[0\]\.content: invalid UTF-8 \(byte 0xff\) in string$`}},
		{"nesting too deep", []string{"validate", "-"}, `{"messages": [], "metadata": {"a": ` + strings.Repeat(`[`, 10000) + strings.Repeat(`]`, 10000) + `}}`, 1,
			[]string{`^-:1:\d+: \$\.metadata\.a\[0\].*\.\.\.\(9952 steps\)\.\.\..*: nesting deeper than 10000 levels$`}},
		{"unknown format flag", []string{"validate", "--format", "yaml", inbox}, "", 2, nil},
		{"no files", []string{"validate"}, "", 2, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, tc.stdin, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, out, errOut)
			}
			lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
			if len(tc.stdout) > 0 && len(lines) < len(tc.stdout) {
				t.Fatalf("stdout has %d lines, want at least %d:\n%s", len(lines), len(tc.stdout), out)
			}
			for i, re := range tc.stdout {
				if !regexp.MustCompile(re).MatchString(lines[i]) {
					t.Errorf("stdout line %d = %q, want match for %q", i+1, lines[i], re)
				}
			}
		})
	}
}

// TestConvertRoundTrip converts every example to Invariant JSONL and checks
// that validate reads the output back with the same counts.
func TestConvertRoundTrip(t *testing.T) {
	examples, _ := filepath.Glob("../../examples/*.json")
	if len(examples) < 6 {
		t.Fatalf("examples/ has %d files", len(examples))
	}
	for _, ex := range examples {
		t.Run(filepath.Base(ex), func(t *testing.T) {
			code, want, errOut := runCLI(t, "", "validate", "--json", ex)
			if code != 0 {
				t.Fatalf("validate exit %d: %s %s", code, want, errOut)
			}
			for _, to := range []string{"invariant", "canonical"} {
				code, converted, errOut := runCLI(t, "", "convert", "--to", to, ex)
				if code != 0 || errOut != "" {
					t.Fatalf("convert --to %s exit %d: %s", to, code, errOut)
				}
				if to == "canonical" {
					if !strings.HasPrefix(converted, `{"`) || !strings.Contains(converted, `"events":[`) {
						t.Fatalf("canonical output looks wrong: %.200s", converted)
					}
					// Canonical output reads back, to the same canonical output.
					code, again, errOut := runCLI(t, converted, "convert", "--to", "canonical", "-")
					if code != 0 || again != converted {
						t.Fatalf("canonical output read back (exit %d, %s):\n%.300s\nwant\n%.300s", code, errOut, again, converted)
					}
				}
				code, got, errOut := runCLI(t, converted, "validate", "--json", "-")
				if code != 0 {
					t.Fatalf("converted output invalid (exit %d): %s %s", code, got, errOut)
				}
				strip := regexp.MustCompile(`"file":"[^"]*","format":"[^"]*",`)
				if strip.ReplaceAllString(got, "") != strip.ReplaceAllString(want, "") {
					t.Errorf("counts changed by conversion:\n before %s after  %s", want, got)
				}
			}
		})
	}
}

func TestConvertErrors(t *testing.T) {
	inbox := testcorpus.File(t, "seeds/invariant-inbox.json")
	if code, _, _ := runCLI(t, "", "convert", "--to", "yaml", inbox); code != 2 {
		t.Errorf("--to yaml: exit %d, want 2", code)
	}
	if code, _, _ := runCLI(t, "", "convert", inbox); code != 2 {
		t.Errorf("missing --to: exit %d, want 2", code)
	}
	// One good and one bad line: the good one is written, the bad one
	// reported with its line, exit 1.
	in := "[{\"role\":\"user\",\"content\":\"hi\"}]\n[{\"role\":\"user\",\"content\":\"x\"\n[{\"role\":\"user\",\"content\":\"there\"}]\n"
	code, out, errOut := runCLI(t, in, "convert", "--to", "invariant", "-")
	if code != 1 {
		t.Fatalf("exit %d, want 1; stderr %s", code, errOut)
	}
	if !regexp.MustCompile(`^-:2:\d+: `).MatchString(errOut) {
		t.Errorf("stderr %q does not place the error on line 2", errOut)
	}
	if strings.Count(out, "\n") != 2 || !strings.Contains(out, `"hi"`) || !strings.Contains(out, `"there"`) {
		t.Errorf("stdout should hold the two good traces:\n%s", out)
	}
}
