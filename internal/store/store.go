package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/glebarez/sqlite"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/migrations"
)

// ErrNotFound is returned when a looked-up row does not exist.
var ErrNotFound = errors.New("not found")

// ErrBadDSN is returned by Open for a database URL it cannot use.
var ErrBadDSN = errors.New("bad database URL")

// Store is the database handle shared by every worker of one process.
type Store struct {
	DB      *gorm.DB
	Dialect migrations.Dialect
	Clock   clock.Clock
	log     *slog.Logger
	// onTakeover is Options.OnTakeover.
	onTakeover func(Takeover)
}

// Options tune Open. The zero value is fine.
type Options struct {
	Clock  clock.Clock
	Logger *slog.Logger
	// MaxOpenConns overrides the pool size (Postgres default 20, SQLite 8).
	MaxOpenConns int
	// OnStatement, if set, is called once per database round trip (each
	// statement, BEGIN, COMMIT and ROLLBACK; see stmtcount.go): serve
	// counts them in feedmail_db_statements_total.
	OnStatement func()
	// OnConnect, if set, is called once per new Postgres connection the
	// pool opens (serve counts them in feedmail_db_connections_opened_total:
	// beyond the first MaxOpenConns, each is one a previous closed).
	OnConnect func()
	// OnTakeover, if set, is called once per claim that took over work
	// whose previous holder's lease had run out (takeover.go): serve logs
	// it and counts it in feedmail_leases_taken_over_total.
	OnTakeover func(Takeover)
}

// Open connects to dsn — "postgres://…" or "sqlite://path" — checks that the
// database answers, and returns a Store. It does not migrate. A SQLite file is
// created only inside a folder that already exists, so a mistyped path creates
// nothing, and it is created readable by its owner only (prepareSQLiteFile).
func Open(ctx context.Context, dsn string, opt Options) (*Store, error) {
	if opt.Clock == nil {
		opt.Clock = clock.Real{}
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	cfg := &gorm.Config{
		Logger:                 logger.Discard,
		SkipDefaultTransaction: true,
		NowFunc:                func() time.Time { return opt.Clock.Now().UTC() },
	}
	var (
		db      *gorm.DB
		err     error
		dialect migrations.Dialect
		maxOpen int
	)
	switch {
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		u, perr := url.Parse(dsn)
		if perr != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadDSN, perr)
		}
		dialect, maxOpen = migrations.Postgres, 20
		db, err = gorm.Open(postgres.New(postgres.Config{DSN: serialDSN(dsn, u), OptionOpenDB: countConnects(opt.OnConnect)}), cfg)
	case strings.HasPrefix(dsn, "sqlite://"):
		path, _ := sqlitePath(dsn)
		if path == "" {
			return nil, fmt.Errorf("%w: sqlite:// needs a file path, e.g. sqlite://./feedmail.db", ErrBadDSN)
		}
		dir := filepath.Dir(path)
		if st, serr := os.Stat(dir); serr != nil || !st.IsDir() {
			return nil, fmt.Errorf("%w: folder %q for the SQLite file does not exist", ErrBadDSN, dir)
		}
		if err := prepareSQLiteFile(path, opt.Logger); err != nil {
			return nil, err
		}
		dialect, maxOpen = migrations.SQLite, 8
		q := "?_pragma=busy_timeout(15000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)" +
			"&_pragma=synchronous(NORMAL)&_txlock=immediate"
		db, err = gorm.Open(sqlite.Open("file:"+path+q), cfg)
	default:
		return nil, fmt.Errorf("%w: %q must start with postgres:// or sqlite://", ErrBadDSN, redact(dsn))
	}
	if err != nil {
		return nil, oneLine{fmt.Errorf("open %s: %w", dialect, err)}
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", dialect, err)
	}
	if opt.MaxOpenConns > 0 {
		maxOpen = opt.MaxOpenConns
	}
	countPool(db, opt.OnStatement)
	sqlDB.SetMaxOpenConns(maxOpen)
	sqlDB.SetMaxIdleConns(maxOpen)
	sqlDB.SetConnMaxLifetime(30 * time.Minute)
	sqlDB.SetConnMaxIdleTime(5 * time.Minute)
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := sqlDB.PingContext(pctx); err != nil {
		_ = sqlDB.Close()
		return nil, oneLine{fmt.Errorf("database %s does not answer: %w", redact(dsn), err)}
	}
	return &Store{DB: db, Dialect: dialect, Clock: opt.Clock, log: opt.Logger, onTakeover: opt.OnTakeover}, nil
}

