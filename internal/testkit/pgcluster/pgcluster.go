// Package pgcluster runs a private PostgreSQL cluster for tests and
// benchmarks: initdb in a temporary folder, its own port and socket
// folder, started, restarted and stopped by its own data folder. It never
// touches another server (the machine's shared one on 5432 above all). It
// is test infrastructure: never linked into cmd/feedmail.
package pgcluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ErrUnavailable: this machine cannot run a private cluster (no initdb or
// pg_ctl, or running as root without a postgres user). Callers skip.
var ErrUnavailable = errors.New("pgcluster: cannot run a private cluster here")

// Options tune the cluster. Zero values take the defaults.
type Options struct {
	// MaxConnections is the server's max_connections (default 200).
	MaxConnections int
	// Settings are extra "name=value" server settings.
	Settings []string
}

// Cluster is one running private cluster.
type Cluster struct {
	bin    string // folder of initdb and pg_ctl
	dir    string // owned by the cluster's user
	data   string
	port   int
	asUser string // "" to run the tools as ourselves
	opts   Options
	// URL is postgres://postgres@127.0.0.1:PORT/postgres?sslmode=disable.
	URL string
}

// BinDir finds the newest /usr/lib/postgresql/*/bin with initdb and
// pg_ctl ("" when there is none).
func BinDir() string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(a, b int) bool {
		va, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[a])))
		vb, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[b])))
		return va > vb
	})
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err != nil {
			continue
		}
		if _, err := os.Stat(filepath.Join(d, "pg_ctl")); err == nil {
			return d
		}
	}
	return ""
}

// Start initdb's a cluster in a new temporary folder and starts it on a
// free loopback port. It returns ErrUnavailable (wrapped) when the machine
// cannot run one. As root the tools run as the postgres OS user (initdb
// refuses root). The caller stops it with Stop.
func Start(ctx context.Context, o Options) (*Cluster, error) {
	if o.MaxConnections == 0 {
		o.MaxConnections = 200
	}
	c := &Cluster{bin: BinDir(), opts: o}
	if c.bin == "" {
		return nil, fmt.Errorf("%w: no initdb/pg_ctl under /usr/lib/postgresql/*/bin", ErrUnavailable)
	}
	if err := c.makeDir(); err != nil {
		return nil, err
	}
	c.data = filepath.Join(c.dir, "data")
	port, err := freePort()
	if err != nil {
		_ = os.RemoveAll(c.dir)
		return nil, err
	}
	c.port = port
	c.URL = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.port)
	if err := c.run(ctx, 2*time.Minute, "initdb", "-D", c.data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync"); err != nil {
		_ = os.RemoveAll(c.dir)
		return nil, err
	}
	if err := c.start(ctx); err != nil {
		_ = os.RemoveAll(c.dir)
		return nil, err
	}
	return c, nil
}

// makeDir creates the cluster's folder, owned by the postgres user when we
// are root. Not a test's TempDir: its parents are private to our user.
func (c *Cluster) makeDir() error {
	dir, err := os.MkdirTemp("", "feedmail-pg-")
	if err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	c.dir = dir
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			_ = os.RemoveAll(dir)
			return fmt.Errorf("%w: running as root and there is no postgres user to run the cluster as", ErrUnavailable)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			_ = os.RemoveAll(dir)
			return fmt.Errorf("pgcluster: %w", err)
		}
		c.asUser = "postgres"
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		_ = os.RemoveAll(dir)
		return fmt.Errorf("pgcluster: %w", err)
	}
	return nil
}

// freePort returns a loopback TCP port nothing listens on now.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgcluster: free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// Port is the cluster's TCP port.
func (c *Cluster) Port() int { return c.port }

// options are the server settings: our port, loopback only, the socket in
// our folder, no fsync (a test cluster), the connections asked for.
func (c *Cluster) options() string {
	s := fmt.Sprintf("-p %d -c listen_addresses=127.0.0.1 -c unix_socket_directories=%s -c fsync=off -c max_connections=%d",
		c.port, c.dir, c.opts.MaxConnections)
	for _, kv := range c.opts.Settings {
		s += " -c " + kv
	}
	return s
}

func (c *Cluster) start(ctx context.Context) error {
	return c.run(ctx, 2*time.Minute, "pg_ctl", "-D", c.data, "-l", filepath.Join(c.dir, "server.log"), "-o", c.options(),
		"-w", "-t", "90", "start")
}

// Restart is `pg_ctl restart -m fast`: connections are cut, the server
// comes back on the same port.
func (c *Cluster) Restart(ctx context.Context) error {
	return c.run(ctx, 2*time.Minute, "pg_ctl", "-D", c.data, "-l", filepath.Join(c.dir, "server.log"), "-o", c.options(),
		"-m", "fast", "-w", "-t", "90", "restart")
}

// RestartImmediate stops the server as a crash would (`pg_ctl stop -m
// immediate`: no checkpoint, recovery at the next start), waits down, then
// starts it again on the same port. It returns how long the server was
// down (from the stop command to accepting connections again).
func (c *Cluster) RestartImmediate(ctx context.Context, down time.Duration) (time.Duration, error) {
	start := time.Now()
	if err := c.run(ctx, time.Minute, "pg_ctl", "-D", c.data, "-m", "immediate", "-w", "stop"); err != nil {
		return 0, err
	}
	if down > 0 {
		t := time.NewTimer(down)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
	}
	// Started with a fresh context: a cluster left down would outlive the
	// caller's cancelled one.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	err := c.start(sctx)
	return time.Since(start), err
}

// Stop stops the server at once (immediate mode) and removes its folder.
func (c *Cluster) Stop(ctx context.Context) error {
	err := c.run(ctx, time.Minute, "pg_ctl", "-D", c.data, "-m", "immediate", "-w", "stop")
	if rmErr := os.RemoveAll(c.dir); err == nil && rmErr != nil {
		err = fmt.Errorf("pgcluster: remove %s: %w", c.dir, rmErr)
	}
	return err
}

// cmd builds a command for one of the cluster's tools, as its user.
func (c *Cluster) cmd(ctx context.Context, tool string, args ...string) *exec.Cmd {
	path := filepath.Join(c.bin, tool)
	var cmd *exec.Cmd
	if c.asUser != "" {
		cmd = exec.CommandContext(ctx, "runuser", append([]string{"-u", c.asUser, "--", path}, args...)...)
	} else {
		cmd = exec.CommandContext(ctx, path, args...)
	}
	cmd.Dir = c.dir
	return cmd
}

// run runs a tool to completion within the given time; its error carries
// the tool's output and the server log's tail.
func (c *Cluster) run(ctx context.Context, within time.Duration, tool string, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	if out, err := c.cmd(ctx, tool, args...).CombinedOutput(); err != nil {
		log, _ := os.ReadFile(filepath.Join(c.dir, "server.log"))
		if len(log) > 4000 {
			log = log[len(log)-4000:]
		}
		return fmt.Errorf("pgcluster: %s %s: %w\n%s\nserver log (tail):\n%s", tool, strings.Join(args, " "), err, out, log)
	}
	return nil
}
