package mailer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wneessen/go-mail"
	"golang.org/x/time/rate"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/testkit/smtptest"
)

func startSMTP(t testing.TB, opts smtptest.Options) *smtptest.Server {
	t.Helper()
	srv, err := smtptest.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

// newTransport makes a transport for srv with the given pool size.
func newTransport(t testing.TB, srv *smtptest.Server, pool int, opts ...Option) *SMTPTransport {
	t.Helper()
	cfg, err := ParseSMTPURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	cfg.Pool = pool
	cfg.Timeout = 10 * time.Second
	tr := NewSMTP(cfg, append([]Option{WithHELO("client.test")}, opts...)...)
	t.Cleanup(func() { _ = tr.Close() })
	return tr
}

// itemsTo composes one item email per recipient.
func itemsTo(t testing.TB, rcpts ...string) []*mail.Msg {
	t.Helper()
	var msgs []*mail.Msg
	for i, to := range rcpts {
		e := testItem()
		e.To = to
		e.MessageID = testSender().MessageID(fmt.Sprintf("item.%d.1", i))
		m, err := testSender().Item(e)
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, m)
	}
	return msgs
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// wantResults checks Send results: "ok", "temp" or "perm", with the SMTP
// code when want has one ("temp 450").
func wantResults(t *testing.T, errs []error, want ...string) {
	t.Helper()
	if len(errs) != len(want) {
		t.Fatalf("%d results, want %d", len(errs), len(want))
	}
	for i, w := range want {
		err := errs[i]
		kind, code, _ := strings.Cut(w, " ")
		switch kind {
		case "ok":
			if err != nil {
				t.Errorf("message %d: %v, want success", i, err)
			}
			continue
		case "temp":
			if !errors.Is(err, ErrTemporary) || errors.Is(err, ErrPermanent) {
				t.Errorf("message %d: %v, want temporary", i, err)
			}
		case "perm":
			if !errors.Is(err, ErrPermanent) || errors.Is(err, ErrTemporary) {
				t.Errorf("message %d: %v, want permanent", i, err)
			}
		}
		var se *SendError
		if !errors.As(err, &se) {
			t.Errorf("message %d: %T is not a *SendError", i, err)
			continue
		}
		if code != "" && fmt.Sprint(se.Code) != code {
			t.Errorf("message %d: code %d, want %s (%v)", i, se.Code, code, err)
		}
	}
}

func TestSMTPSend(t *testing.T) {
	srv := startSMTP(t, smtptest.Options{})
	tr := newTransport(t, srv, 1)
	msgs := itemsTo(t, "a@example.org", "b@example.org", "c@example.org")
	wantResults(t, tr.Send(testCtx(t), msgs), "ok", "ok", "ok")
	got := srv.Messages()
	if len(got) != 3 {
		t.Fatalf("server got %d messages", len(got))
	}
	for i, m := range got {
		if m.From != "feedmail@mail.example.com" {
			t.Errorf("MAIL FROM %q", m.From)
		}
		if want := []string{"a@example.org", "b@example.org", "c@example.org"}[i]; len(m.To) != 1 || m.To[0] != want {
			t.Errorf("RCPT TO %v, want %s", m.To, want)
		}
		if id := m.Header.Get("Message-Id"); id != fmt.Sprintf("<item.%d.1@mail.example.com>", i) {
			t.Errorf("Message-ID %q", id)
		}
		if m.Header.Get("List-Unsubscribe-Post") != "List-Unsubscribe=One-Click" {
			t.Error("List-Unsubscribe-Post lost on the way")
		}
		p := parseRaw(t, m.Raw)
		if !strings.Contains(p.text, "First about") || !strings.Contains(p.html, "max-width:640px") {
			t.Error("body did not survive the trip")
		}
	}
	if st := tr.Stats(); st.Accepted != 3 || st.Failed != 0 || st.Dials != 1 {
		t.Errorf("stats %+v", st)
	}
}

func TestSMTPConnectionReuse(t *testing.T) {
	srv := startSMTP(t, smtptest.Options{})
	tr := newTransport(t, srv, 2)
	ctx := testCtx(t)
	for batch := range 5 {
		var rcpts []string
		for i := range 8 {
			rcpts = append(rcpts, fmt.Sprintf("r%d-%d@example.org", batch, i))
		}
		for i, err := range tr.Send(ctx, itemsTo(t, rcpts...)) {
			if err != nil {
				t.Fatalf("batch %d message %d: %v", batch, i, err)
			}
		}
	}
	if srv.Count() != 40 {
		t.Errorf("server got %d messages, want 40", srv.Count())
	}
	if s := srv.Sessions(); s != 2 {
		t.Errorf("%d SMTP sessions for 40 messages with a pool of 2, want 2", s)
	}
	if d := tr.Stats().Dials; d != 2 {
		t.Errorf("dialled %d times, want 2", d)
	}
}

func TestSMTPFailures(t *testing.T) {
	tests := []struct {
		name         string
		opts         smtptest.Options
		rcpts        []string
		want         []string
		wantAccepted int
		wantSessions int
	}{
		{
			name:  "421 after 2 messages: reported temporary, next one on a new session",
			opts:  smtptest.Options{Reply421After: 2},
			rcpts: []string{"a@example.org", "b@example.org", "c@example.org", "d@example.org"},
			want:  []string{"ok", "ok", "temp 421", "ok"}, wantAccepted: 3, wantSessions: 2,
		},
		{
			name:  "450 and 550 per recipient keep the connection",
			opts:  smtptest.Options{TempFail: []string{"later@example.org"}, PermFail: []string{"gone@example.org"}},
			rcpts: []string{"later@example.org", "gone@example.org", "ok@example.org"},
			want:  []string{"temp 450", "perm 550", "ok"}, wantAccepted: 1, wantSessions: 1,
		},
		{
			name:  "connection dropped during DATA is temporary",
			opts:  smtptest.Options{DropDuringData: []string{"drop@example.org"}},
			rcpts: []string{"ok1@example.org", "drop@example.org", "ok2@example.org"},
			want:  []string{"ok", "temp 0", "ok"}, wantAccepted: 2, wantSessions: 2,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := startSMTP(t, tc.opts)
			tr := newTransport(t, srv, 1)
			errs := tr.Send(testCtx(t), itemsTo(t, tc.rcpts...))
			wantResults(t, errs, tc.want...)
			for i, err := range errs {
				var se *SendError
				if errors.As(err, &se) && (se.Stage == "" || se.Msg == "" || strings.Contains(se.Msg, "affected")) {
					t.Errorf("message %d: stage %q, text %q", i, se.Stage, se.Msg)
				}
			}
			if got := srv.Count(); got != tc.wantAccepted {
				t.Errorf("server accepted %d, want %d", got, tc.wantAccepted)
			}
			if got := srv.Sessions(); got != tc.wantSessions {
				t.Errorf("%d sessions, want %d", got, tc.wantSessions)
			}
		})
	}
}

