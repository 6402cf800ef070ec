// Package proc runs the feedmail binary for the end-to-end and fault
// suites: it builds ./cmd/feedmail, gives a process a clean environment and
// a free loopback address, collects its output, waits for /healthz and
// stops it with SIGTERM (SIGKILL when it will not stop).
//
// Test infrastructure: never linked into cmd/feedmail. It only starts the
// processes its callers ask for and never signals any other.
package proc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/testkit/testutil"
)

// Build compiles ./cmd/feedmail into dir and returns the binary's path.
func Build(dir string) (string, error) {
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "feedmail")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/feedmail")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/feedmail: %w\n%s", err, out)
	}
	return bin, nil
}

// BuildT compiles ./cmd/feedmail into the test's temporary folder and
// returns the binary's path; a failed build fails the test.
func BuildT(t testing.TB) string {
	t.Helper()
	bin, err := Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// repoRoot returns the folder holding go.mod above this file.
func repoRoot() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("proc: cannot locate the repository")
	}
	for d := filepath.Dir(file); d != filepath.Dir(d); d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("proc: no go.mod above " + file)
}

// FreeAddr returns a loopback address (127.0.0.1:port) whose port was free
// a moment ago.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Env returns this process's environment without its FEEDMAIL_* variables,
// followed by vars in name order, so a child sees only the configuration
// the test gives it.
func Env(vars map[string]string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "FEEDMAIL_") {
			env = append(env, kv)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		env = append(env, k+"="+vars[k])
	}
	return env
}

// Run runs bin with args and env to completion within two minutes and
// returns its stdout; a failure fails the test with both outputs.
func Run(t testing.TB, bin string, env []string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("feedmail %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.String()
}

// Healthy reports whether base+"/healthz" answers 200 now (within 3 s).
func Healthy(base string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/healthz", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Log collects a process's stdout and stderr; it is safe for both writers
// and for readers while they write.
type Log struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns everything written so far.
func (l *Log) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Tail returns the last n lines.
func (l *Log) Tail(n int) string {
	lines := strings.Split(strings.TrimRight(l.String(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Grep returns the lines containing s (at most max of them) and how many
// there are in all.
func (l *Log) Grep(s string, max int) (lines []string, n int) {
	sc := bufio.NewScanner(strings.NewReader(l.String()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if strings.Contains(sc.Text(), s) {
			n++
			if len(lines) < max {
				lines = append(lines, sc.Text())
			}
		}
	}
	return lines, n
}

// ErrStopTimeout is wrapped by Stop when the process outlived SIGTERM by
// the grace period and had to be killed.
var ErrStopTimeout = errors.New("did not stop within the grace period of SIGTERM")

// Proc is one running process with its output in Log.
type Proc struct {
	Cmd  *exec.Cmd
	Log  *Log
	done chan struct{} // closed when the process has exited
	err  error         // Wait's result, once done is closed
}

// Start starts bin with args and env, its stdout and stderr going to a new
// Log, and waits for it in the background.
func Start(bin string, env []string, args ...string) (*Proc, error) {
	p := &Proc{Cmd: exec.Command(bin, args...), Log: &Log{}, done: make(chan struct{})}
	p.Cmd.Env = env
	p.Cmd.Stdout, p.Cmd.Stderr = p.Log, p.Log
	if err := p.Cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		p.err = p.Cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// Pid is the process id.
func (p *Proc) Pid() int { return p.Cmd.Process.Pid }

// Done is closed when the process has exited; Err then returns how.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Err returns Wait's result once Done is closed.
func (p *Proc) Err() error { return p.err }

// Exited reports whether the process has exited.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Stop ends the process gracefully: SIGTERM, then SIGKILL after grace. It
// returns nil when the process had already exited or exits cleanly, its
// exit error after SIGTERM, or an error wrapping ErrStopTimeout when it had
// to be killed.
func (p *Proc) Stop(grace time.Duration) error {
	if p.Exited() {
		return nil
	}
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return p.err
	case <-time.After(grace):
		_ = p.Cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("%w (%s)", ErrStopTimeout, grace)
	}
}

// Kill sends SIGKILL and waits up to within for the process to be gone.
func (p *Proc) Kill(within time.Duration) error {
	if err := p.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(within):
		return fmt.Errorf("still running %s after SIGKILL", within)
	}
}

// WaitHealthy waits until base answers /healthz with 200; it fails the test
// after within, or at once (with the last lines of the log) if the process
// exits first. name is how failures name the process.
func (p *Proc) WaitHealthy(t testing.TB, name, base string, within time.Duration) {
	t.Helper()
	testutil.Eventually(t, within, func() bool {
		if p.Exited() {
			t.Fatalf("%s exited: %v\n%s", name, p.err, p.Log.Tail(30))
		}
		return Healthy(base)
	}, name+" answers /healthz with 200")
}
