package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/feedmail/feedmail/internal/testkit/hubtest"
	"github.com/feedmail/feedmail/internal/testkit/pgcluster"
	"github.com/feedmail/feedmail/internal/testkit/proc"
	"github.com/feedmail/feedmail/internal/testkit/smtptest"
)

// chaos is one chaos run's world: the steady scenario's pieces (binaries,
// database, farms, seed, warm start), the private cluster, the serve
// processes, the sinks behind their switches, the recorder and the faults.
type chaos struct {
	cfg      ChaosConfig
	s        *steady
	rep      *ChaosReport
	cluster  *pgcluster.Cluster
	serves   []*serveProc
	rec      *recorder
	sinks    [2]*smtptest.Server // faulty, clean
	smtpFwd  *forwarder
	hooks    *hookSwitch
	readers  map[string][]string // feed URL → reader ids
	faults   []fault
	w0, w1   time.Time // the fault window
	notes    []string
	pubLogs  []string // each farm's publication log
	farmOpts farmFaults
	hub      *hubtest.Hub    // nil: no feed advertises a hub
	front    *front          // the WebSub callbacks' host
	pushed   map[string]bool // feed URL → it advertises the hub
}

// serveProc is one serve process slot: restarted in place after a kill.
type serveProc struct {
	name  string
	addr  string
	env   []string
	c     *child
	cpu   time.Duration // CPU of its earlier incarnations
	last  time.Duration // the current one's CPU at the last sample
	kills int
	other int // exits the bench did not cause
}

func newChaos(cfg ChaosConfig) *chaos {
	c := &chaos{cfg: cfg, rec: &recorder{}, readers: map[string][]string{}}
	c.s = &steady{cfg: SteadyConfig{Feeds: cfg.Feeds, Hosts: cfg.Hosts, Cadence: DefaultCadence, Window: cfg.Window,
		PublishShare: cfg.PublishShare, WarmStart: true, Bare: max(cfg.Bare, time.Second), Log: cfg.Log, Progress: cfg.Progress}}
	c.farmOpts = defaultFarmFaults(cfg.Seed)
	c.s.farmArgs = c.farmArgs
	c.s.warmRetry, c.s.bareFaults = true, true
	c.rep = newChaosReport(cfg)
	return c
}

// close stops the serves, then undoes the steady steps, then stops the
// cluster.
func (c *chaos) close() {
	_ = c.stopServes(context.Background())
	c.s.close()
	if c.cluster != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := c.cluster.Stop(ctx); err != nil {
			c.cfg.Log.Warn("chaos: stopping the private cluster", "err", err)
		}
	}
}

// startCluster starts the private cluster the run's database lives on,
// with connections enough for every serve and the bench. Commits stay
// synchronous (the server's default): with synchronous_commit=off an
// immediate shutdown loses commits already acknowledged, such as the
// record that an email was sent, and the run would count the resend
// against feedmail. fsync stays off: the machine itself does not crash.
func (c *chaos) startCluster(ctx context.Context) error {
	c.cfg.Progress("starting a private Postgres cluster")
	cl, err := pgcluster.Start(ctx, pgcluster.Options{MaxConnections: 100 + 60*c.cfg.Processes,
		Settings: []string{"shared_buffers=256MB"}})
	if err != nil {
		return err
	}
	c.cluster = cl
	c.s.cfg.DatabaseURL = cl.URL
	c.s.cfg.Keep = true // the cluster goes, and its databases with it
	return nil
}

// startSinks starts the SMTP sinks (one with faults, one without) behind
// a switch serve connects to, and the webhook receivers likewise.
func (c *chaos) startSinks(context.Context) error {
	observe := func(r smtptest.Received) { c.rec.email(r.To, r.Data, r.At, r.DroppedAfterDot) }
	faulty, err := smtptest.Start(smtptest.Options{Discard: true, Observe: observe, Faults: smtptest.Faults{
		Seed: c.cfg.Seed, DropAfterDot: 1.0 / 200, TempFail: 0.02, Slow: 0.01, SlowBy: 5 * time.Second}})
	if err != nil {
		return fmt.Errorf("start the SMTP sink: %w", err)
	}
	c.s.cleanup = append(c.s.cleanup, func() { _ = faulty.Close() })
	clean, err := smtptest.Start(smtptest.Options{Discard: true, Observe: observe})
	if err != nil {
		return fmt.Errorf("start the SMTP sink: %w", err)
	}
	c.s.cleanup = append(c.s.cleanup, func() { _ = clean.Close() })
	c.sinks = [2]*smtptest.Server{faulty, clean}
	if c.smtpFwd, err = startForwarder(faulty.Addr(), clean.Addr()); err != nil {
		return err
	}
	c.s.cleanup = append(c.s.cleanup, func() { _ = c.smtpFwd.Close() })
	if c.hooks, err = startHookSwitch(c.cfg.Seed, c.rec); err != nil {
		return err
	}
	c.s.cleanup = append(c.s.cleanup, c.hooks.close)
	return nil
}

