package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/lookout-dev/lookout/internal/eval"
)

func newEvalCmd() *cobra.Command {
	var sf serverFlags
	var dataset, criteriaFile, name string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "eval --server URL [--api-key K] --dataset NAME --criteria FILE [--name RUN] [--json]",
		Short: "Evaluate a dataset on a Lookout server against criteria; fails when a required criterion falls below its threshold",
		Long: `eval runs the criteria of FILE (YAML or JSON, "-" for standard input; see
README "Evaluation") over every trace of the dataset NAME on the server, waits
for the run to finish, and prints one line per criterion:
  NAME: P passed, F failed, E errors, rate R [required >= T: ok|BELOW]
With --json, one line per criterion:
  {"criterion", "passed", "failed", "errors", "rate", "required", "threshold", "ok"}
(rate is the pass rate of a pass/fail criterion, the mean of a number one, and
null when no trace was graded). A trace passes a rule criterion when the
policy finds no violation in it.

Exit status: 0 every required criterion at or above its threshold (default
1); 1 a required criterion below it; 2 a criteria file that does not load
(the error names the file and place), an unknown dataset, a run that failed
or was cancelled, or a usage error. Usable as a CI gate for agents.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			raw, err := readCriteria(criteriaFile, cmd.InOrStdin())
			if err != nil {
				return err
			}
			cs, err := eval.ParseCriteria(raw)
			if err != nil {
				return fmt.Errorf("%s: %w", criteriaFile, err)
			}
			list, err := json.Marshal(cs)
			if err != nil {
				return err
			}
			c, ctx, d, err := sf.dataset(cmd, dataset)
			if err != nil {
				return err
			}
			run, err := c.StartEvalRun(ctx, d.ID, name, list)
			if err != nil {
				return err
			}
			if run, err = c.WaitEvalRun(ctx, run.ID, nil); err != nil {
				return err
			}
			if run.State != "done" {
				msg := run.State
				if run.Error != "" {
					msg += ": " + run.Error
				}
				return fmt.Errorf("run %s ended %s", run.ID, msg)
			}
			out := bufio.NewWriter(cmd.OutOrStdout())
			below := false
			for _, s := range run.Summary {
				below = below || !s.OK
				if asJSON {
					b, _ := json.Marshal(map[string]any{"criterion": s.Criterion, "passed": s.Passed, "failed": s.Failed, "errors": s.Errors,
						"rate": s.Rate, "required": s.Required, "threshold": s.Threshold, "ok": s.OK})
					fmt.Fprintf(out, "%s\n", b)
					continue
				}
				rate := "n/a"
				if s.Rate != nil {
					rate = fmt.Sprintf("%.4g", *s.Rate)
				}
				fmt.Fprintf(out, "%s: %d passed, %d failed, %d errors, rate %s", s.Criterion, s.Passed, s.Failed, s.Errors, rate)
				if s.Required {
					th := 1.0
					if s.Threshold != nil {
						th = *s.Threshold
					}
					verdict := "ok"
					if !s.OK {
						verdict = "BELOW"
					}
					fmt.Fprintf(out, " [required >= %g: %s]", th, verdict)
				}
				fmt.Fprintln(out)
			}
			if err := out.Flush(); err != nil {
				return err
			}
			if below {
				return exitError{exitFound}
			}
			return nil
		},
	}
	sf.add(cmd)
	cmd.Flags().StringVar(&dataset, "dataset", "", "dataset to evaluate")
	cmd.Flags().StringVar(&criteriaFile, "criteria", "", "criteria file (YAML or JSON; - for standard input)")
	cmd.Flags().StringVar(&name, "name", "", "name of the run")
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON line per criterion")
	_ = cmd.MarkFlagRequired("dataset")
	_ = cmd.MarkFlagRequired("criteria")
	return cmd
}

// readCriteria reads a criteria file as JSON: JSON as it is, YAML converted.
func readCriteria(file string, stdin io.Reader) ([]byte, error) {
	var data []byte
	var err error
	if file == "-" {
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(file)
	}
	if err != nil {
		return nil, err
	}
	t := bytes.TrimSpace(data)
	ext := strings.ToLower(filepath.Ext(file))
	if ext == ".json" || (ext != ".yaml" && ext != ".yml" && len(t) > 0 && (t[0] == '{' || t[0] == '[')) {
		if !json.Valid(t) {
			var v any
			err := json.Unmarshal(t, &v)
			var se *json.SyntaxError
			if errors.As(err, &se) {
				line := bytes.Count(t[:se.Offset], []byte("\n")) + 1
				return nil, fmt.Errorf("%s:%d: %w", file, line, err)
			}
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		return t, nil
	}
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return out, nil
}