func TestSMTPStallTimesOut(t *testing.T) {
	srv := startSMTP(t, smtptest.Options{Stall: []string{"slow@example.org"}})
	tr := newTransport(t, srv, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	errs := tr.Send(ctx, itemsTo(t, "slow@example.org", "after@example.org"))
	wantResults(t, errs, "temp 0", "temp 0")
	if !errors.Is(errs[0], context.DeadlineExceeded) {
		t.Errorf("stalled message: %v, want the context's deadline", errs[0])
	}
	// The transport is still usable afterwards.
	wantResults(t, tr.Send(testCtx(t), itemsTo(t, "next@example.org")), "ok")
}

func TestSMTPRateLimit(t *testing.T) {
	srv := startSMTP(t, smtptest.Options{})
	// Three tokens and then one an hour: the fourth message would wait far
	// beyond the context's deadline, so Wait refuses at once; no timing.
	lim := rate.NewLimiter(rate.Every(time.Hour), 3)
	tr := newTransport(t, srv, 2, WithLimiter(lim))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	errs := tr.Send(ctx, itemsTo(t, "1@example.org", "2@example.org", "3@example.org", "4@example.org", "5@example.org"))
	ok, limited := 0, 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, ErrTemporary) && strings.Contains(err.Error(), "rate limit"):
			limited++
		default:
			t.Errorf("unexpected result %v", err)
		}
	}
	if ok != 3 || limited != 2 || srv.Count() != 3 {
		t.Errorf("%d sent, %d rate-limited, server got %d; want 3, 2, 3", ok, limited, srv.Count())
	}
	if tok := lim.Tokens(); tok >= 1 {
		t.Errorf("bucket still holds %.2f tokens", tok)
	}
}

