package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/lookout-dev/lookout/internal/formats"
	"github.com/lookout-dev/lookout/internal/trace"
)

func newValidateCmd() *cobra.Command {
	var formatName string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "validate [--format auto|invariant|snorkel|mlflow|bedrock|otel] FILE...",
		Short: "Check that trace files parse, printing counts or each error with its place",
		Long: `validate reads each FILE ("-" for standard input) and prints one line per file:
  FILE: N traces, M events
or, for an invalid file, each error as
  FILE:LINE:COL: JSONPATH: message
Exit status: 0 when every file is valid, 1 when any is not, 2 on usage errors
and files that cannot be read.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := formats.Parse(formatName)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			invalid, unreadable := false, false
			for _, name := range args {
				res := validateFile(name, cmd.InOrStdin(), f)
				unreadable = unreadable || res.unreadable
				if len(res.Errors) > 0 {
					invalid = true
				}
				if asJSON {
					b, _ := json.Marshal(res)
					fmt.Fprintf(out, "%s\n", b)
					continue
				}
				if len(res.Errors) == 0 {
					fmt.Fprintf(out, "%s: %s, %s\n", name, plural(res.Traces, "trace"), plural(res.Events, "event"))
				}
				for _, e := range res.Errors {
					fmt.Fprintln(out, e)
				}
			}
			if unreadable {
				return exitError{exitInternal}
			}
			if invalid {
				return exitError{exitFound}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&formatName, "format", "auto", formatFlagHelp())
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per file")
	return cmd
}

type validation struct {
	File        string   `json:"file"`
	Format      string   `json:"format,omitempty"`
	Traces      int      `json:"traces"`
	Events      int      `json:"events"`
	ToolCalls   int      `json:"tool_calls"`
	ToolOutputs int      `json:"tool_outputs"`
	Spans       int      `json:"spans"`
	Errors      []string `json:"errors,omitempty"`
	unreadable  bool     // the file could not be opened or read
}

func validateFile(name string, stdin interface{ Read([]byte) (int, error) }, f formats.Format) validation {
	res := validation{File: name}
	in, err := openInput(name, stdin, f)
	if err != nil && !badInput(err) {
		res.unreadable = true
	}
	if err != nil {
		msg := err.Error()
		if len(msg) < len(name) || msg[:len(name)] != name {
			msg = name + ": " + msg
		}
		res.Errors = append(res.Errors, msg)
		return res
	}
	res.Format = string(in.format)
	err = in.each(func(t *trace.Trace) error {
		s := t.Stats()
		res.Traces++
		res.Events += s.Events
		res.ToolCalls += s.ToolCalls
		res.ToolOutputs += s.ToolOutputs
		res.Spans += s.Spans
		return nil
	}, func(err error) { res.Errors = append(res.Errors, err.Error()) })
	if err != nil {
		res.Errors = append(res.Errors, name+": "+err.Error())
	}
	return res
}
