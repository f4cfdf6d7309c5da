// Command lookout imports, stores, shows and checks AI-agent traces.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
)

// Exit codes are a contract (DESIGN.md, "CLI contract").
const (
	exitOK       = 0
	exitFound    = 1 // the check found something: violations, invalid input
	exitInternal = 2 // usage or internal error
)

// exitError carries an exit code out of a command.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

func newRootCmd(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "lookout",
		Short:         "Lookout imports, stores, shows and checks AI-agent traces",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       versionString(),
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.AddCommand(newMCPCmd()) // apart from the list below, which other branches extend
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newValidateCmd(), newConvertCmd(), newServeCmd(), newPushCmd(), newExportCmd(), newKeyCmd(), newUserCmd(), newCheckCmd(), newEvalCmd(), newSearchCmd(), newReindexCmd(), newBenchmarkCmd(), newPolicyCmd(), newDatasetsCmd(), newVersionCmd())
	return root
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit and Go version this binary was built from",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, args []string) {
			fmt.Fprintln(cmd.OutOrStdout(), versionString())
		},
	}
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRootCmd(stdin, stdout, stderr)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return exitOK
	}
	var ee exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	fmt.Fprintln(stderr, "lookout:", err)
	return exitInternal
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
