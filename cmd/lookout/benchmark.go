package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/lookout-dev/lookout/client"
	"github.com/lookout-dev/lookout/internal/eval"
)

func newBenchmarkCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "benchmark",
		Short: "Make benchmarks of tasks from traces, score agents' datasets against them, show leaderboards",
		Long: `A benchmark is a named, versioned, frozen list of tasks taken from a dataset's
traces (one task per distinct value of a metadata key, task_id by default),
each with its reference answer, and the criteria that grade an agent's traces
of those tasks. Scoring a dataset against it puts each task's reference in
the trace metadata as "reference" before the criteria run; the accuracy is
the mean over tasks of the share of the task's traces that pass every
pass/fail criterion (a task without traces scores 0). See README
"Benchmarks".`,
	}
	cmd.AddCommand(newBenchmarkCreateCmd(), newBenchmarkRunCmd(), newBenchmarkLeaderboardCmd(), newBenchmarkListCmd())
	return cmd
}

// cmdContext is the command's context, or a background one when it has
// none (a command run without ExecuteContext, as in tests).
func cmdContext(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}

func newBenchmarkCreateCmd() *cobra.Command {
	var sf serverFlags
	var nb client.NewBenchmark
	var dataset, criteriaFile string
	cmd := &cobra.Command{
		Use:   "create --server URL --dataset NAME --name BENCHMARK --criteria FILE [--key K] [--reference PATH] [--query Q] [--public]",
		Short: "Make the next version of a benchmark from a dataset's traces",
		Long: `create takes the tasks of a new benchmark version from the dataset NAME: all
its traces, or those the search --query matches; one task per distinct value
of the metadata member --key (a dotted path; default task_id), with its
reference answer read from the metadata path --reference. The criteria file
is as for lookout eval (YAML or JSON); at least one criterion must be
pass/fail, and none human. Prints the benchmark's name, version, task count
and id.

Exit status: 0 created; 2 a criteria file that does not load, an unknown
dataset, traces without the key, or a usage error.`,
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
			if err := eval.CheckBenchmarkCriteria(cs); err != nil {
				return fmt.Errorf("%s: %w", criteriaFile, err)
			}
			if nb.Criteria, err = json.Marshal(cs); err != nil {
				return err
			}
			c, ctx, d, err := sf.dataset(cmd, dataset)
			if err != nil {
				return err
			}
			nb.DatasetID = d.ID
			b, err := c.CreateBenchmark(ctx, nb)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s/%s@%d: %d tasks (id %s)\n", b.Owner, b.Name, b.Version, b.ItemCount, b.ID)
			for _, w := range b.Warnings {
				fmt.Fprintln(cmd.ErrOrStderr(), "lookout: warning:", w)
			}
			return nil
		},
	}
	sf.add(cmd)
	f := cmd.Flags()
	f.StringVar(&dataset, "dataset", "", "dataset the tasks come from")
	f.StringVar(&nb.Name, "name", "", "benchmark name (each create makes its next version)")
	f.StringVar(&criteriaFile, "criteria", "", "criteria file (YAML or JSON; - for standard input)")
	f.StringVar(&nb.Key, "key", "task_id", "metadata member naming each task (a dotted path)")
	f.StringVar(&nb.Reference, "reference", "", "metadata member holding each task's reference answer (a dotted path)")
	f.StringVar(&nb.Query, "query", "", "search query selecting the traces (default: all of the dataset)")
	f.StringVar(&nb.Description, "description", "", "what the benchmark measures")
	f.BoolVar(&nb.Public, "public", false, "anyone may see the benchmark and run against it")
	for _, req := range []string{"dataset", "name", "criteria"} {
		_ = cmd.MarkFlagRequired(req)
	}
	return cmd
}

