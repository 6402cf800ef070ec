// Package postfixtest runs Debian's Postfix for a test, so that the test
// gets the delivery status notifications (DSNs) a real MTA writes.
//
// Start builds a private instance in the test's temporary folder (its own
// main.cf and master.cf, queue and data directories, log file), starts its
// master daemon in the foreground as a child process listening on a free
// 127.0.0.1 port, and stops it at the test's cleanup. The instance:
//
//   - accepts mail over SMTP from loopback at SMTPAddr, for any domain;
//   - relays mail for Options.DeadDomain ("dead.test") to an in-process
//     server playing that domain's MX, which answers RCPT with the reply
//     Options.RejectWith names for the address, and "550 5.1.1 ... User
//     unknown" for every other one. The message is accepted first and
//     bounced afterwards, as on the internet: a 5xx reply makes Postfix
//     return a DSN at once, a 4xx makes it retry every second and, with
//     Options.DelayWarning, send a "delayed" DSN, then a failure one when
//     Options.QueueLifetime ends;
//   - relays mail for Options.BounceDomain ("bounce.test") to
//     Options.BounceTo, or, when that is empty, to a capture server
//     (internal/testkit/smtptest) that Bounces returns. A test sends with
//     envelope sender "bounces+TOKEN@bounce.test" and waits there for the
//     DSN, raw bytes and envelope recipient;
//   - is the final destination of Options.LocalDomain ("nouser.test"):
//     it accepts any address there, then local(8) bounces it as "unknown
//     user" (5.1.1), the DSN of a Postfix that is the recipient's own
//     server. It reads no aliases or .forward files; an address whose
//     local part is a system user (root, nobody) is delivered to a
//     mailbox under Dir()/mail instead;
//   - sends nothing to any other domain.
//
// Postfix needs root and its users (postfix, postdrop), which the Debian
// package creates. Without them the test is skipped, and fails under
// CI=true.
//
// Test infrastructure: never linked into cmd/feedmail. It must not touch
// the system's Postfix (/etc/postfix, port 25, the system queue).
package postfixtest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/feedmail/feedmail/internal/testkit/smtptest"
	"github.com/feedmail/feedmail/internal/testkit/testutil"
)

// Options configure an instance. Every field is optional.
type Options struct {
	// BounceDomain is the domain of the envelope senders whose DSNs the
	// test wants back. Default "bounce.test".
	BounceDomain string
	// BounceTo is host:port of the SMTP server mail for BounceDomain is
	// relayed to. Default: a capture server started with the instance.
	BounceTo string
	// DeadDomain is the recipients' domain whose MX rejects them.
	// Default "dead.test".
	DeadDomain string
	// LocalDomain is the domain local(8) bounces. Default "nouser.test".
	LocalDomain string
	// RejectWith maps a recipient address (any case) to the reply its MX
	// gives at RCPT, e.g. "552 5.2.2 Mailbox full" or "450 4.2.0 Try
	// later"; a 2xx reply accepts the message. Unlisted addresses of
	// DeadDomain get "550 5.1.1".
	RejectWith map[string]string
	// DelayWarning, when positive, makes Postfix send a "delayed" DSN for
	// mail still deferred after this long (whole seconds, rounded up).
	// Postfix sends it at the first deferral that finds it due before the
	// next queue run, so with one second it comes at the first one.
	DelayWarning time.Duration
	// QueueLifetime is how long deferred mail is retried before Postfix
	// gives up and bounces it. Default one hour.
	QueueLifetime time.Duration
}

// Postfix is a running instance.
type Postfix struct {
	dir      string
	smtpAddr string
	version  string
	bounces  *smtptest.Server
	remote   *remote
	cmd      *exec.Cmd
	exited   chan struct{}
}

// binaries finds the postfix command and the master daemon, or says what
// is missing.
func binaries() (postfix, master string, err error) {
	postfix, err = exec.LookPath("postfix")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/postfix"); serr != nil {
			return "", "", fmt.Errorf("postfix is not installed (Debian package postfix)")
		}
		postfix = "/usr/sbin/postfix"
	}
	postconf := filepath.Join(filepath.Dir(postfix), "postconf")
	out, err := exec.Command(postconf, "-d", "-h", "daemon_directory").Output()
	if err != nil {
		return "", "", fmt.Errorf("postconf -d daemon_directory: %w", err)
	}
	master = filepath.Join(strings.TrimSpace(string(out)), "master")
	if _, err := os.Stat(master); err != nil {
		return "", "", fmt.Errorf("postfix master daemon: %w", err)
	}
	if os.Geteuid() != 0 {
		return "", "", fmt.Errorf("postfix needs root to start")
	}
	if _, err := user.Lookup("postfix"); err != nil {
		return "", "", fmt.Errorf("user postfix: %w", err)
	}
	if _, err := user.LookupGroup("postdrop"); err != nil {
		return "", "", fmt.Errorf("group postdrop: %w", err)
	}
	return postfix, master, nil
}

