package main

import (
	"bufio"
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func newExportCmd() *cobra.Command {
	var sf serverFlags
	var dataset, format, output string
	cmd := &cobra.Command{
		Use:   "export --server URL [--api-key K] --dataset NAME [--format invariant|canonical] [-o FILE]",
		Short: "Export a dataset from a Lookout server as JSON lines",
		Long: `export writes the dataset NAME (yours, or a public one) to standard output, or
to FILE with -o, as JSON lines:
  --format invariant   (default) an Invariant JSONL file: the dataset metadata
                       line {"metadata": {...}} first, then one
                       {"messages", "metadata", "annotations"} per trace
  --format canonical   one canonical trace per line
Exit status: 0 on success, 2 on errors (such as an unknown dataset).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "invariant" && format != "canonical" {
				return fmt.Errorf("--format must be invariant or canonical, not %q", format)
			}
			c, ctx, d, err := sf.dataset(cmd, dataset)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			var f *os.File
			if output != "" && output != "-" {
				if f, err = os.Create(output); err != nil {
					return err
				}
				defer f.Close()
				out = f
			}
			bw := bufio.NewWriterSize(out, 256<<10)
			if _, err := c.Export(ctx, d.ID, format, bw); err != nil {
				return err
			}
			if err := bw.Flush(); err != nil {
				return err
			}
			if f != nil {
				return f.Close()
			}
			return nil
		},
	}
	sf.add(cmd)
	cmd.Flags().StringVar(&dataset, "dataset", "", "dataset to export")
	cmd.Flags().StringVar(&format, "format", "invariant", "output: invariant or canonical")
	cmd.Flags().StringVarP(&output, "output", "o", "", "write to FILE instead of standard output")
	_ = cmd.MarkFlagRequired("dataset")
	return cmd
}
