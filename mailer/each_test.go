package mailer

import (
	"context"
	"crypto/ed25519"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/testkit/smtptest"
)

// TestSendEachReportsAsRepliesCome: SendEach tells a message's acceptance
// while another of the same call is still waiting for its reply, through
// SMTP alone and through DKIM signing; and report holds its connection:
// with one connection, no further message reaches the server while report
// runs.
func TestSendEachReportsAsRepliesCome(t *testing.T) {
	signer, err := NewDKIMSigner("mail.example.com", "fm1", ed25519.NewKeyFromSeed(make([]byte, 32)))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"smtp", "smtp+dkim"} {
		t.Run(name, func(t *testing.T) {
			srv := startSMTP(t, smtptest.Options{Stall: []string{"slow@example.org"}})
			var tr Transport = newTransport(t, srv, 2)
			if name == "smtp+dkim" {
				tr = WithDKIM(tr, signer)
			}
			ctx, cancel := context.WithCancel(testCtx(t))
			defer cancel()
			fast := make(chan struct{})
			done := make(chan []error, 1)
			go func() {
				errs := make([]error, 2)
				SendEach(ctx, tr, itemsTo(t, "slow@example.org", "fast@example.org"), func(i int, err error) {
					if errs[i] = err; i == 1 && err == nil {
						close(fast)
					}
				})
				done <- errs
			}()
			select {
			case <-fast:
			case errs := <-done:
				t.Fatalf("the batch ended (%v) before the fast message's acceptance was reported alone", errs)
			case <-time.After(30 * time.Second):
				t.Fatalf("no report of the fast message's acceptance in 30 s (server accepted %d)", srv.Count())
			}
			cancel() // the stalled message gives up
			wantResults(t, <-done, "temp 0", "ok")
		})
	}

	t.Run("report holds the connection", func(t *testing.T) {
		srv := startSMTP(t, smtptest.Options{})
		tr := newTransport(t, srv, 1)
		var atFirst int
		var results []error
		tr.SendEach(testCtx(t), itemsTo(t, "a@example.org", "b@example.org", "c@example.org"), func(i int, err error) {
			if i == 0 {
				atFirst = srv.Count()
			}
			results = append(results, err)
		})
		if atFirst != 1 {
			t.Errorf("the server had %d messages while the first report ran, want 1 (the connection must wait)", atFirst)
		}
		wantResults(t, results, "ok", "ok", "ok")
	})
}

var _ EachSender = (*SMTPTransport)(nil)
var _ EachSender = (*Maildir)(nil)
