package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"

	"github.com/pressly/goose/v3"
)

// Migrate brings the schema of db up to date with the migrations of fsys
// (its folder migrations, one set per dialect: the two schemas differ in
// types, indexes and the search tables).
func Migrate(ctx context.Context, db *sql.DB, dialect goose.Dialect, fsys fs.FS, opts ...goose.ProviderOption) error {
	p, err := Migrations(db, dialect, fsys, opts...)
	if err != nil {
		return err
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	return nil
}

// Migrations is the goose provider of the migrations of fsys's folder
// migrations on db.
func Migrations(db *sql.DB, dialect goose.Dialect, fsys fs.FS, opts ...goose.ProviderOption) (*goose.Provider, error) {
	sub, err := fs.Sub(fsys, "migrations")
	if err != nil {
		return nil, err
	}
	p, err := goose.NewProvider(dialect, db, sub, append([]goose.ProviderOption{goose.WithDisableGlobalRegistry(true),
		// Areas number their migrations apart (00003 evaluation, 00005
		// OpenTelemetry, ...) and may land in any order.
		goose.WithAllowOutofOrder(true)}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	return p, nil
}
