package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/lookout-dev/lookout/client"
	"github.com/lookout-dev/lookout/internal/search"
)

func newSearchCmd() *cobra.Command {
	var sf serverFlags
	var dataset string
	var asJSON bool
	var limit int
	cmd := &cobra.Command{
		Use:   "search --server URL [--api-key K] --dataset NAME [--json] QUERY",
		Short: "Search a dataset's traces on a Lookout server",
		Long: `search runs QUERY over the dataset NAME on the server and prints the matching
traces in index order: one line each with its index, id, name and where the
query's texts occur in it (addresses with code point ranges). With --json,
one JSON object per trace: {"index", "id", "hits": [address...]}.

The query language (the same as the explorer's search box):
  refund "I cannot"           both texts occur (case-insensitive substrings)
  refund OR cancel            either; "-" negates a term, parentheses group
  role:assistant  tool:cancel_reservation  kind:RETRIEVAL
  is:annotated  not:annotated  has:violation  has:violation:"policy"  policy:"policy"
  meta:model=gpt-4o  meta:model!=x  meta:reward>0.5 (< >= <=)  meta:model%gpt
  events>20  dataset:name  session:ID  user:ID
  score:accuracy>0.5 (< >= <= =)  verdict:correct=pass  verdict:correct=fail

A query that does not parse is reported with its column and a caret before
anything is asked of the server.

Exit status: 0 when some trace matches; 1 when none does; 2 on usage errors,
a query that does not parse, and server or connection failures.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			q := args[0]
			if _, err := search.Parse(q); err != nil {
				var se *search.Error
				if errors.As(err, &se) {
					fmt.Fprint(cmd.ErrOrStderr(), caretExcerpt(q, se.Pos, se.Msg))
					return exitError{exitInternal}
				}
				return err
			}
			c, err := sf.client()
			if err != nil {
				return err
			}
			n, err := runSearch(cmd.Context(), c, dataset, q, asJSON, limit, cmd.OutOrStdout(), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if n == 0 {
				return exitError{exitFound}
			}
			return nil
		},
	}
	sf.add(cmd)
	cmd.Flags().StringVar(&dataset, "dataset", "", "dataset to search (its name)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per matching trace")
	cmd.Flags().IntVar(&limit, "limit", 0, "print at most this many traces (0: all)")
	_ = cmd.MarkFlagRequired("dataset")
	return cmd
}

// queryPrefix is the start of a search error's text ("query: column N: ").
var queryPrefix = regexp.MustCompile(`^query: column \d+: `)

// caretExcerpt shows a query with a caret under the code point at pos.
func caretExcerpt(q string, pos int, msg string) string {
	col := min(pos, utf8.RuneCountInString(q))
	return fmt.Sprintf("lookout: query: column %d: %s\n  %s\n  %s^\n", col+1, msg, q, strings.Repeat(" ", col))
}

func runSearch(ctx context.Context, c *client.Client, dataset, q string, asJSON bool, limit int, stdout, stderr io.Writer) (int, error) {
	d, err := c.FindDataset(ctx, dataset)
	if err != nil {
		return 0, err
	}
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	printed := 0
	cursor := ""
	var total int64
	estimate := false
	for {
		page, err := c.Search(ctx, d.ID, q, cursor, 200)
		if err != nil {
			var ce *client.Error
			if errors.As(err, &ce) && ce.Code == "invalid_query" {
				var det struct{ Position int }
				json.Unmarshal(ce.Details, &det)
				// The server's message already names the column; the excerpt
				// says it once.
				fmt.Fprint(stderr, caretExcerpt(q, det.Position, queryPrefix.ReplaceAllString(ce.Message, "")))
				return 0, exitError{exitInternal}
			}
			return printed, err
		}
		if cursor == "" {
			total, estimate = page.Total, page.TotalIsEstimate
		}
		for _, t := range page.Traces {
			if limit > 0 && printed == limit {
				break
			}
			printed++
			if asJSON {
				if err := enc.Encode(struct {
					Index int64    `json:"index"`
					ID    string   `json:"id"`
					Hits  []string `json:"hits"`
				}{t.Index, t.ID, t.Hits}); err != nil {
					return printed, err
				}
				continue
			}
			line := fmt.Sprintf("%d\t%s\t%s", t.Index, t.ID, t.Name)
			if len(t.Hits) > 0 {
				shown := t.Hits[:min(3, len(t.Hits))]
				line += "\t" + strings.Join(shown, " ")
				if len(t.Hits) > len(shown) {
					line += fmt.Sprintf(" (+%d more)", len(t.Hits)-len(shown))
				}
			}
			if _, err := fmt.Fprintln(stdout, line); err != nil {
				return printed, err
			}
		}
		if page.Next == "" || limit > 0 && printed == limit {
			break
		}
		cursor = page.Next
	}
	about := ""
	if estimate {
		about = "at least "
	}
	fmt.Fprintf(stderr, "%d traces printed; %s%d match in %s\n", printed, about, total, dataset)
	return printed, nil
}

func newReindexCmd() *cobra.Command {
	var db string
	cmd := &cobra.Command{
		Use:   "reindex [--db FILE|URL]",
		Short: "Rebuild the search index from the stored traces",
		Long: `reindex rebuilds the search index of a database from its stored traces. The
index is kept up to date with every write and built on first start after an
upgrade, so this is for repair; the server may keep running meanwhile.

Exit status: 0 when the index was rebuilt; 2 on errors.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := openExistingStore(cmd.Context(), db)
			if err != nil {
				return err
			}
			defer st.Close()
			var bar *progressbar.ProgressBar
			f, ok := cmd.ErrOrStderr().(*os.File)
			tty := ok && term.IsTerminal(int(f.Fd()))
			progress := func(done, total int64) {
				if bar == nil && tty {
					bar = progressbar.NewOptions64(total, progressbar.OptionSetWriter(cmd.ErrOrStderr()),
						progressbar.OptionSetDescription("indexing"), progressbar.OptionShowCount())
				}
				if bar != nil {
					bar.Set64(done)
				}
			}
			n, err := st.Reindex(cmd.Context(), progress)
			if bar != nil {
				bar.Finish()
				fmt.Fprintln(cmd.ErrOrStderr())
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "indexed %d traces in %s\n", n, redactDB(db))
			return nil
		},
	}
	cmd.Flags().StringVar(&db, "db", defaultDB, dbFlagHelp)
	return cmd
}
