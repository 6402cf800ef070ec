package store_test

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/feedmail/feedmail/internal/store"
)

func TestTransient(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"admin shutdown (pg_ctl restart -m fast)", &pgconn.PgError{Severity: "FATAL", Code: "57P01"}, true},
		{"cannot connect now (starting up)", fmt.Errorf("mark sent: %w", &pgconn.PgError{Code: "57P03"}), true},
		{"connection failure class 08", &pgconn.PgError{Code: "08006"}, true},
		{"too many clients", &pgconn.PgError{Code: "53300"}, true},
		{"serialization failure", &pgconn.PgError{Code: "40001"}, true},
		{"deadlock", &pgconn.PgError{Code: "40P01"}, true},
		{"unique violation", &pgconn.PgError{Code: "23505"}, false},
		{"syntax error", &pgconn.PgError{Code: "42601"}, false},
		{"connection refused", fmt.Errorf("failed to connect: %w", refused), true},
		{"connection reset", fmt.Errorf("read: %w", syscall.ECONNRESET), true},
		{"bad conn", driver.ErrBadConn, true},
		{"unexpected EOF", fmt.Errorf("record: %w", io.ErrUnexpectedEOF), true},
		{"flattened conn closed", errors.New("conn closed"), true},
		{"sqlite busy", errors.New("database is locked (5) (SQLITE_BUSY)"), true},
		{"lease lost", fmt.Errorf("record poll: %w", store.ErrLeaseLost), false},
		{"not found", store.ErrNotFound, false},
		{"cancelled", fmt.Errorf("x: %w", context.Canceled), false},
		{"deadline", context.DeadlineExceeded, false},
		{"plain", errors.New("no such column: foo"), false},
	}
	for _, c := range cases {
		if got := store.Transient(c.err); got != c.want {
			t.Errorf("%s: Transient(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}

// TestUnreachable: a database away (restart, refused or cut connection)
// is unreachable; a conflict a database that answers reports is not.
func TestUnreachable(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"admin shutdown", fmt.Errorf("claim outbox: %w", &pgconn.PgError{Code: "57P01"}), true},
		{"cannot connect now", &pgconn.PgError{Code: "57P03"}, true},
		{"connection refused", fmt.Errorf("claim due feeds: %w", refused), true},
		{"unexpected EOF", fmt.Errorf("claim digests: %w", io.ErrUnexpectedEOF), true},
		{"too many clients", &pgconn.PgError{Code: "53300"}, true},
		{"serialization failure", &pgconn.PgError{Code: "40001"}, false},
		{"deadlock", &pgconn.PgError{Code: "40P01"}, false},
		{"sqlite busy", errors.New("database is locked (5) (SQLITE_BUSY)"), false},
		{"syntax error", &pgconn.PgError{Code: "42601"}, false},
		{"cancelled", context.Canceled, false},
	} {
		if got := store.Unreachable(c.err); got != c.want {
			t.Errorf("%s: Unreachable(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}

func TestRetryTransient(t *testing.T) {
	away := &pgconn.PgError{Code: "57P01"}
	cases := []struct {
		name      string
		budget    time.Duration
		fails     []error // what each try returns, then nil
		wantTries int
		wantErr   error
	}{
		{"succeeds at once", time.Minute, nil, 1, nil},
		{"through a restart", time.Minute, []error{away, away}, 3, nil},
		{"not transient: one try", time.Minute, []error{store.ErrLeaseLost, away}, 1, store.ErrLeaseLost},
		{"no budget: one try", 0, []error{away}, 1, away},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := 0
			tries, err := store.RetryTransient(context.Background(), c.budget, func(context.Context) error {
				n++
				if n <= len(c.fails) {
					return c.fails[n-1]
				}
				return nil
			})
			if tries != c.wantTries || n != c.wantTries || !errors.Is(err, c.wantErr) || (c.wantErr == nil && err != nil) {
				t.Fatalf("tries %d (ran %d), err %v; want %d tries, err %v", tries, n, err, c.wantTries, c.wantErr)
			}
		})
	}
	// A cancelled context ends the waiting.
	ctx, cancel := context.WithCancel(context.Background())
	tries, err := store.RetryTransient(ctx, time.Hour, func(context.Context) error { cancel(); return away })
	if tries != 1 || !errors.Is(err, away) {
		t.Fatalf("cancelled: %d tries, %v", tries, err)
	}
}
