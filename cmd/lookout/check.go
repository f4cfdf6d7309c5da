package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lookout-dev/lookout/internal/formats"
	"github.com/lookout-dev/lookout/internal/formats/decoding"
	"github.com/lookout-dev/lookout/internal/policy"
	"github.com/lookout-dev/lookout/internal/trace"
)

func newCheckCmd() *cobra.Command {
	var policyFile, formatName string
	var params []string
	var asJSON bool
	var timeout time.Duration
	var df detectorFlags
	cmd := &cobra.Command{
		Use:   "check --policy FILE [--param name=value]... [--json] [--format auto|invariant|snorkel|mlflow|bedrock] [--detector-endpoint URL --detector-model NAME] TRACEFILE...",
		Short: "Check traces against a guardrail policy, printing every violation with its ranges",
		Long: `check loads the policy FILE (Invariant's rule language, see README "Guardrails"),
then reads each TRACEFILE ("-" for standard input, any importable format) and
checks every trace. Traces are numbered from 0 in each file.

Text output: one line per violation,
  trace I: MESSAGE [RANGE, ...]
and a summary line. With --json, one line per trace checked:
  {"index": I, "errors": [{"key", "args", "kwargs", "ranges"}, ...]}
(with "file" too when several files are checked, and "error" instead of
"errors" when the policy failed on that trace).

--param name=value sets the policy parameter input.name; a value that is JSON
(3, true, ["a","b"]) is read as JSON, anything else as a string.

Each check is bounded: loading the policy and checking each trace get
--timeout each (default 60s, regular expression matching and calls of the
detector model included), 10^8 evaluation steps and 1 GiB of values built;
past any of them the trace fails with BudgetExceeded. At most 1,000
violations are reported per trace; past that the trace's line says so
("truncated": true with --json).

The model-backed detectors (prompt_injection, moderated, pii's PERSON,
LOCATION, ORGANIZATION, NRP and DATE_TIME, llm, llm_confirm) ask the
OpenAI-compatible endpoint of --detector-endpoint (such as Ollama's
http://127.0.0.1:11434/v1) with --detector-model; its key, if it needs one,
is read from $LOOKOUT_DETECTOR_API_KEY. Without an endpoint they fail as not
available in this build.

Exit status: 0 no violation; 1 some violation, or a trace that could not be
read; 2 a policy that does not load or fails while checking (the error names
FILE:LINE:COL with the line and a caret), a file that cannot be opened, or a
usage error.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if policyFile == "" {
				return errors.New(`required flag "policy" not set`)
			}
			f, err := formats.Parse(formatName)
			if err != nil {
				return err
			}
			ps, err := policy.ParseParams(params)
			if err != nil {
				return err
			}
			model, err := df.detectorModel()
			if err != nil {
				return err
			}
			stderr := cmd.ErrOrStderr()
			ctx := cmdContext(cmd)
			p, err := loadPolicy(ctx, policyFile, cmd.InOrStdin(), args, timeout)
			if err != nil {
				var le *policy.LoadError
				if errors.As(err, &le) {
					fmt.Fprint(stderr, le.Report())
					return exitError{exitInternal}
				}
				return err
			}
			lim := policy.DefaultLimits
			lim.Time = timeout
			p.SetLimits(lim)
			p.SetDetectorModel(model)
			c := &checker{ctx: ctx, p: p, params: ps, json: asJSON, multi: len(args) > 1,
				out: bufio.NewWriterSize(cmd.OutOrStdout(), 64<<10), stderr: stderr}
			for _, name := range args {
				c.file(name, cmd.InOrStdin(), f)
			}
			if !asJSON {
				fmt.Fprintln(c.out, c.summary())
			}
			if err := c.out.Flush(); err != nil {
				return err
			}
			switch {
			case c.policyFailed || c.unreadable:
				return exitError{exitInternal}
			case c.violations > 0 || c.invalid:
				return exitError{exitFound}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&policyFile, "policy", "", `the policy file ("-" for standard input)`)
	cmd.Flags().StringArrayVar(&params, "param", nil, "a policy parameter name=value, read by the policy as input.name (repeatable)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per trace")
	cmd.Flags().DurationVar(&timeout, "timeout", policy.DefaultLimits.Time, "the time budget of loading the policy and of checking each trace")
	cmd.Flags().StringVar(&formatName, "format", "auto", formatFlagHelp())
	df.add(cmd)
	return cmd
}

// loadPolicy reads and parses the policy file within the time budget.
func loadPolicy(ctx context.Context, name string, stdin io.Reader, traceFiles []string, budget time.Duration) (*policy.Policy, error) {
	var src []byte
	var err error
	if name == "-" {
		for _, t := range traceFiles {
			if t == "-" {
				return nil, errors.New("the policy and a trace file cannot both be standard input")
			}
		}
		src, err = io.ReadAll(stdin)
	} else {
		src, err = os.ReadFile(name)
	}
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	ctx, cancel := policy.WithTimeBudget(ctx, budget)
	defer cancel()
	return policy.ParseContext(ctx, name, string(src))
}

// checker checks traces and writes the results.
type checker struct {
	ctx    context.Context
	p      *policy.Policy
	params map[string]any
	json   bool
	multi  bool // several files: name them in the output
	out    *bufio.Writer
	stderr io.Writer

	traces, failing, violations int
	errored                     int  // traces the policy failed on
	policyFailed                bool // a runtime error of the policy
	invalid                     bool // a trace could not be read
	unreadable                  bool // a file could not be opened
}

func (c *checker) file(name string, stdin io.Reader, f formats.Format) {
	in, err := openInput(name, stdin, f)
	if err != nil {
		fmt.Fprintln(c.stderr, err)
		if badInput(err) {
			c.invalid = true
		} else {
			c.unreadable = true
		}
		return
	}
	next := 0 // index of the next trace in this file
	err = in.each(func(t *trace.Trace) error {
		c.trace(name, next, t)
		next++
		return nil
	}, func(err error) {
		fmt.Fprintln(c.stderr, err)
		c.invalid = true
		var de *decoding.Error
		if errors.As(err, &de) && de.Recoverable {
			if de.Trace >= 0 {
				next = de.Trace + 1
			} else {
				next++
			}
		}
	})
	if err != nil {
		fmt.Fprintln(c.stderr, name+":", err)
		c.invalid = true
	}
}

// summary is the last line of the text output. Traces the policy failed on
// were not checked: they are not counted as checked with no violations.
func (c *checker) summary() string {
	checked := c.traces - c.errored
	out := fmt.Sprintf("%s checked, %d with violations, %s", plural(checked, "trace"), c.failing, plural(c.violations, "violation"))
	if c.errored > 0 {
		out += fmt.Sprintf("; %s not checked: the policy failed on %s (see above)", plural(c.errored, "trace"), map[bool]string{true: "it", false: "them"}[c.errored == 1])
	}
	return out
}

// plural is "1 trace", "2 traces".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// checkLine is one line of --json output.
type checkLine struct {
	File   string       `json:"file,omitempty"`
	Index  int          `json:"index"`
	Errors *[]violation `json:"errors,omitempty"`
	// Truncated: the violations stopped at the cap (policy.Limits).
	Truncated bool        `json:"truncated,omitempty"`
	Error     *checkError `json:"error,omitempty"`
}

// violation is Invariant's ErrorInformation.to_dict() shape.
type violation struct {
	Key    string         `json:"key"`
	Args   []any          `json:"args"`
	Kwargs map[string]any `json:"kwargs"`
	Ranges []string       `json:"ranges"`
}

type checkError struct {
	Class   string `json:"class"`
	Message string `json:"message"`
}

func (c *checker) trace(file string, idx int, t *trace.Trace) {
	c.traces++
	res, err := c.p.AnalyzeContext(c.ctx, t.Events, c.params)
	line := checkLine{Index: idx}
	if c.multi {
		line.File = file
	}
	prefix := fmt.Sprintf("trace %d: ", idx)
	if c.multi {
		prefix = file + ": " + prefix
	}
	if err != nil {
		c.policyFailed = true
		c.errored++
		fmt.Fprintf(c.stderr, "%s%v\n", prefix, err)
		if c.json {
			ce := &checkError{Class: policy.ClassInternal, Message: err.Error()}
			var re *policy.RuntimeError
			if errors.As(err, &re) {
				ce.Class = re.Class
			}
			line.Error = ce
			c.writeJSON(line)
		}
		return
	}
	if len(res.Violations) > 0 {
		c.failing++
		c.violations += len(res.Violations)
	}
	if c.json {
		vs := make([]violation, len(res.Violations))
		for i, v := range res.Violations {
			vs[i] = violation{Key: v.Key, Args: v.Args, Kwargs: v.Kwargs, Ranges: v.Addresses()}
			if vs[i].Args == nil {
				vs[i].Args = []any{}
			}
			if vs[i].Kwargs == nil {
				vs[i].Kwargs = map[string]any{}
			}
		}
		line.Errors = &vs
		line.Truncated = res.Truncated
		c.writeJSON(line)
		return
	}
	for _, v := range res.Violations {
		c.out.WriteString(prefix)
		c.out.WriteString(v.Text())
		c.out.WriteString(" [")
		c.out.WriteString(strings.Join(v.Addresses(), ", "))
		c.out.WriteString("]\n")
	}
	if res.Truncated {
		fmt.Fprintf(c.out, "%sviolations truncated at %d: the rule has more\n", prefix, len(res.Violations))
	}
}

func (c *checker) writeJSON(v any) {
	enc := json.NewEncoder(c.out) // writes the newline
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		enc.Encode(checkLine{Error: &checkError{Class: policy.ClassInternal, Message: err.Error()}})
	}
}
