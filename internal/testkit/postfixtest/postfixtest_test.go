package postfixtest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/testkit/smtptest"
)

// message returns a small RFC 5322 message with the given Message-ID.
func message(from, to, msgID string) []byte {
	return []byte(strings.Join([]string{
		"From: Feed <" + from + ">",
		"To: <" + to + ">",
		"Subject: A post",
		"Date: " + time.Now().Format(time.RFC1123Z),
		"Message-ID: " + msgID,
		"MIME-Version: 1.0",
		"Content-Type: text/plain; charset=utf-8",
		"",
		"Hello.",
		"",
	}, "\r\n"))
}

// waitDSN waits for the capture server to receive a message for rcpt whose
// delivery-status has Action action, and returns it parsed.
func waitDSN(t *testing.T, srv *smtptest.Server, rcpt, action string, within time.Duration) (*dsn, smtptest.Message) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	for n := 1; ; n++ {
		for _, m := range srv.Messages() {
			if !slices.Contains(m.To, rcpt) {
				continue
			}
			d, err := parseDSN(m.Raw)
			if err != nil {
				t.Fatalf("message to %s is no DSN: %v\n%s", rcpt, err, m.Raw)
			}
			for _, r := range d.Recipients {
				if r.Get("Action") == action {
					return d, m
				}
			}
		}
		if err := srv.WaitFor(ctx, srv.Count()+1); err != nil {
			t.Fatalf("no %q DSN for %s within %s: %v", action, rcpt, within, err)
		}
	}
}

// checkDSN asserts the fields every DSN of these tests must carry.
func checkDSN(t *testing.T, d *dsn, m smtptest.Message, verp, dead, status, action, msgID string) {
	t.Helper()
	if m.From != "" {
		t.Errorf("DSN envelope sender %q, want the null sender", m.From)
	}
	if !slices.Equal(m.To, []string{verp}) {
		t.Errorf("DSN envelope recipients %v, want [%s]", m.To, verp)
	}
	if d.ReportType != "delivery-status" {
		t.Errorf("report-type %q", d.ReportType)
	}
	if got := d.PerMessage.Get("Reporting-MTA"); !strings.Contains(got, "mta.postfixtest.localhost") {
		t.Errorf("Reporting-MTA %q", got)
	}
	if len(d.Recipients) != 1 {
		t.Fatalf("%d recipient blocks, want 1: %v", len(d.Recipients), d.Recipients)
	}
	r := d.Recipients[0]
	if got := addressField(r.Get("Final-Recipient")); got != dead {
		t.Errorf("Final-Recipient %q, want %s", got, dead)
	}
	if got := r.Get("Action"); got != action {
		t.Errorf("Action %q, want %s", got, action)
	}
	if got := r.Get("Status"); got != status {
		t.Errorf("Status %q, want %s", got, status)
	}
	if got := r.Get("Remote-MTA"); !strings.Contains(got, "127.0.0.1") {
		t.Errorf("Remote-MTA %q, want the dead domain's server", got)
	}
	if got := r.Get("Diagnostic-Code"); !strings.HasPrefix(got, "smtp;") || !strings.Contains(got, status) {
		t.Errorf("Diagnostic-Code %q, want the server's reply with %s", got, status)
	}
	if d.Returned == nil {
		t.Fatal("the original message (or its header) did not come back")
	}
	if got := d.Returned.Get("Message-ID"); got != msgID {
		t.Errorf("returned Message-ID %q, want %s", got, msgID)
	}
}

func TestHardBouncesReachTheVERPAddress(t *testing.T) {
	t.Parallel()
	p := Start(t, Options{RejectWith: map[string]string{
		"full@dead.test":   "552 5.2.2 Mailbox full",
		"policy@dead.test": "554 5.7.1 Message rejected as spam",
	}})
	t.Logf("postfix %s at %s", p.Version(), p.SMTPAddr())
	cases := []struct {
		name, dead, status string
	}{
		{"unknown user", "nobody@dead.test", "5.1.1"},
		{"mailbox full", "full@dead.test", "5.2.2"},
		{"policy", "policy@dead.test", "5.7.1"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			verp := fmt.Sprintf("bounces+tok%d@bounce.test", i)
			msgID := fmt.Sprintf("<hard.%d.%d@feedmail.test>", i, time.Now().UnixNano())
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			sent := time.Now()
			if err := p.Send(ctx, verp, []string{tc.dead}, message("feed@mail.example.org", tc.dead, msgID)); err != nil {
				t.Fatalf("Postfix refused at SMTP, want accepted then bounced: %v", err)
			}
			d, m := waitDSN(t, p.Bounces(), verp, "failed", 20*time.Second)
			t.Logf("DSN after %s", time.Since(sent).Round(time.Millisecond))
			checkDSN(t, d, m, verp, tc.dead, tc.status, "failed", msgID)
			if d.ReturnedType != "message/rfc822" {
				t.Errorf("returned part %s, want the whole message/rfc822", d.ReturnedType)
			}
			if got := d.Header.Get("Subject"); !strings.Contains(got, "Undelivered") {
				t.Errorf("Subject %q", got)
			}
		})
	}
}