// startServes starts Processes serve processes with every role, waits for
// each /healthz, then makes the feeds due spread over a cadence.
func (c *chaos) startServes(ctx context.Context) error {
	u, _ := url.Parse(c.s.cfg.DatabaseURL)
	var secret [16]byte
	var addrs []string
	_, _ = rand.Read(secret[:])
	for i := range c.cfg.Processes {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		addr := ln.Addr().String()
		_ = ln.Close()
		addrs = append(addrs, addr)
		name := "serve " + strconv.Itoa(i+1)
		env := proc.Env(map[string]string{
			"FEEDMAIL_DATABASE_URL": dbURL(u, c.s.dbName, c.s.appName), "FEEDMAIL_LISTEN": addr,
			"FEEDMAIL_BASE_URL": c.baseURL(addr), "FEEDMAIL_FROM": "feedbench@bench.example",
			"FEEDMAIL_SECRET": hex.EncodeToString(secret[:]), "FEEDMAIL_ALLOW_PRIVATE_NETWORKS": "1",
			"FEEDMAIL_ROLES": "web,poller,mailer,digest", "FEEDMAIL_SMTP_URL": "smtp://" + c.smtpFwd.Addr() + "?tls=none",
			"FEEDMAIL_MAILDIR": filepath.Join(c.s.dir, "mail"+strconv.Itoa(i+1)), "FEEDMAIL_LOG_LEVEL": "info",
		})
		if c.front != nil {
			c.front.setBackends(addrs)
		}
		sp := &serveProc{name: name, addr: addr, env: env}
		c.serves = append(c.serves, sp)
		if err := c.startServe(ctx, sp); err != nil {
			return err
		}
	}
	c.s.base = "http://" + c.serves[0].addr
	if err := c.waitSubscribed(ctx); err != nil {
		return err
	}
	return c.s.spread(ctx)
}

// baseURL is a serve's FEEDMAIL_BASE_URL: the callback front when there
// is a hub (every serve names the same), else the serve's own address.
func (c *chaos) baseURL(addr string) string {
	if c.front != nil {
		return "http://" + c.front.addr
	}
	return "http://" + addr
}

// startServe starts (or restarts) one serve and waits for its /healthz.
func (c *chaos) startServe(ctx context.Context, sp *serveProc) error {
	var also io.Writer
	if c.cfg.LogDir != "" {
		if err := os.MkdirAll(c.cfg.LogDir, 0o755); err != nil {
			return fmt.Errorf("serve log folder: %w", err)
		}
		f, err := os.OpenFile(filepath.Join(c.cfg.LogDir, strings.ReplaceAll(sp.name, " ", "-")+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return fmt.Errorf("serve log: %w", err)
		}
		c.s.cleanup = append(c.s.cleanup, func() { _ = f.Close() })
		also = f
	}
	k, err := startChildTee(sp.name, filepath.Join(c.s.dir, "feedmail"), sp.env, false, also, "serve")
	if err != nil {
		return err
	}
	sp.c, sp.last = k, 0
	return waitFor(ctx, 2*time.Minute, sp.name+" to answer /healthz", func() string { return k.out.tail(3) },
		func() bool { return proc.Healthy("http://" + sp.addr) }, k)
}

// sampleCPU reads each running serve's CPU so far (kept for the report
// when it is killed).
func (c *chaos) sampleCPU() {
	for _, sp := range c.serves {
		if sp.c != nil && !sp.c.exited() {
			if d, err := procCPU(sp.c.pid()); err == nil {
				sp.last = d
			}
		}
	}
}

// stopServes stops every serve (SIGTERM, then SIGKILL after 40 s).
func (c *chaos) stopServes(context.Context) error {
	c.sampleCPU()
	for _, sp := range c.serves {
		if sp.c != nil && !sp.c.exited() {
			sp.cpu += sp.last
			sp.last = 0
			if err := sp.c.stop(40 * time.Second); err != nil {
				c.cfg.Log.Warn("chaos: stopping serve", "serve", sp.name, "err", err)
			}
		}
	}
	return nil
}

// keepDir is a folder under the run's for a file the run writes.
func (c *chaos) keepDir(name string) string {
	_ = os.MkdirAll(filepath.Join(c.s.dir, "chaos"), 0o755)
	return filepath.Join(c.s.dir, "chaos", name)
}