// Start makes and starts an instance for t, skipping t (failing it under
// CI=true) when Postfix cannot run here. The instance, and the servers it
// relays to, stop at t's cleanup; the Postfix log is printed when t failed.
func Start(t testing.TB, opts Options) *Postfix {
	t.Helper()
	postfixBin, masterBin, err := binaries()
	if err != nil {
		testutil.SkipOrFail(t, err.Error())
	}
	if opts.BounceDomain == "" {
		opts.BounceDomain = "bounce.test"
	}
	if opts.DeadDomain == "" {
		opts.DeadDomain = "dead.test"
	}
	if opts.LocalDomain == "" {
		opts.LocalDomain = "nouser.test"
	}
	if opts.QueueLifetime <= 0 {
		opts.QueueLifetime = time.Hour
	}
	replies, err := replyTable(opts.RejectWith)
	if err != nil {
		t.Fatal(err)
	}
	p := &Postfix{dir: t.TempDir()}
	if opts.BounceTo == "" {
		p.bounces = smtptest.StartT(t, smtptest.Options{})
		opts.BounceTo = p.bounces.Addr()
	}
	p.remote, err = startRemote(replies)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.remote.close(); err != nil {
			t.Errorf("postfixtest: dead domain server: %v", err)
		}
	})
	if err := p.prepare(); err != nil {
		t.Fatal(err)
	}
	// The port is free when picked but could be taken before master binds
	// it: try a few.
	for attempt := 1; ; attempt++ {
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		c := config{
			Dir: p.dir, SMTPPort: port,
			BounceDomain: opts.BounceDomain, BounceTo: opts.BounceTo,
			DeadDomain: opts.DeadDomain, DeadTo: p.remote.addr(), LocalDomain: opts.LocalDomain,
			DelayWarning: opts.DelayWarning, QueueLifetime: opts.QueueLifetime,
		}
		err = p.start(postfixBin, masterBin, c)
		if err == nil {
			break
		}
		if attempt == 3 {
			t.Fatalf("postfixtest: %v\n%s", err, p.Log())
		}
	}
	t.Cleanup(func() {
		if err := p.stop(); err != nil {
			t.Errorf("postfixtest: %v", err)
		}
		if t.Failed() {
			t.Logf("postfix log:\n%s", p.Log())
		}
	})
	return p
}

// freePort returns a loopback port nobody listened on a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("postfixtest: free port: %w", err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	return port, ln.Close()
}

// SMTPAddr returns host:port of the instance's SMTP listener.
func (p *Postfix) SMTPAddr() string { return p.smtpAddr }

// URL returns the listener as an smtp:// URL without TLS, the form of
// FEEDMAIL_SMTP_URL.
func (p *Postfix) URL() string { return "smtp://" + p.smtpAddr + "?tls=none" }

// Bounces returns the capture server that receives mail for the bounce
// domain, or nil when Options.BounceTo named another one.
func (p *Postfix) Bounces() *smtptest.Server { return p.bounces }

// Version returns Postfix's mail_version, e.g. "3.7.11".
func (p *Postfix) Version() string { return p.version }

// Dir returns the instance's folder (conf, queue, data, maillog).
func (p *Postfix) Dir() string { return p.dir }

// Log returns the instance's log so far ("" when there is none yet).
func (p *Postfix) Log() string {
	b, _ := os.ReadFile(filepath.Join(p.dir, "maillog"))
	out, _ := os.ReadFile(filepath.Join(p.dir, "master.out"))
	return string(b) + string(out)
}

// Send hands one message to the instance over SMTP with the given envelope
// and returns the instance's error, if it refused it.
func (p *Postfix) Send(ctx context.Context, from string, to []string, raw []byte) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", p.smtpAddr)
	if err != nil {
		return fmt.Errorf("postfixtest: dial: %w", err)
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	c := smtp.NewClient(conn)
	defer c.Close()
	if err := c.Hello("client.postfixtest.localhost"); err != nil {
		return fmt.Errorf("postfixtest: EHLO: %w", err)
	}
	if err := c.SendMail(from, to, bytes.NewReader(raw)); err != nil {
		return fmt.Errorf("postfixtest: send: %w", err)
	}
	if err := c.Quit(); err != nil {
		return fmt.Errorf("postfixtest: QUIT: %w", err)
	}
	return nil
}