func newBenchmarkRunCmd() *cobra.Command {
	var sf serverFlags
	var bench, dataset string
	var asJSON bool
	var minAccuracy float64
	cmd := &cobra.Command{
		Use:   "run --server URL --benchmark [OWNER/]NAME[@VERSION] --dataset NAME [--min-accuracy A] [--json]",
		Short: "Score a dataset against a benchmark; fails below --min-accuracy",
		Long: `run scores the dataset NAME (an agent's traces of the benchmark's tasks,
matched by the task key) against the benchmark (its newest version unless
@VERSION is given), stores the result on the leaderboard and writes
benchmark, benchmark_version and accuracy into the dataset's metadata. It
prints the accuracy, the task counts and one line per criterion; with
--json, the result as one JSON object.

Exit status: 0 accuracy at or above --min-accuracy (default 0); 1 below it;
2 an unknown benchmark or dataset, or a usage error. Usable as a CI gate.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if minAccuracy < 0 || minAccuracy > 1 {
				return fmt.Errorf("--min-accuracy %g: want a number from 0 to 1", minAccuracy)
			}
			c, err := sf.client()
			if err != nil {
				return err
			}
			ctx := cmdContext(cmd)
			b, err := c.FindBenchmark(ctx, bench)
			if err != nil {
				return err
			}
			d, err := c.FindDataset(ctx, dataset)
			if err != nil {
				return err
			}
			res, err := c.RunBenchmark(ctx, b.ID, d.ID)
			if err != nil {
				return err
			}
			out := bufio.NewWriter(cmd.OutOrStdout())
			if asJSON {
				enc, _ := json.Marshal(res)
				fmt.Fprintf(out, "%s\n", enc)
			} else {
				s := res.Summary
				fmt.Fprintf(out, "%s/%s@%d, dataset %s: accuracy %.4g (%d of %d tasks covered, %d missing; %d of %d traces passed; %d traces of no task)\n",
					b.Owner, b.Name, b.Version, res.Dataset, res.Accuracy, s.Covered, s.Tasks, s.Missing, s.Passed, s.Traces, s.Extra)
				for _, cs := range s.Criteria {
					rate := "n/a"
					if cs.Rate != nil {
						rate = fmt.Sprintf("%.4g", *cs.Rate)
					}
					fmt.Fprintf(out, "  %s: %d passed, %d failed, %d errors, rate %s\n", cs.Criterion, cs.Passed, cs.Failed, cs.Errors, rate)
				}
			}
			if err := out.Flush(); err != nil {
				return err
			}
			if res.Accuracy < minAccuracy {
				fmt.Fprintf(cmd.ErrOrStderr(), "accuracy %.4g is below --min-accuracy %g\n", res.Accuracy, minAccuracy)
				return exitError{exitFound}
			}
			return nil
		},
	}
	sf.add(cmd)
	cmd.Flags().StringVar(&bench, "benchmark", "", "benchmark: [OWNER/]NAME[@VERSION]")
	cmd.Flags().StringVar(&dataset, "dataset", "", "dataset to score")
	cmd.Flags().Float64Var(&minAccuracy, "min-accuracy", 0, "exit 1 when the accuracy is below this (0 to 1)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "the result as one JSON object")
	_ = cmd.MarkFlagRequired("benchmark")
	_ = cmd.MarkFlagRequired("dataset")
	return cmd
}

func newBenchmarkLeaderboardCmd() *cobra.Command {
	var sf serverFlags
	var bench string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "leaderboard --server URL --benchmark [OWNER/]NAME[@VERSION] [--json]",
		Short: "Show a benchmark's results, best accuracy first",
		Long: `leaderboard prints the results of the benchmark's version (the newest unless
@VERSION is given) that you may see, best first: rank, accuracy, tasks
covered, dataset and owner; with --json, one JSON object per entry.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := sf.client()
			if err != nil {
				return err
			}
			ctx := cmdContext(cmd)
			b, err := c.FindBenchmark(ctx, bench)
			if err != nil {
				return err
			}
			entries, err := c.Leaderboard(ctx, b.ID)
			if err != nil {
				return err
			}
			if asJSON {
				out := bufio.NewWriter(cmd.OutOrStdout())
				for _, e := range entries {
					enc, _ := json.Marshal(e)
					fmt.Fprintf(out, "%s\n", enc)
				}
				return out.Flush()
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintf(tw, "%s/%s@%d (%d tasks)\nRANK\tACCURACY\tCOVERED\tDATASET\tOWNER\n", b.Owner, b.Name, b.Version, b.ItemCount)
			for i, e := range entries {
				fmt.Fprintf(tw, "%d\t%.4f\t%d/%d\t%s\t%s\n", i+1, e.Accuracy, e.Summary.Covered, e.Summary.Tasks, e.Dataset, e.Owner)
			}
			return tw.Flush()
		},
	}
	sf.add(cmd)
	cmd.Flags().StringVar(&bench, "benchmark", "", "benchmark: [OWNER/]NAME[@VERSION]")
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON object per entry")
	_ = cmd.MarkFlagRequired("benchmark")
	return cmd
}
