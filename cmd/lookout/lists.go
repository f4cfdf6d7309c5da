package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/lookout-dev/lookout/client"
)

// The list commands ask a server (--server, $LOOKOUT_SERVER) what the
// caller may see: datasets, API keys, benchmarks. Each prints a table, or
// with --json one JSON object per line.

func newDatasetsCmd() *cobra.Command {
	var sf serverFlags
	var asJSON, mine bool
	cmd := &cobra.Command{
		Use:   "datasets [--server URL] [--api-key K] [--mine] [--json]",
		Short: "List the datasets you may read on a server: yours and the public ones",
		Long: `datasets prints your datasets and every public one on the server: owner,
name, trace count, public or private, last push and id; --mine lists yours
only; with --json, one JSON object per dataset.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := sf.client()
			if err != nil {
				return err
			}
			ds, err := c.Datasets(cmdContext(cmd), client.DatasetFilter{Mine: mine})
			if err != nil {
				return err
			}
			if asJSON {
				return jsonLines(cmd.OutOrStdout(), ds)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "OWNER\tNAME\tTRACES\tVISIBILITY\tLAST PUSH\tID")
			for _, d := range ds {
				vis := "private"
				if d.Public {
					vis = "public"
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", d.Owner, d.Name, d.TraceCount, vis, timeOrDash(d.LastPushed), d.ID)
			}
			return tw.Flush()
		},
	}
	sf.add(cmd)
	cmd.Flags().BoolVar(&mine, "mine", false, "only your own datasets")
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON object per dataset")
	return cmd
}

func newKeyListCmd() *cobra.Command {
	var sf serverFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list [--server URL] [--api-key K] [--json]",
		Short: "List your API keys on a server (last four characters only)",
		Long: `key list asks the server for the caller's API keys: name, last four
characters, created, last used, revoked, and id. The keys themselves are
never shown again. With --json, one JSON object per key.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := sf.client()
			if err != nil {
				return err
			}
			ks, err := c.Keys(cmdContext(cmd))
			if err != nil {
				return err
			}
			if asJSON {
				return jsonLines(cmd.OutOrStdout(), ks)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tKEY\tCREATED\tLAST USED\tREVOKED\tID")
			for _, k := range ks {
				fmt.Fprintf(tw, "%s\t…%s\t%s\t%s\t%s\t%s\n", k.Name, k.Last4, timeOrDash(&k.CreatedAt), timeOrDash(k.LastUsed), timeOrDash(k.RevokedAt), k.ID)
			}
			return tw.Flush()
		},
	}
	sf.add(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON object per key")
	return cmd
}

func newBenchmarkListCmd() *cobra.Command {
	var sf serverFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list [--server URL] [--api-key K] [--json]",
		Short: "List the benchmarks you may see: yours and the public ones, newest first",
		Long: `benchmark list prints every version of your benchmarks and of the public
ones, newest first: owner/name@version, task count, public or private,
created and id. With --json, one JSON object per version (without its tasks).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := sf.client()
			if err != nil {
				return err
			}
			bs, err := c.Benchmarks(cmdContext(cmd))
			if err != nil {
				return err
			}
			if asJSON {
				return jsonLines(cmd.OutOrStdout(), bs)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "BENCHMARK\tTASKS\tVISIBILITY\tCREATED\tID")
			for _, b := range bs {
				vis := "private"
				if b.Public {
					vis = "public"
				}
				fmt.Fprintf(tw, "%s/%s@%d\t%d\t%s\t%s\t%s\n", b.Owner, b.Name, b.Version, b.ItemCount, vis, timeOrDash(&b.CreatedAt), b.ID)
			}
			return tw.Flush()
		},
	}
	sf.add(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON object per benchmark version")
	return cmd
}

// jsonLines writes each element of vs as one line of JSON.
func jsonLines[T any](w io.Writer, vs []T) error {
	out := bufio.NewWriter(w)
	for _, v := range vs {
		enc, err := json.Marshal(v)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%s\n", enc)
	}
	return out.Flush()
}

func timeOrDash(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}
