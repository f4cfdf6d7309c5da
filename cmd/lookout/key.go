package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/lookout-dev/lookout/internal/server"
	"github.com/lookout-dev/lookout/internal/store"
)

func newKeyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "key",
		Short: "Manage API keys",
	}
	cmd.AddCommand(newKeyCreateCmd(), newKeyListCmd())
	return cmd
}

func newKeyCreateCmd() *cobra.Command {
	var db, name, user string
	cmd := &cobra.Command{
		Use:   "create [--db PATH|postgres://...] [--name NAME] [--user USER]",
		Short: "Create an API key and print it (the only thing on standard output)",
		Long: `key create makes an API key in the database directly (no server needed; the
database and its tables are created if missing) and prints the key, which is
shown this once, as the only line on standard output.

The key belongs to --user. Without it, to the first user: the first one
created with lookout user create, or the local user while the database has
no users (local mode). Standard error says whose key it is.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmdContext(cmd)
			st, err := openStore(ctx, db)
			if err != nil {
				return fmt.Errorf("opening database %s: %w", redactDB(db), err)
			}
			defer st.Close()
			u, err := keyOwner(ctx, st, user)
			if err != nil {
				return err
			}
			key, hash, last4 := server.NewAPIKey()
			k, err := st.CreateAPIKey(ctx, u.ID, name, hash, last4)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), key)
			fmt.Fprintf(cmd.ErrOrStderr(), "lookout: created API key %q (…%s) for user %s in %s\n", k.Name, k.Last4, u.Name, redactDB(db))
			return nil
		},
	}
	cmd.Flags().StringVar(&db, "db", defaultDB, dbFlagHelp)
	cmd.Flags().StringVar(&name, "name", "cli", "a name for the key, shown in key lists")
	cmd.Flags().StringVar(&user, "user", "", "user the key belongs to (default: the first user, or the local user while there are none)")
	return cmd
}

// userLister is implemented by stores that can list their users.
type userLister interface {
	ListUsers(ctx context.Context) ([]store.User, error)
}

// keyOwner picks the user a new key belongs to: the one named, else the
// first user created (not the local-mode one), else the local user.
func keyOwner(ctx context.Context, st store.Store, name string) (store.User, error) {
	if name != "" {
		u, err := st.UserByName(ctx, name)
		if errors.Is(err, store.ErrNotFound) {
			return u, fmt.Errorf("no user named %q", name)
		}
		return u, err
	}
	n, err := st.CountUsers(ctx)
	if err != nil {
		return store.User{}, err
	}
	if n == 0 {
		return st.LocalUser(ctx)
	}
	ul, ok := st.(userLister)
	if !ok {
		return store.User{}, errors.New("the database has users: name the key's owner with --user")
	}
	users, err := ul.ListUsers(ctx) // oldest first
	if err != nil {
		return store.User{}, err
	}
	for _, u := range users {
		if u.Name != store.LocalUserName { // a name no real user can have
			return u, nil
		}
	}
	return store.User{}, fmt.Errorf("the database counts %d users but lists none", n)
}
