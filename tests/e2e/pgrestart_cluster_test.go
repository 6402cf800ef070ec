package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/testkit/proc"
	"github.com/feedmail/feedmail/internal/testkit/testutil"
)

// pgCluster is a private PostgreSQL cluster for one test: its own data
// folder, port and socket folder, run as the postgres OS user when the
// test runs as root (initdb refuses root). The shared server on 5432 is
// never touched.
type pgCluster struct {
	t      *testing.T
	bin    string // folder of initdb and pg_ctl
	dir    string // owned by the cluster's user
	data   string
	port   int
	asUser string // "" to run the tools as ourselves
	URL    string // postgres://postgres@127.0.0.1:PORT/postgres?sslmode=disable
}

// pgBinDir finds the newest /usr/lib/postgresql/*/bin with initdb and
// pg_ctl ("" when there is none).
func pgBinDir() string {
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

// startPGCluster initdb's and starts a cluster (skipped, or failed under
// CI=true, without initdb), stopped and removed at cleanup.
func startPGCluster(t *testing.T) *pgCluster {
	t.Helper()
	bin := pgBinDir()
	if bin == "" {
		testutil.SkipOrFail(t, "no initdb/pg_ctl under /usr/lib/postgresql/*/bin")
	}
	c := &pgCluster{t: t, bin: bin}
	// Not t.TempDir(): its parents are private to our user, and the
	// cluster's user must reach the folder.
	dir, err := os.MkdirTemp("", "feedmail-pg-")
	if err != nil {
		t.Fatal(err)
	}
	c.dir = dir
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			testutil.SkipOrFail(t, "running as root and there is no postgres user to run the cluster as")
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		c.asUser = "postgres"
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	c.data = filepath.Join(dir, "data")
	c.port = pgFreePort(t)
	c.run(2*time.Minute, "initdb", "-D", c.data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync")
	c.start()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if out, err := c.cmd(ctx, "pg_ctl", "-D", c.data, "-m", "immediate", "-w", "stop").CombinedOutput(); err != nil {
			t.Logf("stopping the private cluster: %v\n%s", err, out)
		}
	})
	c.URL = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.port)
	return c
}

// pgFreePort returns a TCP port nothing listens on now.
func pgFreePort(t *testing.T) int {
	t.Helper()
	addr := proc.FreeAddr(t)
	_, p, _ := strings.Cut(addr, ":")
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// options are the server settings: our port, loopback only, the socket in
// our folder, no fsync (a test cluster), enough connections for several
// feedmail processes.
func (c *pgCluster) options() string {
	return fmt.Sprintf("-p %d -c listen_addresses=127.0.0.1 -c unix_socket_directories=%s -c fsync=off -c max_connections=200",
		c.port, c.dir)
}

func (c *pgCluster) start() {
	c.run(2*time.Minute, "pg_ctl", "-D", c.data, "-l", filepath.Join(c.dir, "server.log"), "-o", c.options(), "-w", "-t", "90", "start")
}

// restart is `pg_ctl restart -m fast`: connections are cut, the server
// comes back on the same port.
func (c *pgCluster) restart() {
	c.run(2*time.Minute, "pg_ctl", "-D", c.data, "-l", filepath.Join(c.dir, "server.log"), "-o", c.options(),
		"-m", "fast", "-w", "-t", "90", "restart")
}

// cmd builds a command for one of the cluster's tools, as its user.
func (c *pgCluster) cmd(ctx context.Context, tool string, args ...string) *exec.Cmd {
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

// run runs a tool to completion or fails the test with its output.
func (c *pgCluster) run(within time.Duration, tool string, args ...string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	if out, err := c.cmd(ctx, tool, args...).CombinedOutput(); err != nil {
		log, _ := os.ReadFile(filepath.Join(c.dir, "server.log"))
		c.t.Fatalf("%s %s: %v\n%s\nserver log:\n%s", tool, strings.Join(args, " "), err, out, log)
	}
}
