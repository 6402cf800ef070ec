package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/farm"
	"github.com/feedmail/feedmail/poller"
)

// env is one bench run's world: a fresh database, a fake clock, the farms
// and the SMTP sink, and the data the scenarios share.
type env struct {
	cfg     Config
	clk     *clock.Fake
	st      *store.Store
	trips   *tripCounter
	farms   []*farm.Farm
	sink    *mailSink // the mail scenarios', started on first use
	dbDesc  string
	dsn     string
	app     string       // the pool's application_name on Postgres: its backends
	mon     *store.Store // followDB's own connection, opened on first use
	cleanup []func()
	// scenario is the one running, for its profile's name.
	scenario string

	// The fleet: cfg.Feeds feeds on the farms, each followed by one instant
	// subscriber; primed once a pass has polled them all.
	fleet  []fleetFeed
	primed bool
	// fan is the fan-out feed, once made.
	fan *fanFeed

	pl *poller.Poller // made on first use
	ps pollStats      // what pl's AfterPoll counted
	hc *http.Client   // the bare loop's client
}

// fleetFeed is one feed of the fleet.
type fleetFeed struct {
	id   int64 // store id
	farm *farm.Feed
}

// newEnv makes the fresh database and starts the farms.
func newEnv(ctx context.Context, cfg Config) (_ *env, err error) {
	// The bench's simulated time starts at a whole second (Last-Modified has
	// one-second resolution) a little in the past of the real clock.
	e := &env{cfg: cfg, clk: clock.NewFake(time.Now().UTC().Truncate(time.Second)), trips: &tripCounter{}}
	defer func() {
		if err != nil {
			e.close()
		}
	}()
	if err := e.openDB(ctx); err != nil {
		return nil, err
	}
	for i := range cfg.Hosts {
		fm, err := farm.Listen(e.clk, fmt.Sprintf("127.0.0.%d:0", i+1))
		if err != nil {
			if i == 0 {
				return nil, fmt.Errorf("start the feed farm: %w", err)
			}
			// Some systems only answer on 127.0.0.1: fewer hosts.
			cfg.Log.Warn("bench: loopback address not available; fewer farm hosts", "hosts", i, "err", err)
			break
		}
		e.farms = append(e.farms, fm)
		e.cleanup = append(e.cleanup, fm.Close)
	}
	return e, nil
}

// openDB creates the fresh schema (Postgres) or file (SQLite), opens and
// migrates it, and wraps its connection pool to count round trips.
func (e *env) openDB(ctx context.Context) error {
	base := e.cfg.DatabaseURL
	var b [5]byte
	_, _ = rand.Read(b[:])
	suffix := hex.EncodeToString(b[:])
	switch {
	case strings.HasPrefix(base, "postgres://"), strings.HasPrefix(base, "postgresql://"):
		schema := "bench_" + suffix
		admin, err := store.Open(ctx, base, store.Options{MaxOpenConns: 1})
		if err != nil {
			return fmt.Errorf("database: %w", err)
		}
		var version string
		_ = admin.DB.WithContext(ctx).Raw("SHOW server_version").Scan(&version).Error
		err = admin.DB.WithContext(ctx).Exec("CREATE SCHEMA " + schema).Error
		_ = admin.Close()
		if err != nil {
			return fmt.Errorf("create schema %s: %w", schema, err)
		}
		u, err := url.Parse(base)
		if err != nil {
			return fmt.Errorf("%w: database URL: %v", ErrBadConfig, err)
		}
		q := u.Query()
		q.Set("search_path", schema)
		e.app = "feedbench-" + suffix
		q.Set("application_name", e.app)
		u.RawQuery = q.Encode()
		e.dsn = u.String()
		host := u.Host
		e.dbDesc = fmt.Sprintf("PostgreSQL %s at %s, schema %s", strings.Fields(version + " ?")[0], host, schema)
		if !e.cfg.Keep {
			e.cleanup = append(e.cleanup, func() {
				// The run's context may be over: drop with a fresh one.
				dctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				a, err := store.Open(dctx, base, store.Options{MaxOpenConns: 1})
				if err != nil {
					e.cfg.Log.Warn("bench: could not drop the schema", "schema", schema, "err", err)
					return
				}
				defer a.Close()
				if err := a.DB.WithContext(dctx).Exec("DROP SCHEMA " + schema + " CASCADE").Error; err != nil {
					e.cfg.Log.Warn("bench: could not drop the schema", "schema", schema, "err", err)
				}
			})
		}
	case strings.HasPrefix(base, "sqlite://"):
		dir, err := os.MkdirTemp("", "feedmail-bench-")
		if err != nil {
			return fmt.Errorf("temporary folder for the SQLite file: %w", err)
		}
		if !e.cfg.Keep {
			e.cleanup = append(e.cleanup, func() { _ = os.RemoveAll(dir) })
		}
		path := filepath.Join(dir, "bench.db")
		e.dsn = "sqlite://" + path
		e.dbDesc = "SQLite (embedded) at " + path
	default:
		return fmt.Errorf("%w: database URL must start with postgres:// or sqlite://", ErrBadConfig)
	}
	st, err := store.Open(ctx, e.dsn, store.Options{Clock: e.clk, Logger: e.cfg.Log, MaxOpenConns: 24})
	if err != nil {
		return fmt.Errorf("open the bench database: %w", err)
	}
	// Closed after the schema drop is registered, so it runs first.
	e.cleanup = append(e.cleanup, func() { _ = st.Close() })
	if _, err := st.Migrate(ctx); err != nil {
		return fmt.Errorf("migrate the bench database: %w", err)
	}
	if err := e.trips.wrap(st.DB); err != nil {
		return err
	}
	e.st = st
	return nil
}

