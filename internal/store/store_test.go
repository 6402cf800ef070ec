package store_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"gorm.io/gorm/schema"

	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

func TestMigrateMatchesModelsAndIsIdempotent(t *testing.T) {
	s := storetest.Open(t, storetest.Options{NoMigrate: true})
	ctx := context.Background()
	v1, err := s.Migrate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v1 < 1 {
		t.Fatalf("version after migrate = %d", v1)
	}
	v2, err := s.Migrate(ctx)
	if err != nil || v2 != v1 {
		t.Fatalf("second migrate: version %d (want %d), err %v", v2, v1, err)
	}
	for _, m := range store.AllModels() {
		st, err := schema.Parse(m, &sync.Map{}, s.DB.NamingStrategy)
		if err != nil {
			t.Fatal(err)
		}
		if !s.DB.Migrator().HasTable(m) {
			t.Errorf("table %s missing", st.Table)
			continue
		}
		cols, err := s.DB.Migrator().ColumnTypes(m)
		if err != nil {
			t.Fatal(err)
		}
		var inDB, inModel []string
		for _, c := range cols {
			inDB = append(inDB, c.Name())
		}
		for _, f := range st.Fields {
			if f.DBName != "" {
				inModel = append(inModel, f.DBName)
			}
		}
		sort.Strings(inDB)
		sort.Strings(inModel)
		if strings.Join(inDB, ",") != strings.Join(inModel, ",") {
			t.Errorf("table %s:\n db    %v\n model %v", st.Table, inDB, inModel)
		}
	}
}

func TestOpenRejectsBadURLsAndCreatesNothing(t *testing.T) {
	dir := t.TempDir()
	cases := []struct{ name, dsn string }{
		{"unknown scheme", "mysql://x"},
		{"empty sqlite path", "sqlite://"},
		{"missing folder", "sqlite://" + filepath.Join(dir, "no", "such", "dir", "f.db")},
		{"unreachable postgres", "postgres://nobody@127.0.0.1:1/x?connect_timeout=2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := store.Open(context.Background(), c.dsn, store.Options{})
			if err == nil {
				s.Close()
				t.Fatal("expected an error")
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error should be one line: %q", err)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "no")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a bad URL created something: %v", err)
	}
}

func TestSettingOrInitKeepsFirstValue(t *testing.T) {
	s := storetest.Open(t, storetest.Options{})
	ctx := context.Background()
	v, err := s.SettingOrInit(ctx, "secret", "a")
	if err != nil || v != "a" {
		t.Fatalf("got %q, %v", v, err)
	}
	v, err = s.SettingOrInit(ctx, "secret", "b")
	if err != nil || v != "a" {
		t.Fatalf("second init replaced the value: %q, %v", v, err)
	}
}

func TestSubscriptionCountsOnlyActive(t *testing.T) {
	s := storetest.Open(t, storetest.Options{})
	ctx := context.Background()
	u, _, err := s.EnsureUser(ctx, "A@Example.COM")
	if err != nil {
		t.Fatal(err)
	}
	if u.Email != "A@example.com" {
		t.Errorf("email stored as %q", u.Email)
	}
	f, created, err := s.EnsureFeed(ctx, "https://example.com/feed")
	if err != nil || !created {
		t.Fatal(err, created)
	}
	sub, err := s.Subscribe(ctx, u.ID, f.ID, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	count := func() int {
		f, err := s.FeedByID(ctx, f.ID)
		if err != nil {
			t.Fatal(err)
		}
		return f.SubscriberCount
	}
	if n := count(); n != 0 {
		t.Fatalf("pending subscription counted: %d", n)
	}
	if _, err := s.ConfirmSubscription(ctx, sub.ID, store.ConfirmedByLink); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 1 {
		t.Fatalf("after confirm: %d", n)
	}
	if _, err := s.EndSubscription(ctx, sub.ID, "unsubscribed"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.EndSubscription(ctx, sub.ID, "again"); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 0 {
		t.Fatalf("after end: %d", n)
	}
	again, err := s.Subscribe(ctx, u.ID, f.ID, nil, true)
	if err != nil || again.ID != sub.ID || again.State != store.SubActive {
		t.Fatalf("resubscribe: %+v %v", again, err)
	}
}
