// Package dovecottest starts a real Dovecot IMAP server (Debian's
// dovecot-imapd) for tests: its own configuration, certificate, one user and
// a Maildir, all in the test's temporary folder, listening on free loopback
// ports for imaps and imap with STARTTLS. It can stop and restart the
// server on the same ports and mail, and append, count and read messages.
//
// Test infrastructure: never linked into cmd/feedmail. It only signals the
// Dovecot process it started, by its PID.
package dovecottest

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/testkit/testutil"
)

// Server is one running (or stopped) Dovecot.
type Server struct {
	Dir       string // configuration, certificate, log and mail
	IMAPAddr  string // 127.0.0.1:port, STARTTLS
	IMAPSAddr string // 127.0.0.1:port, implicit TLS
	User      string
	Password  string
	CAs       *x509.CertPool // trusts the server's certificate

	bin    string
	opts   Options
	conf   string
	cmd    *exec.Cmd
	exited chan struct{}
}

// Options change the server's behaviour.
type Options struct {
	// Without lists capabilities the server does not announce after login
	// (such as "MOVE", "IDLE", "UIDPLUS"), to test a client's fallbacks.
	Without []string
}

// Start writes a configuration into t.TempDir() and starts Dovecot in the
// foreground as a child process; t.Cleanup stops it. It skips the test (or
// fails it under CI=true) when dovecot is not installed.
func Start(t testing.TB) *Server {
	t.Helper()
	return StartWith(t, Options{})
}

// StartWith is Start with options.
func StartWith(t testing.TB, opts Options) *Server {
	t.Helper()
	bin, err := exec.LookPath("dovecot")
	if err != nil {
		bin = "/usr/sbin/dovecot"
		if _, err := os.Stat(bin); err != nil {
			testutil.SkipOrFail(t, "dovecot is not installed (Debian package dovecot-imapd)")
		}
	}
	if v, err := exec.Command(bin, "--version").Output(); err == nil && !strings.HasPrefix(string(v), "2.3.") {
		testutil.SkipOrFail(t, "dovecottest writes a Dovecot 2.3 configuration; found "+strings.TrimSpace(string(v)))
	}
	s := &Server{Dir: t.TempDir(), User: "feedmail", Password: "pw-" + strconv.FormatInt(time.Now().UnixNano(), 36), bin: bin, opts: opts}
	s.IMAPAddr, s.IMAPSAddr = freeAddrs(t)
	if err := s.prepare(); err != nil {
		t.Fatalf("dovecottest: %v", err)
	}
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			t.Logf("dovecot logs (%s):\n%s", s.Dir, s.Logs())
		}
	})
	if err := s.start(); err != nil {
		t.Fatalf("dovecottest: %v", err)
	}
	return s
}

// prepare writes the certificate, the password file and the configuration
// and makes the folders usable by Dovecot's unprivileged users.
func (s *Server) prepare() error {
	pool, err := writeCert(s.Dir)
	if err != nil {
		return fmt.Errorf("certificate: %w", err)
	}
	s.CAs = pool
	passwd := fmt.Sprintf("%s:{PLAIN}%s\n", s.User, s.Password)
	if err := os.WriteFile(filepath.Join(s.Dir, "passwd"), []byte(passwd), 0o600); err != nil {
		return err
	}
	mail := filepath.Join(s.Dir, "mail")
	if err := os.Mkdir(mail, 0o700); err != nil {
		return err
	}
	u, err := mailUser()
	if err != nil {
		return err
	}
	if os.Geteuid() == 0 {
		// Dovecot's login and mail processes run as other users: let them
		// through the (0700) temporary folders and own the mail.
		for _, d := range []string{s.Dir, filepath.Dir(s.Dir)} {
			if err := os.Chmod(d, 0o711); err != nil {
				return err
			}
		}
		for _, p := range []string{mail, filepath.Join(s.Dir, "passwd")} {
			if err := os.Chown(p, u.uid, u.gid); err != nil {
				return err
			}
		}
	}
	s.conf = filepath.Join(s.Dir, "dovecot.conf")
	return os.WriteFile(s.conf, []byte(s.config(u)), 0o644)
}

