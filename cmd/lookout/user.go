package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/lookout-dev/lookout/internal/server"
	"github.com/lookout-dev/lookout/internal/store"
)

func newUserCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "user",
		Short: "Manage users",
	}
	cmd.AddCommand(newUserCreateCmd())
	return cmd
}

func newUserCreateCmd() *cobra.Command {
	var db string
	cmd := &cobra.Command{
		Use:   "create [--db PATH|postgres://...] NAME",
		Short: "Create a user (ending local mode: from then on writes need a key or a login)",
		Long: `user create adds the user NAME to the database (created if missing). The
password is asked for on a terminal (twice), or read as one line from
standard input otherwise.

Once a user exists the server leaves local mode: every API write needs an
API key or a login session. The first user takes over what local mode made:
its datasets and their traces, benchmarks and API keys (a key made in local
mode goes on working, as the first user's). Exit status: 0 on success, 1 when the name is
taken or the password is empty, 2 on other errors.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if strings.TrimSpace(name) == "" || name != strings.TrimSpace(name) || strings.ContainsAny(name, "\x00\n\r\t") {
				return errors.New("a user name must not be empty or have surrounding white space")
			}
			if name == store.LocalUserName {
				return fmt.Errorf("%q is the name of the implicit local-mode user; choose another", name)
			}
			password, err := readPassword(cmd.InOrStdin(), cmd.ErrOrStderr(), name)
			if err != nil {
				return err
			}
			if password == "" {
				fmt.Fprintln(cmd.ErrOrStderr(), "lookout: the password must not be empty")
				return exitError{exitFound}
			}
			hash, err := server.HashPassword(password)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			st, err := openStore(ctx, db)
			if err != nil {
				return fmt.Errorf("opening database %s: %w", redactDB(db), err)
			}
			defer st.Close()
			u, err := st.CreateUser(ctx, name, hash)
			if errors.Is(err, store.ErrConflict) {
				fmt.Fprintf(cmd.ErrOrStderr(), "lookout: a user named %q already exists\n", name)
				return exitError{exitFound}
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "created user %s\n", u.Name)
			return nil
		},
	}
	cmd.Flags().StringVar(&db, "db", defaultDB, dbFlagHelp)
	return cmd
}

// readPassword asks for a password twice on a terminal, or reads one line
// of stdin.
func readPassword(stdin io.Reader, stderr io.Writer, name string) (string, error) {
	if f, ok := stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprintf(stderr, "Password for %s: ", name)
		p1, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(stderr)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(stderr, "Repeat the password: ")
		p2, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(stderr)
		if err != nil {
			return "", err
		}
		if string(p1) != string(p2) {
			return "", errors.New("the passwords differ")
		}
		return string(p1), nil
	}
	line, err := bufio.NewReader(stdin).ReadString('\n')
	if err != nil && err != io.EOF {
		return "", err
	}
	return strings.TrimRight(line, "\r\n"), nil
}