func TestSMTPRateFromConfig(t *testing.T) {
	srv := startSMTP(t, smtptest.Options{})
	cfg, err := ParseSMTPURL(srv.URL() + "&rate=0.001&pool=1")
	if err != nil {
		t.Fatal(err)
	}
	tr := NewSMTP(cfg)
	defer tr.Close()
	if tr.limiter == nil || tr.limiter.Limit() != rate.Limit(0.001) || tr.limiter.Burst() != 1 {
		t.Fatalf("limiter %+v", tr.limiter)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	wantResults(t, tr.Send(ctx, itemsTo(t, "1@example.org", "2@example.org")), "ok", "temp 0")
}

func TestSMTPStartTLSAndAuth(t *testing.T) {
	srv := startSMTP(t, smtptest.Options{TLS: true, Username: "fm user", Password: "s3cret:@/"})
	tr := newTransport(t, srv, 1, WithTLSConfig(srv.ClientTLSConfig()))
	if tr.Config().TLS != TLSStartTLS || tr.Config().Username != "fm user" {
		t.Fatalf("config %+v", tr.Config())
	}
	wantResults(t, tr.Send(testCtx(t), itemsTo(t, "a@example.org")), "ok")
	if srv.Count() != 1 {
		t.Errorf("server got %d", srv.Count())
	}

	// A wrong password is a connection problem, not the message's: temporary.
	cfg := tr.Config()
	cfg.Password = "wrong"
	bad := NewSMTP(cfg, WithTLSConfig(srv.ClientTLSConfig()))
	defer bad.Close()
	wantResults(t, bad.Send(testCtx(t), itemsTo(t, "a@example.org")), "temp 535")

	// An untrusted certificate fails too (temporary), without sending.
	cfg.Password = "s3cret:@/"
	untrusted := NewSMTP(cfg)
	defer untrusted.Close()
	wantResults(t, untrusted.Send(testCtx(t), itemsTo(t, "a@example.org")), "temp 0")
	if srv.Count() != 1 {
		t.Errorf("server got %d", srv.Count())
	}
}

func TestSMTPDeadReusedConnectionIsRedialled(t *testing.T) {
	srv := startSMTP(t, smtptest.Options{})
	tr := newTransport(t, srv, 1)
	ctx := testCtx(t)
	wantResults(t, tr.Send(ctx, itemsTo(t, "a@example.org")), "ok")
	if n := srv.CloseConnections(); n != 1 {
		t.Fatalf("closed %d connections", n)
	}
	// The pooled connection is dead; nothing of the message reached the
	// server, so the transport redials and sends it.
	wantResults(t, tr.Send(ctx, itemsTo(t, "b@example.org")), "ok")
	if srv.Count() != 2 || tr.Stats().Dials != 2 {
		t.Errorf("server got %d, dials %d", srv.Count(), tr.Stats().Dials)
	}
}

func TestSMTPIdleConnections(t *testing.T) {
	srv := startSMTP(t, smtptest.Options{})
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	tr := newTransport(t, srv, 1, WithClock(clk), WithIdleTimeouts(10*time.Second, time.Minute))
	ctx := testCtx(t)
	send := func(to string) {
		t.Helper()
		wantResults(t, tr.Send(ctx, itemsTo(t, to)), "ok")
	}
	send("a@example.org")
	clk.Advance(30 * time.Second) // probed with NOOP, still fine: reused
	send("b@example.org")
	if d := tr.Stats().Dials; d != 1 {
		t.Errorf("dials after a probe = %d, want 1", d)
	}
	clk.Advance(2 * time.Minute) // idle too long: closed and redialled
	send("c@example.org")
	if d, s := tr.Stats().Dials, srv.Sessions(); d != 2 || s != 2 {
		t.Errorf("dials %d, sessions %d after a long idle; want 2, 2", d, s)
	}
}

func TestSMTPConcurrentSends(t *testing.T) {
	srv := startSMTP(t, smtptest.Options{})
	tr := newTransport(t, srv, 3)
	ctx := testCtx(t)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			var rcpts []string
			for i := range 10 {
				rcpts = append(rcpts, fmt.Sprintf("g%d-%d@example.org", g, i))
			}
			for i, err := range tr.Send(ctx, itemsTo(t, rcpts...)) {
				if err != nil {
					t.Errorf("goroutine %d message %d: %v", g, i, err)
				}
			}
		})
	}
	wg.Wait()
	if srv.Count() != 40 || srv.Sessions() > 3 {
		t.Errorf("server got %d in %d sessions", srv.Count(), srv.Sessions())
	}
}