// keptDesc says where the kept database is.
func (e *env) keptDesc() string {
	if strings.HasPrefix(e.dsn, "sqlite://") {
		return e.dsn
	}
	u, err := url.Parse(e.dsn)
	if err != nil {
		return e.dbDesc
	}
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
	}
	return u.String()
}

// close undoes newEnv, last step first.
func (e *env) close() {
	for i := len(e.cleanup) - 1; i >= 0; i-- {
		e.cleanup[i]()
	}
	e.cleanup = nil
}

// farmFor is the farm of the i-th fleet feed (round robin over hosts).
func (e *env) farmFor(i int) *farm.Farm { return e.farms[i%len(e.farms)] }

// measure runs the timed part of a scenario: it collects garbage, resets
// the peak RSS, counts round trips and CPU time (the process's, and on a
// local Postgres that of the run's own backends), and times fn.
func (e *env) measure(ctx context.Context, row *Row, fn func(ctx context.Context) error) error {
	runtime.GC()
	debug.FreeOSMemory()
	resetPeak()
	stopProfile, err := e.startProfile()
	if err != nil {
		return err
	}
	before := e.trips.n.Load()
	cpu := processCPU()
	stopDB := e.followDB(ctx)
	start := time.Now()
	err = fn(ctx)
	row.Elapsed = time.Since(start)
	row.CPU = processCPU() - cpu
	row.DBCPU = stopDB()
	row.Trips = e.trips.n.Load() - before
	row.PeakRSS, row.RSSSource = peakRSS()
	stopProfile()
	return err
}

// startProfile starts a CPU profile of the running scenario when
// cfg.ProfileDir is set; the function it returns stops and writes it.
func (e *env) startProfile() (stop func(), err error) {
	if e.cfg.ProfileDir == "" {
		return func() {}, nil
	}
	f, err := os.Create(filepath.Join(e.cfg.ProfileDir, e.scenario+".pprof"))
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); _ = f.Close() }, nil
}

// progress shows status() every half second through cfg.Progress until
// the returned stop is called. Nothing waits on it: it only reports.
func (e *env) progress(label string, status func() string) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	start := time.Now()
	wg.Go(func() {
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				e.cfg.Progress(fmt.Sprintf("%s: %s (%.0f s)", label, status(), time.Since(start).Seconds()))
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
		e.cfg.Progress("")
	}
}

// resetPeak resets VmHWM (Linux ≥ 4.0); errors are ignored (peakRSS then
// reports the process's peak so far).
func resetPeak() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// peakRSS returns VmHWM in bytes, or the Go runtime's mapped memory.
func peakRSS() (int64, string) {
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
				f := strings.Fields(v)
				if len(f) >= 1 {
					if kb, err := strconv.ParseInt(f[0], 10, 64); err == nil {
						return kb << 10, "VmHWM"
					}
				}
			}
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.Sys), "go"
}

// errCheck is a scenario outcome that is not what it should be.
var errCheck = errors.New("check failed")

func checkf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errCheck, fmt.Sprintf(format, args...))
}
