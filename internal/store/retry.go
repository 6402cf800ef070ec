package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// A write that records work already done outside the database (an email
// the SMTP server accepted, a feed fetched) must not be lost to a database
// that is away for a moment: the work would be done again after its lease,
// and a reader would get the same email twice. Transient tells such a
// moment from a real failure; RetryTransient retries the write through it,
// within the budget its caller's lease allows.

// Transient reports whether err says the database could not be reached or
// dropped the connection for a moment (a restart, a failover, a cut
// connection, too many clients, a busy SQLite file, a serialization
// conflict), so that the same write, tried again, may succeed. A lost
// lease, a constraint violation, bad SQL or a cancelled context is not
// transient.
func Transient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, ErrLeaseLost) || errors.Is(err, ErrNotFound) {
		return false
	}
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		switch {
		case strings.HasPrefix(pg.Code, "08"): // connection exception
			return true
		case pg.Code == "57P01", pg.Code == "57P02", pg.Code == "57P03": // admin/crash shutdown, cannot connect now
			return true
		case pg.Code == "53300": // too many connections
			return true
		case pg.Code == "40001", pg.Code == "40P01": // serialization failure, deadlock: the transaction is undone
			return true
		}
		return false
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) || pgconn.SafeToRetry(err) {
		return true
	}
	if errors.Is(err, driver.ErrBadConn) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	// Drivers that flatten their errors to text.
	msg := strings.ToLower(err.Error())
	for _, s := range []string{"conn closed", "connection refused", "connection reset", "broken pipe",
		"server closed the connection", "terminating connection", "database is locked", "sqlite_busy"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// Unreachable reports whether err says the database could not be reached
// or went away (a restart, a shutdown, a refused or cut connection, no
// connection slot): Transient, but not a conflict between transactions
// (serialization failure, deadlock, a busy SQLite file), which a database
// that answers reports.
func Unreachable(err error) bool {
	if !Transient(err) {
		return false
	}
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		return pg.Code != "40001" && pg.Code != "40P01"
	}
	msg := strings.ToLower(err.Error())
	return !strings.Contains(msg, "database is locked") && !strings.Contains(msg, "sqlite_busy")
}

// Waits between tries of RetryTransient.
const (
	retryFirstWait = 100 * time.Millisecond
	retryMaxWait   = 5 * time.Second
)

// RetryTransient runs write until it returns nil or an error that is not
// Transient, or until budget has passed or ctx ends, waiting between tries
// (100 ms, doubling up to 5 s). It returns how many tries were made and
// write's last error. The caller picks budget so that no try outlives the
// lease that makes the write its own (after it, another worker may redo
// the work); a budget ≤ 0 still makes one try.
func RetryTransient(ctx context.Context, budget time.Duration, write func(context.Context) error) (int, error) {
	deadline := time.Now().Add(budget)
	wait := retryFirstWait
	for tries := 1; ; tries++ {
		err := write(ctx)
		if err == nil || !Transient(err) {
			return tries, err
		}
		left := time.Until(deadline)
		if left <= 0 || ctx.Err() != nil {
			return tries, err
		}
		t := time.NewTimer(min(wait, left))
		select {
		case <-ctx.Done():
			t.Stop()
			return tries, err
		case <-t.C:
		}
		wait = min(2*wait, retryMaxWait)
	}
}
