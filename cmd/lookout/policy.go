package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/lookout-dev/lookout/client"
)

func newPolicyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "List, add, switch between block and log, and delete a dataset's saved guardrail policies",
		Long: `A dataset's saved policies are checked by the server: over the dataset on
demand (the explorer's policies panel, POST .../policies/{id}/check) and on
every call through the gateway, where a policy's mode decides what a
violation does: "block" refuses the call, "log" (the default) lets it
through; both record the violation on the trace. See README "Guardrails".

Exit status of every subcommand: 0 done; 2 an unknown dataset or policy, a
policy that does not load (its caret report on standard error), a taken
name, or a usage or connection error.`,
	}
	cmd.AddCommand(newPolicyListCmd(), newPolicyAddCmd(), newPolicySetModeCmd(), newPolicyDeleteCmd())
	return cmd
}

// checkMode refuses a mode other than block or log before the server is
// asked.
func checkMode(mode string) error {
	if mode != client.PolicyBlock && mode != client.PolicyLog {
		return fmt.Errorf("mode %q: want %s or %s", mode, client.PolicyBlock, client.PolicyLog)
	}
	return nil
}

// findPolicy finds a saved policy of a dataset by name.
func findPolicy(ctx context.Context, c *client.Client, d client.Dataset, name string) (client.Policy, error) {
	ps, err := c.Policies(ctx, d.ID)
	if err != nil {
		return client.Policy{}, err
	}
	for _, p := range ps {
		if p.Name == name {
			return p, nil
		}
	}
	return client.Policy{}, fmt.Errorf("dataset %s has no policy named %q", d.Name, name)
}

func newPolicyListCmd() *cobra.Command {
	var sf serverFlags
	var dataset string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list --server URL [--api-key K] --dataset NAME [--json]",
		Short: "List a dataset's saved policies with their modes",
		Long: `list prints the saved policies of the dataset NAME by name: name, mode
(block or log), last change and id; with --json, one JSON object per policy
{"id", "dataset_id", "name", "source", "mode", "created_at", "updated_at"}.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ctx, d, err := sf.dataset(cmd, dataset)
			if err != nil {
				return err
			}
			ps, err := c.Policies(ctx, d.ID)
			if err != nil {
				return err
			}
			if asJSON {
				out := bufio.NewWriter(cmd.OutOrStdout())
				for _, p := range ps {
					enc, _ := json.Marshal(p)
					fmt.Fprintf(out, "%s\n", enc)
				}
				return out.Flush()
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tMODE\tUPDATED\tID")
			for _, p := range ps {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.Name, p.Mode, p.UpdatedAt.UTC().Format("2006-01-02 15:04:05Z"), p.ID)
			}
			return tw.Flush()
		},
	}
	sf.add(cmd)
	cmd.Flags().StringVar(&dataset, "dataset", "", "dataset whose policies to list")
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON object per policy")
	_ = cmd.MarkFlagRequired("dataset")
	return cmd
}

func newPolicyAddCmd() *cobra.Command {
	var sf serverFlags
	var dataset, name, mode string
	cmd := &cobra.Command{
		Use:   "add --server URL [--api-key K] --dataset NAME --name POLICY [--mode block|log] FILE",
		Short: "Save a policy file with a dataset",
		Long: `add saves the policy in FILE ("-" for standard input; Invariant's rule
language) with the dataset NAME under the name POLICY, in mode log unless
--mode block is given. The server checks that it loads: one that does not is
refused and its errors are printed with their line, column and a caret. A
name the dataset already uses is refused (delete it first, or change its
mode with set-mode).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkMode(mode); err != nil {
				return err
			}
			src, err := readPolicyFile(args[0], cmd.InOrStdin())
			if err != nil {
				return err
			}
			c, ctx, d, err := sf.dataset(cmd, dataset)
			if err != nil {
				return err
			}
			p, err := c.CreatePolicy(ctx, d.ID, name, src, mode)
			if err != nil {
				var ce *client.Error
				var det struct{ Report string }
				if errors.As(err, &ce) && ce.Code == "invalid" && json.Unmarshal(ce.Details, &det) == nil && det.Report != "" {
					fmt.Fprint(cmd.ErrOrStderr(), det.Report)
					return exitError{exitInternal}
				}
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "added policy %s to %s: mode %s (id %s)\n", p.Name, d.Name, p.Mode, p.ID)
			return nil
		},
	}
	sf.add(cmd)
	cmd.Flags().StringVar(&dataset, "dataset", "", "dataset to save the policy with")
	cmd.Flags().StringVar(&name, "name", "", "name of the policy in the dataset")
	cmd.Flags().StringVar(&mode, "mode", client.PolicyLog, "what the gateway does with a violation: block or log")
	_ = cmd.MarkFlagRequired("dataset")
	_ = cmd.MarkFlagRequired("name")
	return cmd
}

// readPolicyFile reads a policy file, "-" being standard input.
func readPolicyFile(name string, stdin io.Reader) (string, error) {
	var b []byte
	var err error
	if name == "-" {
		b, err = io.ReadAll(stdin)
	} else {
		b, err = os.ReadFile(name)
	}
	return string(b), err
}

func newPolicySetModeCmd() *cobra.Command {
	var sf serverFlags
	var dataset string
	cmd := &cobra.Command{
		Use:   "set-mode --server URL [--api-key K] --dataset NAME POLICY block|log",
		Short: "Make a saved policy block calls through the gateway, or only log its violations",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, mode := args[0], args[1]
			if err := checkMode(mode); err != nil {
				return err
			}
			c, ctx, d, err := sf.dataset(cmd, dataset)
			if err != nil {
				return err
			}
			p, err := findPolicy(ctx, c, d, name)
			if err != nil {
				return err
			}
			if p, err = c.UpdatePolicy(ctx, d.ID, p.ID, client.PolicyChange{Mode: mode}); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "policy %s of %s: mode %s\n", p.Name, d.Name, p.Mode)
			return nil
		},
	}
	sf.add(cmd)
	cmd.Flags().StringVar(&dataset, "dataset", "", "dataset the policy is saved with")
	_ = cmd.MarkFlagRequired("dataset")
	return cmd
}

func newPolicyDeleteCmd() *cobra.Command {
	var sf serverFlags
	var dataset string
	cmd := &cobra.Command{
		Use:   "delete --server URL [--api-key K] --dataset NAME POLICY",
		Short: "Delete a saved policy (the annotations of its earlier checks stay)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ctx, d, err := sf.dataset(cmd, dataset)
			if err != nil {
				return err
			}
			p, err := findPolicy(ctx, c, d, args[0])
			if err != nil {
				return err
			}
			if err := c.DeletePolicy(ctx, d.ID, p.ID); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "deleted policy %s of %s\n", p.Name, d.Name)
			return nil
		},
	}
	sf.add(cmd)
	cmd.Flags().StringVar(&dataset, "dataset", "", "dataset the policy is saved with")
	_ = cmd.MarkFlagRequired("dataset")
	return cmd
}