// start runs dovecot -F and waits until both ports accept connections.
func (s *Server) start() error {
	cmd := exec.Command(s.bin, "-F", "-c", s.conf)
	out, err := os.OpenFile(filepath.Join(s.Dir, "dovecot.out"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start dovecot: %w", err)
	}
	s.cmd, s.exited = cmd, make(chan struct{})
	go func(exited chan struct{}) {
		cmd.Wait()
		close(exited)
	}(s.exited)
	deadline := time.Now().Add(15 * time.Second)
	for _, addr := range []string{s.IMAPSAddr, s.IMAPAddr} {
		for {
			c, err := net.DialTimeout("tcp", addr, time.Second)
			if err == nil {
				c.Close()
				break
			}
			select {
			case <-s.exited:
				return fmt.Errorf("dovecot exited at start:\n%s", s.Logs())
			default:
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s not listening after 15s:\n%s", addr, s.Logs())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return nil
}

// Stop stops Dovecot (SIGTERM to its PID, SIGKILL after 10 s), waits for
// it to exit, then ends the processes it had started (its mail processes
// may otherwise outlive it and keep serving their clients), by their PIDs.
// Stopping a stopped server does nothing.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	children := childPIDs(s.cmd.Process.Pid)
	select {
	case <-s.exited:
	default:
		s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(10 * time.Second):
			s.cmd.Process.Kill()
			<-s.exited
		}
	}
	s.cmd = nil
	for _, pid := range children {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// childPIDs returns the processes whose parent is pid, from /proc.
func childPIDs(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold spaces and parentheses.
		i := strings.LastIndexByte(string(stat), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, child)
		}
	}
	return out
}

// Restart stops Dovecot and starts it again on the same ports and mail.
// It reports a failure with t.Errorf, so it may be called from any
// goroutine (a handler, say), and returns whether Dovecot runs again.
func (s *Server) Restart(t testing.TB) bool {
	t.Helper()
	s.Stop()
	if err := s.start(); err != nil {
		t.Errorf("dovecottest: restart: %v", err)
		return false
	}
	return true
}

// PID returns the running Dovecot master's process id, or 0.
func (s *Server) PID() int {
	if s.cmd == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// URL returns the mailbox URL for folder: imaps:// when implicitTLS, else
// imap:// (STARTTLS).
func (s *Server) URL(implicitTLS bool, folder string) string {
	u := url.URL{Scheme: "imap", User: url.UserPassword(s.User, s.Password), Host: s.IMAPAddr, Path: "/" + folder}
	if implicitTLS {
		u.Scheme, u.Host = "imaps", s.IMAPSAddr
	}
	return u.String()
}

// TLSConfig returns a client configuration trusting the server.
func (s *Server) TLSConfig() *tls.Config {
	return &tls.Config{RootCAs: s.CAs, ServerName: "127.0.0.1"}
}

// Logs returns Dovecot's log file and its standard output, for failures.
func (s *Server) Logs() string {
	var b strings.Builder
	for _, f := range []string{"dovecot.log", "dovecot.out"} {
		data, _ := os.ReadFile(filepath.Join(s.Dir, f))
		b.Write(data)
	}
	return b.String()
}

// freeAddrs returns two distinct loopback addresses whose ports were free
// a moment ago: both listeners are open at once, so the kernel cannot hand
// out the same port twice (Dovecot refuses a duplicate listener).
func freeAddrs(t testing.TB) (string, string) {
	t.Helper()
	var addrs [2]string
	for i := range addrs {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		addrs[i] = ln.Addr().String()
	}
	return addrs[0], addrs[1]
}

// account is the system user owning the mail.
type account struct {
	name     string
	uid, gid int
	internal string // Dovecot's internal user and group, and login user
	group    string
	login    string
}

// mailUser picks the system users: as root, Debian's dovecot and dovenull;
// otherwise the current user for everything.
func mailUser() (account, error) {
	if os.Geteuid() == 0 {
		u, err := user.Lookup("dovecot")
		if err != nil {
			return account{}, errors.New("user dovecot missing (Debian package dovecot-core creates it)")
		}
		if _, err := user.Lookup("dovenull"); err != nil {
			return account{}, errors.New("user dovenull missing (Debian package dovecot-core creates it)")
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		return account{name: u.Username, uid: uid, gid: gid, internal: "dovecot", group: "dovecot", login: "dovenull"}, nil
	}
	u, err := user.Current()
	if err != nil {
		return account{}, err
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	group := u.Gid
	if g, err := user.LookupGroupId(u.Gid); err == nil {
		group = g.Name
	}
	return account{name: u.Username, uid: uid, gid: gid, internal: u.Username, group: group, login: u.Username}, nil
}
