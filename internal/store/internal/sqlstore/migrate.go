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
	return checkFormats(ctx, db)
}

// readsFormats are the stored forms this release reads, and the last
// version of each it reads (the table stored_formats, migration 00023).
// A form changes in two releases: one that reads the new version (its
// entry here raised), then one that writes it (its row raised, by a
// migration).
var readsFormats = map[string]int64{
	"otel_span_parts": 2, // spans packed and compressed with S2 (spanstore)
}

// checkFormats refuses a database that holds a form in a version this
// release does not read, written by a later release: rolled back that
// far, it would fail on those rows one by one.
func checkFormats(ctx context.Context, db *sql.DB) error {
	rows, err := db.QueryContext(ctx, `SELECT name, version FROM stored_formats ORDER BY name`)
	if err != nil {
		return fmt.Errorf("stored formats: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var version int64
		if err := rows.Scan(&name, &version); err != nil {
			return fmt.Errorf("stored formats: %w", err)
		}
		if known, ok := readsFormats[name]; !ok || version > known {
			return fmt.Errorf("the database holds %s in version %d of its stored form, which this release does not read (it reads %s): run the release that wrote it, or a later one",
				name, version, readable(name))
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("stored formats: %w", err)
	}
	return nil
}

// readable says which versions of a form this release reads.
func readable(name string) string {
	if v, ok := readsFormats[name]; ok {
		return fmt.Sprintf("up to version %d", v)
	}
	return "none"
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
