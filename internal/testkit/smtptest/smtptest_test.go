package smtptest_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/feedmail/feedmail/internal/testkit/smtptest"
	"github.com/feedmail/feedmail/internal/testkit/testutil"
)

const body = "From: a@example.com\r\nTo: b@example.com\r\nSubject: hello\r\nMessage-ID: <1@example.com>\r\n\r\nbody\r\n"

func start(t *testing.T, opts smtptest.Options) *smtptest.Server {
	t.Helper()
	s, err := smtptest.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func dial(t *testing.T, s *smtptest.Server) *smtp.Client {
	t.Helper()
	c, err := smtp.Dial(s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// smtpCode returns the reply code of a go-smtp client error, 0 if none.
func smtpCode(err error) int {
	var se *smtp.SMTPError
	if errors.As(err, &se) {
		return se.Code
	}
	return 0
}

func TestAcceptAndRecord(t *testing.T) {
	s := start(t, smtptest.Options{})
	if !strings.HasPrefix(s.URL(), "smtp://127.0.0.1:") || !strings.HasSuffix(s.URL(), "?tls=none") {
		t.Errorf("URL() = %q", s.URL())
	}
	c := dial(t, s)
	for range 3 {
		if err := c.SendMail("a@example.com", []string{"b@example.com"}, strings.NewReader(body)); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.WaitFor(ctx, 3); err != nil {
		t.Fatal(err)
	}
	msgs := s.Messages()
	if len(msgs) != 3 || s.Count() != 3 {
		t.Fatalf("got %d messages, Count %d", len(msgs), s.Count())
	}
	m := msgs[0]
	if m.From != "a@example.com" || len(m.To) != 1 || m.To[0] != "b@example.com" {
		t.Errorf("envelope = %q %q", m.From, m.To)
	}
	if got := m.Header.Get("Subject"); got != "hello" {
		t.Errorf("Subject = %q", got)
	}
	if !strings.Contains(string(m.Raw), "\r\n\r\nbody") {
		t.Errorf("raw = %q", m.Raw)
	}
	if s.Sessions() != 1 || m.Session != 1 {
		t.Errorf("Sessions = %d, message session = %d", s.Sessions(), m.Session)
	}
}

func TestRejections(t *testing.T) {
	s := start(t, smtptest.Options{TempFail: []string{"Later@example.com"}, PermFail: []string{"gone@example.com"}})
	c := dial(t, s)
	tests := []struct {
		rcpt string
		code int
	}{
		{"later@example.com", 450},
		{"gone@example.com", 550},
		{"ok@example.com", 0},
	}
	for _, tc := range tests {
		err := c.SendMail("a@example.com", []string{tc.rcpt}, strings.NewReader(body))
		if got := smtpCode(err); got != tc.code {
			t.Errorf("%s: code %d (%v), want %d", tc.rcpt, got, err, tc.code)
		}
		if err != nil {
			if err := c.Reset(); err != nil {
				t.Fatal(err)
			}
		}
	}
	st := s.Stats()
	if st.Accepted != 1 || st.Rejected != 2 || st.TempFails != 1 || st.PermFails != 1 {
		t.Errorf("stats = %+v", st)
	}
}

// TestRcptReply: a reply chosen per recipient, which can change while the
// server runs.
func TestRcptReply(t *testing.T) {
	var lifted atomic.Bool
	s := start(t, smtptest.Options{RcptReply: func(rcpt string) *smtptest.Reply {
		if strings.HasSuffix(rcpt, "@blocked.example") && !lifted.Load() {
			return &smtptest.Reply{Code: 554, Enhanced: "5.7.1", Message: "blocked using zen.spamhaus.org"}
		}
		return nil
	}})
	c := dial(t, s)
	err := c.SendMail("a@example.com", []string{"b@blocked.example"}, strings.NewReader(body))
	var se *smtp.SMTPError
	if !errors.As(err, &se) || se.Code != 554 || se.EnhancedCode != (smtp.EnhancedCode{5, 7, 1}) || !strings.Contains(se.Message, "spamhaus") {
		t.Fatalf("blocked recipient: %v", err)
	}
	if err := c.Reset(); err != nil {
		t.Fatal(err)
	}
	lifted.Store(true)
	if err := c.SendMail("a@example.com", []string{"b@blocked.example"}, strings.NewReader(body)); err != nil {
		t.Fatalf("after the block lifted: %v", err)
	}
	if st := s.Stats(); st.Refused != 1 || st.Rejected != 1 || st.Accepted != 1 {
		t.Errorf("stats = %+v", st)
	}
}

func TestReply421AfterN(t *testing.T) {
	s := start(t, smtptest.Options{Reply421After: 2})
	c := dial(t, s)
	for i := range 2 {
		if err := c.SendMail("a@example.com", []string{"b@example.com"}, strings.NewReader(body)); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
	}
	err := c.SendMail("a@example.com", []string{"b@example.com"}, strings.NewReader(body))
	if smtpCode(err) != 421 {
		t.Fatalf("third message: %v, want 421", err)
	}
	// The server hung up: the next command fails without a reply.
	if err := c.Noop(); err == nil {
		t.Error("connection still open after 421")
	}
	// A new session starts counting again.
	c2 := dial(t, s)
	if err := c2.SendMail("a@example.com", []string{"b@example.com"}, strings.NewReader(body)); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.Accepted != 3 || st.Replied421 != 1 || st.Sessions != 2 {
		t.Errorf("stats = %+v", st)
	}
}

func TestDropDuringData(t *testing.T) {
	s := start(t, smtptest.Options{DropDuringData: []string{"drop@example.com"}})
	c := dial(t, s)
	err := c.SendMail("a@example.com", []string{"drop@example.com"}, strings.NewReader(body+strings.Repeat("x", 4096)+"\r\n"))
	if err == nil || smtpCode(err) != 0 {
		t.Fatalf("err = %v, want a connection error", err)
	}
	if st := s.Stats(); st.Dropped != 1 || st.Accepted != 0 {
		t.Errorf("stats = %+v", st)
	}
}

func TestStallReleasedByClose(t *testing.T) {
	s, err := smtptest.Start(smtptest.Options{Stall: []string{"slow@example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := smtp.Dial(s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res := make(chan error, 1)
	go func() {
		res <- c.SendMail("a@example.com", []string{"slow@example.com"}, strings.NewReader(body))
	}()
	testutil.Eventually(t, 5*time.Second, func() bool { return s.Stats().Stalled == 1 }, "server never stalled")
	select {
	case err := <-res:
		t.Fatalf("send finished while it should stall: %v", err)
	default:
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	select {
	case err := <-res:
		if err == nil {
			t.Error("stalled send succeeded")
		}
	case <-ctx.Done():
		t.Fatal("Close did not release the stalled session")
	}
}

func TestAuthAndTLS(t *testing.T) {
	s := start(t, smtptest.Options{TLS: true, Username: "u", Password: "p@ss"})
	if !strings.Contains(s.URL(), "tls=starttls") || !strings.Contains(s.URL(), "u:p%40ss@") {
		t.Errorf("URL() = %q", s.URL())
	}
	c, err := smtp.DialStartTLS(s.Addr(), s.ClientTLSConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Mail("a@example.com", nil); smtpCode(err) != 502 {
		t.Errorf("MAIL before AUTH: %v, want 502", err)
	}
	if err := c.Auth(sasl.NewPlainClient("", "u", "wrong")); smtpCode(err) != 535 {
		t.Errorf("bad password: %v, want 535", err)
	}
	if err := c.Auth(sasl.NewPlainClient("", "u", "p@ss")); err != nil {
		t.Fatal(err)
	}
	if err := c.SendMail("a@example.com", []string{"b@example.com"}, strings.NewReader(body)); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.TLSConnectionState(); !ok {
		t.Error("not TLS")
	}
	if s.Count() != 1 {
		t.Errorf("Count = %d", s.Count())
	}
}

func TestWaitForContext(t *testing.T) {
	s := start(t, smtptest.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.WaitFor(ctx, 1); !errors.Is(err, context.Canceled) {
		t.Errorf("WaitFor = %v", err)
	}
}

func TestDiscard(t *testing.T) {
	s := start(t, smtptest.Options{Discard: true})
	c := dial(t, s)
	if err := c.SendMail("a@example.com", []string{"b@example.com"}, strings.NewReader(body)); err != nil {
		t.Fatal(err)
	}
	if s.Count() != 1 || len(s.Messages()) != 0 {
		t.Errorf("Count %d, kept %d", s.Count(), len(s.Messages()))
	}
	s.Reset()
	if s.Count() != 0 {
		t.Errorf("Count after Reset = %d", s.Count())
	}
}

func TestCloseConnections(t *testing.T) {
	s := start(t, smtptest.Options{})
	c := dial(t, s)
	if err := c.Noop(); err != nil {
		t.Fatal(err)
	}
	if n := s.CloseConnections(); n != 1 {
		t.Errorf("closed %d connections, want 1", n)
	}
	if err := c.Noop(); err == nil {
		t.Error("connection still usable")
	}
}

// BenchmarkDiscard sends b.N messages of a typical size over one
// connection to a Discard server (client and server both counted).
func BenchmarkDiscard(b *testing.B) {
	s, err := smtptest.Start(smtptest.Options{Discard: true})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	c, err := smtp.Dial(s.Addr())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	msg := body + strings.Repeat("A line of a feed item's text, as an email carries it.\r\n", 80)
	b.ReportAllocs()
	for b.Loop() {
		if err := c.SendMail("a@example.com", []string{"b@example.com"}, strings.NewReader(msg)); err != nil {
			b.Fatal(err)
		}
	}
	if s.Count() != b.N {
		b.Fatalf("%d accepted, want %d", s.Count(), b.N)
	}
}
