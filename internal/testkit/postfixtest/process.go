package postfixtest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// startTimeout bounds the integrity check plus the wait for the greeting.
const startTimeout = 30 * time.Second

// start writes the configuration for c, starts the master daemon in the
// foreground and waits until the SMTP listener greets.
func (p *Postfix) start(postfixBin, masterBin string, c config) error {
	conf := filepath.Join(p.dir, "conf")
	if err := os.WriteFile(filepath.Join(conf, "main.cf"), []byte(mainCF(c)), 0o644); err != nil {
		return fmt.Errorf("main.cf: %w", err)
	}
	if err := os.WriteFile(filepath.Join(conf, "master.cf"), []byte(masterCF(c.SMTPPort)), 0o644); err != nil {
		return fmt.Errorf("master.cf: %w", err)
	}
	// Postfix waits, in steps of 300ms, until a configuration file it reads
	// is older than a second (a file being edited): age them instead.
	past := time.Now().Add(-time.Minute)
	for _, f := range []string{"main.cf", "master.cf"} {
		if err := os.Chtimes(filepath.Join(conf, f), past, past); err != nil {
			return fmt.Errorf("postfixtest: %w", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if out, err := exec.CommandContext(ctx, filepath.Join(filepath.Dir(postfixBin), "postconf"), "-d", "-h", "mail_version").Output(); err == nil {
		p.version = strings.TrimSpace(string(out))
	}
	logf, err := os.Create(filepath.Join(p.dir, "master.out"))
	if err != nil {
		return fmt.Errorf("master output: %w", err)
	}
	defer logf.Close()
	// -d keeps the master daemon in the foreground as our child ("postfix
	// start-fg" does so only as PID 1); its own
	// process group lets stop reach daemons it leaves behind.
	cmd := exec.Command(masterBin, "-c", conf, "-d")
	cmd.Dir = p.dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start master: %w", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	p.cmd, p.exited = cmd, exited
	p.smtpAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(c.SMTPPort))
	if err := waitGreeting(ctx, p.smtpAddr, exited); err != nil {
		_ = p.stop()
		return err
	}
	return nil
}

// waitGreeting dials addr until it answers with a 220 greeting, the master
// daemon exits, or ctx ends.
func waitGreeting(ctx context.Context, addr string, exited <-chan struct{}) error {
	for {
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
			line, rerr := bufio.NewReader(conn).ReadString('\n')
			_, _ = conn.Write([]byte("QUIT\r\n"))
			_ = conn.Close()
			if rerr == nil && strings.HasPrefix(line, "220") {
				return nil
			}
			err = fmt.Errorf("greeting %q: %v", line, rerr)
		}
		select {
		case <-exited:
			return fmt.Errorf("master daemon exited before %s answered: %v", addr, err)
		case <-ctx.Done():
			return fmt.Errorf("%s never greeted: %v: %w", addr, err, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// stop asks the master daemon to terminate (it stops its children), waits
// for it, and kills its process group if it does not go in time.
func (p *Postfix) stop() error {
	if p.cmd == nil || p.cmd.Process == nil {
		return nil
	}
	pid := p.cmd.Process.Pid
	p.cmd = nil
	select {
	case <-p.exited:
		return nil
	default:
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stop master %d: %w", pid, err)
	}
	select {
	case <-p.exited:
		return nil
	case <-time.After(10 * time.Second):
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	<-p.exited
	return fmt.Errorf("master %d ignored SIGTERM for 10s; killed its process group", pid)
}
