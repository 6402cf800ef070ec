// Package storetest gives tests a fresh, migrated database of the kind the run
// asks for: FEEDMAIL_TEST_DATABASE_URL=postgres://… (each test gets its own
// schema, dropped afterwards) or unset/"sqlite" (a temporary SQLite file).
// Tests that need Postgres whatever the run read FEEDMAIL_TEST_POSTGRES_URL
// through PostgresURL, and skip without it — or fail under CI=true.
//
// Test infrastructure: never linked into cmd/feedmail.
// It never touches a schema or file it did not create.
package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/testutil"
)

// URL returns the database kind this run tests against.
func URL() string {
	u := os.Getenv("FEEDMAIL_TEST_DATABASE_URL")
	if u == "" {
		return "sqlite"
	}
	return u
}

// PostgresURL returns a Postgres server URL for tests that need Postgres
// whatever the run's database, or skips (fails under CI).
func PostgresURL(t testing.TB) string {
	t.Helper()
	for _, k := range []string{"FEEDMAIL_TEST_POSTGRES_URL", "FEEDMAIL_TEST_DATABASE_URL"} {
		if u := os.Getenv(k); strings.HasPrefix(u, "postgres") {
			return u
		}
	}
	testutil.SkipOrFail(t, "needs Postgres: set FEEDMAIL_TEST_POSTGRES_URL")
	return ""
}

// Options for Open.
type Options struct {
	Clock        clock.Clock
	MaxOpenConns int
	// NoMigrate leaves the database empty.
	NoMigrate bool
	// OnConnect is store.Options.OnConnect.
	OnConnect func()
	// OnTakeover is store.Options.OnTakeover.
	OnTakeover func(store.Takeover)
}

// Open returns a fresh store for this test, closed and removed at cleanup.
func Open(t testing.TB, opt Options) *store.Store {
	t.Helper()
	dsn := FreshDSN(t, URL())
	return OpenDSN(t, dsn, opt)
}

// OpenPostgres is Open on Postgres whatever the run's database.
func OpenPostgres(t testing.TB, opt Options) *store.Store {
	t.Helper()
	return OpenDSN(t, FreshDSN(t, PostgresURL(t)), opt)
}

// OpenDSN opens (and migrates) a store on an existing DSN; another Open of the
// same DSN shares the database, as a second process would.
func OpenDSN(t testing.TB, dsn string, opt Options) *store.Store {
	t.Helper()
	ctx := context.Background()
	s, err := store.Open(ctx, dsn, store.Options{Clock: opt.Clock, MaxOpenConns: opt.MaxOpenConns, OnConnect: opt.OnConnect,
		OnTakeover: opt.OnTakeover})
	if err != nil {
		t.Fatalf("open test database: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if !opt.NoMigrate {
		if _, err := s.Migrate(ctx); err != nil {
			t.Fatalf("migrate test database: %v", err)
		}
	}
	return s
}

// FreshDSN makes an empty database for the test from base ("sqlite" or a
// Postgres server URL) and returns its DSN.
func FreshDSN(t testing.TB, base string) string {
	t.Helper()
	if !strings.HasPrefix(base, "postgres") {
		return "sqlite://" + filepath.Join(t.TempDir(), "test.db")
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "t_" + hex.EncodeToString(b[:])
	admin, err := store.Open(context.Background(), base, store.Options{MaxOpenConns: 1})
	if err != nil {
		t.Fatalf("postgres for tests: %v", err)
	}
	defer admin.Close()
	if err := admin.DB.Exec("CREATE SCHEMA " + schema).Error; err != nil {
		t.Fatalf("create test schema: %v", err)
	}
	t.Cleanup(func() {
		a, err := store.Open(context.Background(), base, store.Options{MaxOpenConns: 1})
		if err != nil {
			return
		}
		defer a.Close()
		_ = a.DB.Exec("DROP SCHEMA " + schema + " CASCADE").Error
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("bad postgres URL: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// HoldConnection opens one connection to the run's Postgres database, when
// the run is on Postgres, and returns the function that closes it (a no-op
// on SQLite). A suite's TestMain holds it for the whole run so crypto/tls's
// certificate cache keeps the server's certificate: parallel tests making
// their first TLS connections at once then only load it, which the race
// detector does not misreport.
func HoldConnection() (release func()) {
	u := URL()
	if !strings.HasPrefix(u, "postgres") {
		return func() {}
	}
	keep, err := store.Open(context.Background(), u, store.Options{MaxOpenConns: 1})
	if err != nil {
		return func() {}
	}
	return func() { _ = keep.Close() }
}

// FollowedFeed returns the feed of url (created if new) as stored, with one
// confirmed reader (readerN@example.com), so workers treat it as followed.
func FollowedFeed(t testing.TB, st *store.Store, url string) *store.Feed {
	t.Helper()
	ctx := context.Background()
	f, _, err := st.EnsureFeed(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	usr, _, err := st.EnsureUser(ctx, fmt.Sprintf("reader%d@example.com", f.ID))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Subscribe(ctx, usr.ID, f.ID, nil, true); err != nil {
		t.Fatal(err)
	}
	return Feed(t, st, f.ID)
}

// Feed returns feed id as stored now.
func Feed(t testing.TB, st *store.Store, id int64) *store.Feed {
	t.Helper()
	f, err := st.FeedByID(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return f
}
