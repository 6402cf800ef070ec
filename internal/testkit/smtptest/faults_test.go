package smtptest_test

import (
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
	"github.com/wneessen/go-mail"

	"github.com/feedmail/feedmail/internal/testkit/smtptest"
)

// observed collects what Observe is given.
type observed struct {
	mu  sync.Mutex
	got []smtptest.Received
}

func (o *observed) add(r smtptest.Received) {
	o.mu.Lock()
	o.got = append(o.got, r)
	o.mu.Unlock()
}

func (o *observed) list() []smtptest.Received {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]smtptest.Received(nil), o.got...)
}

// sendGoMail sends one message with go-mail, as feedmail's mailer does.
func sendGoMail(t *testing.T, s *smtptest.Server, rcpt string) error {
	t.Helper()
	host, portStr, _ := net.SplitHostPort(s.Addr())
	port, _ := strconv.Atoi(portStr)
	c, err := mail.NewClient(host, mail.WithPort(port), mail.WithTLSPolicy(mail.NoTLS), mail.WithTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	m := mail.NewMsg()
	if err := m.From("a@example.com"); err != nil {
		t.Fatal(err)
	}
	if err := m.To(rcpt); err != nil {
		t.Fatal(err)
	}
	m.SetMessageIDWithValue("fault-test@example.com")
	m.Subject("hello")
	m.SetBodyString(mail.TypeTextPlain, "the body of the message")
	return c.DialAndSend(m)
}

// TestFaultsSeenByClient: each fault, forced with share 1, is seen by a
// go-mail client as it should be, counted, and observed (or not).
func TestFaultsSeenByClient(t *testing.T) {
	tests := []struct {
		name        string
		faults      smtptest.Faults
		discard     bool
		wantCode    int  // SMTP code in the client's error; 0: none
		wantConnErr bool // the client sees the connection end after DATA
		wantCounts  smtptest.FaultCounts
		wantAccept  int
		wantDropped bool // Observe saw DroppedAfterDot
		wantObserve int
		minElapsed  time.Duration
	}{
		{name: "none", wantAccept: 1, wantObserve: 1},
		{name: "none discard", discard: true, wantAccept: 1, wantObserve: 1},
		{name: "drop after dot", faults: smtptest.Faults{DropAfterDot: 1}, wantConnErr: true,
			wantCounts: smtptest.FaultCounts{DroppedAfterDot: 1}, wantDropped: true, wantObserve: 1},
		{name: "drop after dot discard", faults: smtptest.Faults{DropAfterDot: 1}, discard: true, wantConnErr: true,
			wantCounts: smtptest.FaultCounts{DroppedAfterDot: 1}, wantDropped: true, wantObserve: 1},
		{name: "451", faults: smtptest.Faults{TempFail: 1}, wantCode: 451,
			wantCounts: smtptest.FaultCounts{TempFailed: 1}},
		{name: "slow", faults: smtptest.Faults{Slow: 1, SlowBy: 300 * time.Millisecond},
			wantCounts: smtptest.FaultCounts{Slowed: 1}, wantAccept: 1, wantObserve: 1, minElapsed: 300 * time.Millisecond},
		{name: "slow 451", faults: smtptest.Faults{Slow: 1, TempFail: 1, SlowBy: 200 * time.Millisecond}, wantCode: 451,
			wantCounts: smtptest.FaultCounts{TempFailed: 1, Slowed: 1}, minElapsed: 200 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var obs observed
			s := start(t, smtptest.Options{Faults: tc.faults, Discard: tc.discard, Observe: obs.add})
			began := time.Now()
			err := sendGoMail(t, s, "b@example.com")
			elapsed := time.Since(began)
			checkClientErr(t, err, tc.wantCode, tc.wantConnErr)
			if elapsed < tc.minElapsed {
				t.Errorf("send took %s, want at least %s", elapsed, tc.minElapsed)
			}
			if got := s.FaultCounts(); got != tc.wantCounts {
				t.Errorf("FaultCounts = %+v, want %+v", got, tc.wantCounts)
			}
			if s.Count() != tc.wantAccept {
				t.Errorf("Count = %d, want %d", s.Count(), tc.wantAccept)
			}
			got := obs.list()
			if len(got) != tc.wantObserve {
				t.Fatalf("Observe called %d times, want %d", len(got), tc.wantObserve)
			}
			for _, r := range got {
				if r.DroppedAfterDot != tc.wantDropped || r.From != "a@example.com" ||
					len(r.To) != 1 || r.To[0] != "b@example.com" || r.At.Before(began) {
					t.Errorf("observed from %q to %q at %v (began %v), dropped %v; want dropped %v",
						r.From, r.To, r.At, began, r.DroppedAfterDot, tc.wantDropped)
				}
				if !strings.Contains(string(r.Data), "Message-ID: <fault-test@example.com>") ||
					!strings.Contains(string(r.Data), "the body of the message") {
					t.Errorf("observed data %q", r.Data)
				}
			}
		})
	}
}

