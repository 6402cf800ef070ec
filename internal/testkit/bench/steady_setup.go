package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/proc"
	"github.com/feedmail/feedmail/internal/testkit/smtptest"
	"github.com/feedmail/feedmail/poller"
)

// steady is one steady run's world: the binaries, the database, the child
// processes and the sink, and what the steps learned.
type steady struct {
	cfg      SteadyConfig
	dir      string // temporary folder of the binaries
	commit   string
	dbName   string
	dbDesc   string
	dsn      string // the bench's own (probe) connections
	appName  string // serve's application_name: its backends
	st       *store.Store
	farms    []*child
	farmURLs []string // each farm's base URL
	urls     []string // feed i's URL (host i % Hosts)
	sink     *smtptest.Server
	serve    *child
	base     string     // serve's http://addr
	t0       time.Time  // when the first feed came due
	minID    int64      // the first feed's id
	notes    []string   // what the report should say besides the figures
	first    firstRound // serve's first round (a cold run)
	catch    *CatchUp   // the catch-up after a pause (nil: none)
	restart  time.Time  // when serve started again after the pause
	cleanup  []func()
	// farmArgs, if set, gives farm i's flags besides steady's own.
	farmArgs func(i int) []string
	// warmRetry polls again the feeds whose warm poll failed; bareFaults
	// lets the bare loop meet the farms' faults (up to 10 % failed).
	warmRetry, bareFaults bool
	// warmHook, if set, also sees each poll of the warm start.
	warmHook func(context.Context, poller.PollEvent)
}

// close undoes every step, last first: children stopped by pid, the
// database dropped (unless Keep), the binaries removed.
func (s *steady) close() {
	for i := len(s.cleanup) - 1; i >= 0; i-- {
		s.cleanup[i]()
	}
	s.cleanup = nil
}

// build compiles feedmail and feedfarm into a temporary folder.
func (s *steady) build(ctx context.Context) error {
	dir, err := os.MkdirTemp("", "feedbench-steady-")
	if err != nil {
		return err
	}
	s.dir = dir
	s.cleanup = append(s.cleanup, func() { _ = os.RemoveAll(dir) })
	s.cfg.Progress("building feedmail and feedfarm")
	s.commit = gitDescribe(ctx)
	return goBuild(ctx, dir)
}

// createDB creates a fresh database next to the configured one, migrates
// it and opens the bench's connection to it.
func (s *steady) createDB(ctx context.Context) error {
	base := s.cfg.DatabaseURL
	var b [5]byte
	_, _ = rand.Read(b[:])
	s.dbName = "feedbench_" + hex.EncodeToString(b[:])
	s.appName = "feedbench-serve-" + hex.EncodeToString(b[:])
	admin, err := store.Open(ctx, base, store.Options{MaxOpenConns: 1})
	if err != nil {
		return fmt.Errorf("database: %w", err)
	}
	var version string
	_ = admin.DB.WithContext(ctx).Raw("SHOW server_version").Scan(&version).Error
	err = admin.DB.WithContext(ctx).Exec("CREATE DATABASE " + s.dbName).Error
	_ = admin.Close()
	if err != nil {
		return fmt.Errorf("create database %s: %w", s.dbName, err)
	}
	if !s.cfg.Keep {
		s.cleanup = append(s.cleanup, func() { s.dropDB(base) })
	}
	u, err := url.Parse(base)
	if err != nil {
		return fmt.Errorf("%w: database URL: %v", ErrBadConfig, err)
	}
	s.dbDesc = fmt.Sprintf("PostgreSQL %s at %s, database %s", strings.Fields(version + " ?")[0], u.Host, s.dbName)
	s.dsn = dbURL(u, s.dbName, "feedbench-probe")
	st, err := store.Open(ctx, s.dsn, store.Options{MaxOpenConns: 8})
	if err != nil {
		return fmt.Errorf("open the bench database: %w", err)
	}
	s.cleanup = append(s.cleanup, func() { _ = st.Close() })
	if _, err := st.Migrate(ctx); err != nil {
		return fmt.Errorf("migrate the bench database: %w", err)
	}
	s.st = st
	return nil
}

// dbURL is base pointed at database name with application_name app.
func dbURL(base *url.URL, name, app string) string {
	u := *base
	u.Path = "/" + name
	q := u.Query()
	q.Del("search_path")
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	return u.String()
}

// dropDB drops the run's database, closing the connections left to it.
func (s *steady) dropDB(base string) {
	// The run's context may be over: drop with a fresh one.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, err := store.Open(ctx, base, store.Options{MaxOpenConns: 1})
	if err != nil {
		s.cfg.Log.Warn("steady: could not drop the database", "database", s.dbName, "err", err)
		return
	}
	defer a.Close()
	if err := a.DB.WithContext(ctx).Exec("DROP DATABASE IF EXISTS " + s.dbName + " WITH (FORCE)").Error; err != nil {
		s.cfg.Log.Warn("steady: could not drop the database", "database", s.dbName, "err", err)
	}
}

