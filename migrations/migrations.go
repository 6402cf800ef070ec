// Package migrations holds the versioned SQL schema, embedded in the binary, and
// one runner (goose) that applies it to Postgres or SQLite. The two dialects keep
// parallel files with the same version numbers; a test checks that both produce
// the schema the store's gorm models expect.
// It must not hold Go code that changes data, and a released version must
// not be edited: a change to the schema is a new version in both folders.
package migrations

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

//go:embed postgres/*.sql sqlite/*.sql
var files embed.FS

// Dialect names a database kind the migrations are written for.
type Dialect string

// The supported dialects.
const (
	Postgres Dialect = "postgres"
	SQLite   Dialect = "sqlite"
)

// Up applies every pending migration and returns the resulting version.
// On Postgres a session advisory lock serialises concurrent migrators, so two
// processes starting at once cannot both apply a version. On SQLite the file's
// single-writer lock does the same job.
func Up(ctx context.Context, db *sql.DB, d Dialect, log *slog.Logger) (int64, error) {
	p, err := provider(db, d, log)
	if err != nil {
		return 0, err
	}
	res, err := p.Up(ctx)
	if err != nil {
		return 0, fmt.Errorf("migrate %s: %w", d, err)
	}
	for _, r := range res {
		if log != nil {
			log.Info("migration applied", "version", r.Source.Version, "file", r.Source.Path, "took", r.Duration)
		}
	}
	v, err := p.GetDBVersion(ctx)
	if err != nil {
		return 0, fmt.Errorf("migrate %s: read version: %w", d, err)
	}
	if known := latest(p); v > known {
		return v, fmt.Errorf("%w: the database is at version %d, this feedmail knows versions up to %d: run the newer feedmail (or restore the backup taken before its upgrade)", ErrNewerSchema, v, known)
	}
	return v, nil
}

// UpTo applies the pending migrations up to and including version and
// returns the resulting version: a test of one migration on data written
// before it.
func UpTo(ctx context.Context, db *sql.DB, d Dialect, version int64) (int64, error) {
	p, err := provider(db, d, nil)
	if err != nil {
		return 0, err
	}
	if _, err := p.UpTo(ctx, version); err != nil {
		return 0, fmt.Errorf("migrate %s to %d: %w", d, version, err)
	}
	return p.GetDBVersion(ctx)
}

// ErrNewerSchema: the database was migrated by a newer feedmail than this
// one. Running on it would write rows the old code does not understand, so
// Up refuses (after applying nothing).
var ErrNewerSchema = errors.New("database schema is newer than this program")

// latest is the newest version embedded in this binary.
func latest(p *goose.Provider) int64 {
	srcs := p.ListSources()
	if len(srcs) == 0 {
		return 0
	}
	return srcs[len(srcs)-1].Version
}

// Pending reports whether any migration has not been applied yet.
func Pending(ctx context.Context, db *sql.DB, d Dialect) (bool, error) {
	p, err := provider(db, d, nil)
	if err != nil {
		return false, err
	}
	return p.HasPending(ctx)
}

func provider(db *sql.DB, d Dialect, log *slog.Logger) (*goose.Provider, error) {
	var gd goose.Dialect
	var opts []goose.ProviderOption
	switch d {
	case Postgres:
		gd = goose.DialectPostgres
		locker, err := lock.NewPostgresSessionLocker()
		if err != nil {
			return nil, fmt.Errorf("migration lock: %w", err)
		}
		opts = append(opts, goose.WithSessionLocker(locker))
	case SQLite:
		gd = goose.DialectSQLite3
	default:
		return nil, errors.New("migrations: unknown dialect " + string(d))
	}
	sub, err := fs.Sub(files, string(d))
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	opts = append(opts, goose.WithDisableGlobalRegistry(true))
	p, err := goose.NewProvider(gd, db, sub, opts...)
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	return p, nil
}