// checkClientErr checks a go-mail send error against the expected reply
// code or connection error.
func checkClientErr(t *testing.T, err error, code int, connErr bool) {
	t.Helper()
	if code == 0 && !connErr {
		if err != nil {
			t.Fatalf("send: %v", err)
		}
		return
	}
	var se *mail.SendError
	if !errors.As(err, &se) {
		t.Fatalf("send error %v (%T), want a *mail.SendError", err, err)
	}
	if se.Reason != mail.ErrSMTPDataClose {
		t.Errorf("reason %v, want the end of DATA (%v)", se.Reason, mail.ErrSMTPDataClose)
	}
	if connErr && (se.ErrorCode() != 0 || se.IsTemp()) {
		t.Errorf("code %d temp %v (%v), want a connection error without a reply", se.ErrorCode(), se.IsTemp(), err)
	}
	if code != 0 && (se.ErrorCode() != code || !se.IsTemp()) {
		t.Errorf("code %d temp %v (%v), want temporary %d", se.ErrorCode(), se.IsTemp(), err, code)
	}
}

// TestFaultShares: over many messages on reused connections the client's
// outcomes, the counts and Observe agree, and each share is near its
// setting.
func TestFaultShares(t *testing.T) {
	const n = 600
	var obs observed
	s := start(t, smtptest.Options{Discard: true, Observe: obs.add,
		Faults: smtptest.Faults{Seed: 7, DropAfterDot: 0.1, TempFail: 0.2, Slow: 0.05, SlowBy: time.Millisecond}})
	var ok, dropped, temp int
	var c *smtp.Client
	for i := range n {
		if c == nil {
			var err error
			if c, err = smtp.Dial(s.Addr()); err != nil {
				t.Fatal(err)
			}
		}
		err := c.SendMail("a@example.com", []string{"b@example.com"}, strings.NewReader(body))
		switch code := smtpCode(err); {
		case err == nil:
			ok++
		case code == 451:
			temp++
			if err := c.Reset(); err != nil {
				t.Fatalf("message %d: RSET after 451: %v", i, err)
			}
		case code == 0:
			dropped++
			_ = c.Close()
			c = nil
		default:
			t.Fatalf("message %d: %v", i, err)
		}
	}
	if c != nil {
		_ = c.Close()
	}
	fc := s.FaultCounts()
	if int(fc.DroppedAfterDot) != dropped || int(fc.TempFailed) != temp || s.Count() != ok {
		t.Errorf("client saw %d ok, %d dropped, %d 451; server: Count %d, %+v", ok, dropped, temp, s.Count(), fc)
	}
	var obsDropped int
	for _, r := range obs.list() {
		if r.DroppedAfterDot {
			obsDropped++
		}
	}
	if got := len(obs.list()); got != ok+dropped || obsDropped != dropped {
		t.Errorf("Observe: %d messages (%d dropped), want %d (%d dropped)", got, obsDropped, ok+dropped, dropped)
	}
	near := func(name string, got int, share float64) {
		if want := share * n; float64(got) < want*0.5 || float64(got) > want*1.5 {
			t.Errorf("%s: %d of %d, want about %.0f", name, got, n, want)
		}
	}
	near("dropped", dropped, 0.1)
	near("451", temp, 0.2)
	near("slowed", int(fc.Slowed), 0.05)
}

func TestFaultsOutOfRange(t *testing.T) {
	for _, f := range []smtptest.Faults{
		{DropAfterDot: -0.1},
		{TempFail: 1.5},
		{DropAfterDot: 0.6, TempFail: 0.6},
		{Slow: 0.1, SlowBy: -time.Second},
	} {
		if s, err := smtptest.Start(smtptest.Options{Faults: f}); err == nil {
			_ = s.Close()
			t.Errorf("Start accepted %+v", f)
		}
	}
}