// startFarms starts one feedfarm per host, 127.0.0.1 upwards, with the
// feeds of that host (feed i is on host i % Hosts), and collects the URLs
// they print. Each farm publishes in its feeds round robin, so that
// PublishShare of all feeds publish per cadence.
func (s *steady) startFarms(ctx context.Context) error {
	h, n := s.cfg.Hosts, s.cfg.Feeds
	perFarm := make([][]string, h)
	for i := range h {
		count := n/h + btoi(i < n%h)
		args := []string{"-listen", fmt.Sprintf("127.0.0.%d:0", i+1), "-feeds", strconv.Itoa(count), "-items", "10",
			"-validators", "both", "-cache-control", fmt.Sprintf("max-age=%d", int(s.cfg.Cadence.Seconds())),
			"-record=false", "-log-level", "warn", "-publish-every", "0"}
		if pub := s.cfg.PublishShare * float64(count); pub > 0 {
			args[len(args)-1] = (time.Duration(float64(s.cfg.Cadence) / pub)).String()
		}
		if s.farmArgs != nil {
			args = append(args, s.farmArgs(i)...)
		}
		c, err := startChild(fmt.Sprintf("feedfarm %d", i+1), filepath.Join(s.dir, "feedfarm"), os.Environ(), true, args...)
		if err != nil {
			return err
		}
		s.farms = append(s.farms, c)
		s.cleanup = append(s.cleanup, func() {
			if err := c.stop(10 * time.Second); err != nil {
				s.cfg.Log.Warn("steady: stopping a farm", "err", err)
			}
		})
		err = waitFor(ctx, 2*time.Minute, fmt.Sprintf("%s to print %d feed URLs", c.name, count),
			func() string { return fmt.Sprintf("%d", len(c.lines.get())) },
			func() bool { return len(c.lines.get()) >= count }, c)
		if err != nil {
			return err
		}
		perFarm[i] = c.lines.get()[:count]
		s.farmURLs = append(s.farmURLs, farmBase(perFarm[i][0]))
	}
	s.urls = make([]string, n)
	for i := range s.urls {
		s.urls[i] = perFarm[i%h][i/h]
	}
	return nil
}

// gcd is the greatest common divisor of a and b.
func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// startServe starts the SMTP sink and `feedmail serve` (roles web, poller,
// mailer) and waits for /healthz; after a warm start it then makes the
// feeds due, spread evenly over the first cadence from now (a cold run's
// feeds are due already: importDue).
func (s *steady) startServe(ctx context.Context) error {
	sink, err := smtptest.Start(smtptest.Options{Discard: true})
	if err != nil {
		return fmt.Errorf("start the SMTP sink: %w", err)
	}
	s.sink = sink
	s.cleanup = append(s.cleanup, func() { _ = sink.Close() })
	if err := s.launchServe(ctx); err != nil {
		return err
	}
	if !s.cfg.WarmStart {
		s.t0 = time.Now().UTC() // the feeds are due already (importDue)
		return nil
	}
	return s.spread(ctx)
}

// launchServe starts `feedmail serve` against the sink and the run's
// database and waits for /healthz (at start, and again after a pause).
func (s *steady) launchServe(ctx context.Context) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	s.base = "http://" + addr
	u, _ := url.Parse(s.cfg.DatabaseURL)
	var secret [16]byte
	_, _ = rand.Read(secret[:])
	env := proc.Env(map[string]string{
		"FEEDMAIL_DATABASE_URL": dbURL(u, s.dbName, s.appName), "FEEDMAIL_LISTEN": addr, "FEEDMAIL_BASE_URL": s.base,
		"FEEDMAIL_FROM": "feedbench@bench.example", "FEEDMAIL_SECRET": hex.EncodeToString(secret[:]),
		"FEEDMAIL_ALLOW_PRIVATE_NETWORKS": "1", "FEEDMAIL_ROLES": "web,poller,mailer",
		"FEEDMAIL_SMTP_URL": s.sink.URL(), "FEEDMAIL_MAILDIR": filepath.Join(s.dir, "mail"), "FEEDMAIL_LOG_LEVEL": "info",
	})
	if v := os.Getenv("FEEDMAIL_PPROF_LISTEN"); v != "" {
		// Passed through, to profile the serve loop under the benchmark.
		env = append(env, "FEEDMAIL_PPROF_LISTEN="+v)
	}
	c, err := startChild("feedmail serve", filepath.Join(s.dir, "feedmail"), env, false, "serve")
	if err != nil {
		return err
	}
	s.serve = c
	s.cleanup = append(s.cleanup, func() { _ = s.stopServe(context.Background()) })
	return waitFor(ctx, 2*time.Minute, "feedmail serve to answer /healthz", func() string { return c.out.tail(3) },
		func() bool { return proc.Healthy(s.base) }, c)
}

// spread makes the feeds due evenly over the first cadence from now: feed
// k of n at now + ((k × p) mod n) / n of a cadence, where p (near n times
// the golden ratio, prime to n) scatters the order. In feed order, the
// farms' round-robin publishing would follow the polls, and a feed would
// publish between its first two polls far more often than PublishShare.
func (s *steady) spread(ctx context.Context) error {
	s.t0 = time.Now().UTC()
	n := int64(s.cfg.Feeds)
	p := max(1, int64(float64(n)*0.6180339887))
	for gcd(p, n) != 1 {
		p++
	}
	step := s.cfg.Cadence.Seconds() / float64(n)
	reason := "bench steady: spread after the warm start"
	// A feed a WebSub subscription covers keeps its backup poll.
	err := s.st.DB.WithContext(ctx).Exec(`UPDATE feeds SET next_poll_at = ?::timestamptz + make_interval(secs => ((id - ?) * ? % ?) * ?::float8),
		poll_reason = ? WHERE websub_state <> 'active'`, s.t0, s.minID, p, n, step, reason).Error
	if err != nil {
		return fmt.Errorf("make the feeds due: %w", err)
	}
	return nil
}

// stopServe stops `feedmail serve` (SIGTERM, then SIGKILL after 40 s).
func (s *steady) stopServe(context.Context) error {
	if s.serve == nil {
		return nil
	}
	return s.serve.stop(40 * time.Second)
}
