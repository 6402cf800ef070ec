package migrations_test

import (
	"context"
	"errors"
	"testing"

	"github.com/feedmail/feedmail/internal/testkit/storetest"
	"github.com/feedmail/feedmail/migrations"
)

// TestRefusesNewerSchema: a database a newer feedmail migrated (a version
// this binary does not know) is refused, with both versions named, rather
// than run by code that does not know its tables.
func TestRefusesNewerSchema(t *testing.T) {
	ctx := context.Background()
	st := storetest.Open(t, storetest.Options{})
	sqlDB, err := st.DB.DB()
	if err != nil {
		t.Fatal(err)
	}
	d := migrations.SQLite
	if st.Postgres() {
		d = migrations.Postgres
	}
	known, err := migrations.Up(ctx, sqlDB, d, nil)
	if err != nil {
		t.Fatalf("migrating a current database: %v", err)
	}
	if err := st.DB.Exec(`INSERT INTO goose_db_version (version_id, is_applied) VALUES (?, ?)`, known+1000, true).Error; err != nil {
		t.Fatal(err)
	}
	v, err := migrations.Up(ctx, sqlDB, d, nil)
	if !errors.Is(err, migrations.ErrNewerSchema) || v != known+1000 {
		t.Fatalf("Up on a newer schema: version %d, err %v; want %d and ErrNewerSchema", v, err, known+1000)
	}
	t.Log(err)
}