func TestSoftFailureWarnsThenBounces(t *testing.T) {
	t.Parallel()
	p := Start(t, Options{
		RejectWith:    map[string]string{"slow@dead.test": "450 4.2.1 Mailbox busy, try later"},
		DelayWarning:  time.Second,
		QueueLifetime: 3 * time.Second,
	})
	const verp, dead = "bounces+soft@bounce.test", "slow@dead.test"
	msgID := fmt.Sprintf("<soft.%d@feedmail.test>", time.Now().UnixNano())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sent := time.Now()
	if err := p.Send(ctx, verp, []string{dead}, message("feed@mail.example.org", dead, msgID)); err != nil {
		t.Fatal(err)
	}
	d, m := waitDSN(t, p.Bounces(), verp, "delayed", 30*time.Second)
	t.Logf("delayed DSN after %s", time.Since(sent).Round(time.Millisecond))
	checkDSN(t, d, m, verp, dead, "4.2.1", "delayed", msgID)
	if got := d.Header.Get("Subject"); !strings.Contains(got, "Delayed Mail") {
		t.Errorf("Subject %q", got)
	}

	d, m = waitDSN(t, p.Bounces(), verp, "failed", 30*time.Second)
	t.Logf("final DSN after %s", time.Since(sent).Round(time.Millisecond))
	checkDSN(t, d, m, verp, dead, "4.2.1", "failed", msgID)
}

func TestDSNNamesOnlyTheFailedRecipient(t *testing.T) {
	t.Parallel()
	p := Start(t, Options{RejectWith: map[string]string{"alive@dead.test": "250 OK"}})
	const verp = "bounces+mixed@bounce.test"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	msgID := "<mixed@feedmail.test>"
	if err := p.Send(ctx, verp, []string{"alive@dead.test", "nobody@dead.test"},
		message("feed@mail.example.org", "alive@dead.test", msgID)); err != nil {
		t.Fatal(err)
	}
	d, m := waitDSN(t, p.Bounces(), verp, "failed", 20*time.Second)
	checkDSN(t, d, m, verp, "nobody@dead.test", "5.1.1", "failed", msgID)
	// Postfix delivers to the accepted recipient in the same session that
	// the other one is refused in, before it writes the DSN.
	if n := p.remote.count(); n != 1 {
		t.Errorf("dead domain's server accepted %d messages, want 1", n)
	}
}

func TestLocalUnknownUserBounces(t *testing.T) {
	t.Parallel()
	p := Start(t, Options{})
	const verp, dead = "bounces+local@bounce.test", "no-such-user@nouser.test"
	msgID := "<local@feedmail.test>"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Send(ctx, verp, []string{dead}, message("feed@mail.example.org", dead, msgID)); err != nil {
		t.Fatalf("Postfix refused at SMTP, want accepted then bounced: %v", err)
	}
	d, m := waitDSN(t, p.Bounces(), verp, "failed", 20*time.Second)
	if !slices.Equal(m.To, []string{verp}) || m.From != "" {
		t.Errorf("DSN envelope %q -> %v", m.From, m.To)
	}
	if len(d.Recipients) != 1 {
		t.Fatalf("%d recipient blocks", len(d.Recipients))
	}
	r := d.Recipients[0]
	if got := addressField(r.Get("Final-Recipient")); got != dead {
		t.Errorf("Final-Recipient %q", got)
	}
	if got := r.Get("Status"); got != "5.1.1" {
		t.Errorf("Status %q, want 5.1.1", got)
	}
	if got := r.Get("Diagnostic-Code"); !strings.HasPrefix(got, "X-Postfix;") || !strings.Contains(got, "unknown user") {
		t.Errorf("Diagnostic-Code %q, want Postfix's own unknown user", got)
	}
	if got := r.Get("Remote-MTA"); got != "" {
		t.Errorf("Remote-MTA %q, want none: Postfix was the last hop", got)
	}
	if d.Returned == nil || d.Returned.Get("Message-ID") != msgID {
		t.Errorf("original not returned with Message-ID %s", msgID)
	}
}