func TestSMTPEdgeCases(t *testing.T) {
	srv := startSMTP(t, smtptest.Options{})
	tr := newTransport(t, srv, 2)

	if errs := tr.Send(testCtx(t), nil); len(errs) != 0 {
		t.Errorf("empty batch: %v", errs)
	}
	wantResults(t, tr.Send(testCtx(t), []*mail.Msg{nil}), "perm")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	errs := tr.Send(ctx, itemsTo(t, "a@example.org", "b@example.org", "c@example.org"))
	wantResults(t, errs, "temp", "temp", "temp")
	if !errors.Is(errs[0], context.Canceled) {
		t.Errorf("cancelled: %v", errs[0])
	}

	if err := tr.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := tr.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	errs = tr.Send(testCtx(t), itemsTo(t, "a@example.org"))
	wantResults(t, errs, "temp")
	if !errors.Is(errs[0], ErrClosed) {
		t.Errorf("after Close: %v", errs[0])
	}
	if srv.Count() != 0 {
		t.Errorf("server got %d", srv.Count())
	}
}

func TestSMTPConnectRefused(t *testing.T) {
	srv := startSMTP(t, smtptest.Options{})
	addr := srv.Addr()
	_ = srv.Close() // nothing listens there any more
	cfg, err := ParseSMTPURL("smtp://" + addr + "?tls=none&timeout=5s&pool=1")
	if err != nil {
		t.Fatal(err)
	}
	tr := NewSMTP(cfg)
	defer tr.Close()
	wantResults(t, tr.Send(testCtx(t), itemsTo(t, "a@example.org")), "temp 0")
}

func TestSendErrorFormatting(t *testing.T) {
	tests := []struct {
		err  *SendError
		want string
	}{
		{&SendError{Code: 550, EnhancedCode: "5.1.1", Msg: "no such user"}, "smtp 550 5.1.1: no such user (permanent)"},
		{&SendError{Code: 550, EnhancedCode: "5.1.1", Stage: "RCPT TO", Msg: "no such user"}, "smtp 550 5.1.1 at RCPT TO: no such user (permanent)"},
		{&SendError{Stage: "end of DATA", Msg: "connection reset", Temporary: true}, "smtp at end of DATA: connection reset (temporary)"},
		{&SendError{Code: 450, Msg: "later", Temporary: true}, "smtp 450: later (temporary)"},
		{&SendError{Temporary: true, Err: context.Canceled}, "context canceled (temporary)"},
	}
	for _, tc := range tests {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
	if err := error(&SendError{Temporary: true, Err: context.Canceled}); !errors.Is(err, context.Canceled) || !errors.Is(err, ErrTemporary) {
		t.Error("SendError does not unwrap")
	}
	texts := []struct {
		in   string
		code int
		want string
	}{
		{`sending SMTP RCPT TO command: 550 "5.1.1 No such user here", affected recipient(s): <a@b>, affected message ID: <x@y>`, 550, "No such user here"},
		{`sending SMTP MAIL FROM command: 421 "4.7.0 Too many messages", EOF, affected message ID: <x@y>`, 421, "Too many messages"},
		{`sending SMTP DATA command: 554 Transaction failed, affected message ID: <x@y>`, 554, "Transaction failed"},
		{`closing SMTP DATA writer: read tcp: connection reset by peer, affected message ID: <x@y>`, 0, "closing SMTP DATA writer: read tcp: connection reset by peer"},
	}
	for _, tc := range texts {
		if got := replyText(tc.in, tc.code); got != tc.want {
			t.Errorf("replyText(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if replyCode(errors.New("535 5.7.8 Authentication failed")) != 535 || replyCode(errors.New("dial tcp: refused")) != 0 {
		t.Error("replyCode")
	}
}

func TestSMTPReplyDetails(t *testing.T) {
	srv := startSMTP(t, smtptest.Options{PermFail: []string{"gone@example.org"}})
	tr := newTransport(t, srv, 1)
	errs := tr.Send(testCtx(t), itemsTo(t, "gone@example.org"))
	var se *SendError
	if !errors.As(errs[0], &se) {
		t.Fatalf("%v is not a SendError", errs[0])
	}
	want := SendError{Code: 550, EnhancedCode: "5.1.1", Stage: "RCPT TO", Msg: "No such user here", Temporary: false}
	if se.Code != want.Code || se.EnhancedCode != want.EnhancedCode || se.Stage != want.Stage || se.Msg != want.Msg || se.Temporary {
		t.Errorf("got %+v, want %+v", *se, want)
	}
	if got := se.Error(); got != "smtp 550 5.1.1 at RCPT TO: No such user here (permanent)" {
		t.Errorf("Error() = %q", got)
	}
}