// parallelParam is the Postgres setting serialDSN turns off.
const parallelParam = "max_parallel_workers_per_gather"

// serialDSN returns dsn (parsed: u) asking the server for no parallel
// workers, unless it sets parallelParam itself (as a parameter or in
// options). The store's queries are short and index-driven; when the
// planner misjudges one as a large scan it gives it worker processes,
// started and ended per query (the due-feeds count did, before it walked
// its index): on a small machine under load they add forks and compete for
// the cores without finishing sooner. The parameter is appended, not re-encoded: the driver
// decodes a URL as libpq does ("+" is not a space).
func serialDSN(dsn string, u *url.URL) string {
	q := u.Query()
	if q.Has(parallelParam) || strings.Contains(q.Get("options"), parallelParam) || strings.Contains(dsn, "#") {
		return dsn
	}
	sep := "&"
	switch {
	case !strings.Contains(dsn, "?"):
		sep = "?"
	case strings.HasSuffix(dsn, "?"), strings.HasSuffix(dsn, "&"):
		sep = ""
	}
	return dsn + sep + parallelParam + "=0"
}

// countConnects is the pool option calling count after each new connection
// is set up (none when count is nil).
func countConnects(count func()) []stdlib.OptionOpenDB {
	if count == nil {
		return nil
	}
	return []stdlib.OptionOpenDB{stdlib.OptionBeforeConnect(func(_ context.Context, c *pgx.ConnConfig) error {
		after := c.AfterConnect // c is this attempt's copy
		c.AfterConnect = func(ctx context.Context, pc *pgconn.PgConn) error {
			if after != nil {
				if err := after(ctx, pc); err != nil {
					return err
				}
			}
			count()
			return nil
		}
		return nil
	})}
}

// Migrate applies pending migrations.
func (s *Store) Migrate(ctx context.Context) (int64, error) {
	sqlDB, err := s.DB.DB()
	if err != nil {
		return 0, err
	}
	return migrations.Up(ctx, sqlDB, s.Dialect, s.log)
}

// Close closes the connection pool.
func (s *Store) Close() error {
	sqlDB, err := s.DB.DB()
	if err != nil {
		return err
	}
	return sqlDB.Close()
}

// Ping checks that the database answers (for /healthz).
func (s *Store) Ping(ctx context.Context) error {
	sqlDB, err := s.DB.DB()
	if err != nil {
		return err
	}
	return sqlDB.PingContext(ctx)
}

// Postgres reports whether the store runs on Postgres.
func (s *Store) Postgres() bool { return s.Dialect == migrations.Postgres }

// now is the store's clock in UTC.
func (s *Store) now() time.Time { return s.Clock.Now().UTC() }

// Tx runs fn in one transaction: committed when fn returns nil, rolled back
// otherwise (also when ctx is cancelled).
func (s *Store) Tx(ctx context.Context, fn func(tx *Store) error) error {
	return s.DB.WithContext(ctx).Transaction(func(gtx *gorm.DB) error {
		return fn(&Store{DB: gtx, Dialect: s.Dialect, Clock: s.Clock, log: s.log, onTakeover: s.onTakeover})
	})
}

// utc normalises a time for storage and comparison.
func utc(t time.Time) time.Time { return t.UTC() }

func utcPtr(t time.Time) *time.Time {
	u := t.UTC()
	return &u
}

// redact hides a password in a database URL before it is logged or shown.
func redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.User == nil {
		return dsn
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}

// notFound maps gorm's not-found error to ErrNotFound.
func notFound(err error) error {
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return ErrNotFound
	}
	return err
}

// oneLine keeps a driver's multi-line error on one line for the command line
// and logs, while errors.Is/As still see the cause.
type oneLine struct{ err error }

func (e oneLine) Error() string {
	return strings.Join(strings.Fields(strings.ReplaceAll(e.err.Error(), "\n", " ")), " ")
}
func (e oneLine) Unwrap() error { return e.err }

func utcPtrOrNil(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	return utcPtr(*t)
}

// sqlitePath is the file of a sqlite:// DSN (ok false for other DSNs).
func sqlitePath(dsn string) (string, bool) {
	path, ok := strings.CutPrefix(dsn, "sqlite://")
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	return path, ok
}

// MissingSQLiteFile reports whether dsn is a SQLite database whose file
// does not exist yet (Open would create it), and that file's path.
func MissingSQLiteFile(dsn string) (string, bool) {
	path, ok := sqlitePath(dsn)
	if !ok || path == "" {
		return path, false
	}
	_, err := os.Stat(path)
	return path, errors.Is(err, os.ErrNotExist)
}
