package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/lookout-dev/lookout/internal/formats"
	"github.com/lookout-dev/lookout/internal/formats/invariant"
	"github.com/lookout-dev/lookout/internal/trace"
)

func newConvertCmd() *cobra.Command {
	var from, to string
	cmd := &cobra.Command{
		Use:   "convert [--from auto|invariant|snorkel|mlflow|bedrock|otel] --to invariant|canonical FILE...",
		Short: "Convert trace files to Invariant JSONL or canonical JSONL on standard output",
		Long: `convert streams the traces of each FILE ("-" for standard input) to standard output
as JSON lines:
  --to invariant   one {"messages": [...], "metadata": {...}} per trace, the dataset
                   metadata line {"metadata": {...}} first when the input has one
  --to canonical   one canonical trace per line (events, spans, annotations)
A rejected trace is reported on standard error with its place and skipped; the
exit status is then 1. Exit 2 on usage errors.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := formats.Parse(from)
			if err != nil {
				return err
			}
			var w traceWriter
			bw := bufio.NewWriterSize(cmd.OutOrStdout(), 256<<10)
			switch to {
			case "invariant":
				w = invariant.NewEncoder(bw)
			case "canonical":
				w = &canonicalWriter{w: bw}
			default:
				return fmt.Errorf("--to must be invariant or canonical, not %q", to)
			}
			stderr := cmd.ErrOrStderr()
			failed := false
			wroteMeta := false
			for _, name := range args {
				in, err := openInput(name, cmd.InOrStdin(), f)
				if err != nil {
					fmt.Fprintln(stderr, err)
					failed = true
					continue
				}
				first := true
				err = in.each(func(t *trace.Trace) error {
					if first {
						first = false
						if err := writeMeta(w, in, &wroteMeta, stderr); err != nil {
							return err
						}
					}
					return w.Encode(t)
				}, func(err error) {
					fmt.Fprintln(stderr, err)
					failed = true
				})
				if err == nil && first {
					err = writeMeta(w, in, &wroteMeta, stderr)
				}
				if err != nil {
					return err
				}
			}
			if err := w.Flush(); err != nil {
				return err
			}
			if err := bw.Flush(); err != nil {
				return err
			}
			if failed {
				return exitError{exitFound}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&from, "from", "auto", formatFlagHelp())
	cmd.Flags().StringVar(&to, "to", "", "output: invariant or canonical")
	_ = cmd.MarkFlagRequired("to")
	return cmd
}

// writeMeta writes the input's dataset metadata line; only one such line may
// open a JSONL file, so later ones are reported rather than silently dropped.
func writeMeta(w traceWriter, in *input, wrote *bool, stderr io.Writer) error {
	meta := in.dec.DatasetMetadata()
	if meta == nil {
		return nil
	}
	if *wrote {
		fmt.Fprintf(stderr, "%s: dataset metadata not written: the output already has a metadata line from an earlier file\n", in.name)
		return nil
	}
	*wrote = true
	return w.WriteDatasetMetadata(meta)
}

type traceWriter interface {
	WriteDatasetMetadata(json.RawMessage) error
	Encode(*trace.Trace) error
	Flush() error
}

// canonicalWriter writes canonical JSON lines.
type canonicalWriter struct {
	w   io.Writer
	buf []byte
}

func (c *canonicalWriter) WriteDatasetMetadata(meta json.RawMessage) error {
	c.buf = append(append(append(c.buf[:0], `{"metadata":`...), meta...), "}\n"...)
	_, err := c.w.Write(c.buf)
	return err
}

func (c *canonicalWriter) Encode(t *trace.Trace) error {
	c.buf = append(trace.AppendTrace(c.buf[:0], t), '\n')
	_, err := c.w.Write(c.buf)
	return err
}

func (c *canonicalWriter) Flush() error { return nil }
