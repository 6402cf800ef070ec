package smtptest_test

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/testkit/smtptest"
	"github.com/feedmail/feedmail/internal/testkit/testutil"
)

// TestClientGoneBeforeTheReply: a client that hangs up after its final dot
// while a slow server holds the reply (a sender killed mid-send) never
// learns the outcome. The server takes the message as a real one would,
// counts it as ClientGone and observes it with the reply lost, so that a
// fault run counts the resend inside SMTP's duplicate window; a client
// that waits gets its 250 as before.
func TestClientGoneBeforeTheReply(t *testing.T) {
	for _, hangUp := range []bool{true, false} {
		var obs observed
		s := start(t, smtptest.Options{Faults: smtptest.Faults{Slow: 1, SlowBy: 300 * time.Millisecond}, Observe: obs.add})
		c, err := net.Dial("tcp", s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(c)
		say := func(line, want string) {
			t.Helper()
			if line != "" {
				if _, err := c.Write([]byte(line + "\r\n")); err != nil {
					t.Fatal(err)
				}
			}
			for {
				got, err := r.ReadString('\n')
				if err != nil {
					t.Fatalf("after %q: %v", line, err)
				}
				if !strings.HasPrefix(got, want) {
					t.Fatalf("after %q: %q, want %s", line, got, want)
				}
				if len(got) < 4 || got[3] != '-' {
					return
				}
			}
		}
		say("", "220")
		say("EHLO client.example", "250")
		say("MAIL FROM:<a@example.com>", "250")
		say("RCPT TO:<b@example.com>", "250")
		say("DATA", "354")
		if _, err := c.Write([]byte("Subject: hi\r\n\r\nbody\r\n.\r\n")); err != nil {
			t.Fatal(err)
		}
		if hangUp {
			_ = c.Close()
			testutil.Eventually(t, 10*time.Second, func() bool { return len(obs.list()) == 1 }, "the message was never observed")
		} else {
			say("", "250")
			_ = c.Close()
		}
		got, fc := obs.list(), s.FaultCounts()
		wantGone := int64(0)
		if hangUp {
			wantGone = 1
		}
		if len(got) != 1 || got[0].DroppedAfterDot != hangUp || fc.ClientGone != wantGone || fc.Slowed != 1 {
			t.Errorf("hang-up %v: observed %d (reply lost %v), counts %+v; want 1 observed, reply lost %v, ClientGone %d",
				hangUp, len(got), len(got) == 1 && got[0].DroppedAfterDot, fc, hangUp, wantGone)
		}
	}
}
