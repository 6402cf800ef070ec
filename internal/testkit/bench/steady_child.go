package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// child is a process the steady scenario started (feedmail serve, a
// feedfarm): its stdout lines kept when asked, the tail of its output kept
// for error messages, its exit watched. It runs in its own process group
// (a Ctrl-C at the terminal reaches feedbench, which stops it) and, on
// Linux, is killed if feedbench dies.
type child struct {
	name  string
	cmd   *exec.Cmd
	out   *tailBuffer
	lines *lineBuffer // stdout lines, when kept
	done  chan struct{}
	err   error // Wait's result once done is closed
}

// startChild starts bin with args and env. With keepStdout the stdout
// lines are kept in lines (and not in the tail).
func startChild(name, bin string, env []string, keepStdout bool, args ...string) (*child, error) {
	return startChildTee(name, bin, env, keepStdout, nil, args...)
}

// startChildTee is startChild that also copies the child's output (what
// the tail keeps) to also, when not nil.
func startChildTee(name, bin string, env []string, keepStdout bool, also io.Writer, args ...string) (*child, error) {
	c := &child{name: name, cmd: exec.Command(bin, args...), out: &tailBuffer{max: 256 << 10}, done: make(chan struct{})}
	c.cmd.Env = env
	var out io.Writer = c.out
	if also != nil {
		out = io.MultiWriter(c.out, also)
	}
	c.cmd.Stdout, c.cmd.Stderr = out, out
	if keepStdout {
		c.lines = &lineBuffer{}
		c.cmd.Stdout = c.lines
	}
	c.cmd.SysProcAttr = childAttr()
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() {
		c.err = c.cmd.Wait()
		close(c.done)
	}()
	return c, nil
}

// pid is the child's process id.
func (c *child) pid() int { return c.cmd.Process.Pid }

// exited reports whether the child has exited.
func (c *child) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// failure describes a child that exited: how, and its last log lines.
func (c *child) failure() error {
	return fmt.Errorf("%s (pid %d) exited: %v; its last lines:\n%s", c.name, c.pid(), c.err, c.out.tail(20))
}

// stop ends the child by its pid: SIGTERM, then SIGKILL after grace. It
// returns nil when it had exited already or exits within grace.
func (c *child) stop(grace time.Duration) error {
	if c.exited() {
		return nil
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-c.done:
		return nil
	case <-t.C:
		_ = c.cmd.Process.Kill()
		<-c.done
		return fmt.Errorf("%s (pid %d) did not stop within %s of SIGTERM: killed", c.name, c.pid(), grace)
	}
}

// tailBuffer keeps the last max bytes (about) written to it.
type tailBuffer struct {
	mu  sync.Mutex
	b   []byte
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append([]byte(nil), t.b[len(t.b)-t.max/2:]...)
	}
	return len(p), nil
}

// tail returns the last n complete lines.
func (t *tailBuffer) tail(n int) string {
	t.mu.Lock()
	s := string(t.b)
	t.mu.Unlock()
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// lineBuffer keeps every complete line written to it.
type lineBuffer struct {
	mu    sync.Mutex
	part  []byte
	lines []string
}

func (l *lineBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.part = append(l.part, p...)
	for {
		i := bytes.IndexByte(l.part, '\n')
		if i < 0 {
			return len(p), nil
		}
		l.lines = append(l.lines, string(l.part[:i]))
		l.part = l.part[i+1:]
	}
}

// get returns the lines so far.
func (l *lineBuffer) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lines
}

// waitFor polls cond every 50 ms until it holds, ctx ends, within passes
// or one of the children exits. what says what was awaited and seen() what
// was seen instead, for the error.
func waitFor(ctx context.Context, within time.Duration, what string, seen func() string, cond func() bool, kids ...*child) error {
	deadline := time.Now().Add(within)
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		for _, k := range kids {
			if k != nil && k.exited() {
				return k.failure()
			}
		}
		if cond() {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("waited %s for %s; saw %s", within, what, seen())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// goBuild compiles ./cmd/feedmail and ./cmd/feedfarm into dir.
func goBuild(ctx context.Context, dir string) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-o", dir+string(filepath.Separator), "./cmd/feedmail", "./cmd/feedfarm")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/feedmail ./cmd/feedfarm: %w\n%s", err, out)
	}
	return nil
}

// moduleRoot returns the folder holding go.mod above this source file.
func moduleRoot() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("bench: cannot locate the repository")
	}
	for d := filepath.Dir(file); d != filepath.Dir(d); d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("bench: no go.mod above " + file)
}

// gitDescribe names the commit the binaries were built from ("c01469e",
// "c01469e-dirty"), or "" when git cannot tell.
func gitDescribe(ctx context.Context) string {
	root, err := moduleRoot()
	if err != nil {
		return ""
	}
	cmd := exec.CommandContext(ctx, "git", "describe", "--always", "--dirty")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
