package bench

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/wneessen/go-mail"

	"github.com/feedmail/feedmail/billing"
	"github.com/feedmail/feedmail/digest"
	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/outbox"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/token"
	"github.com/feedmail/feedmail/mailer"
)

const benchFrom = "feedmail@bench.example"

// outbox: everything queued (the fan-out's emails, the changed pass's, or
// the fan-out's seeded afresh) claimed, rendered, charged, sent and marked.
func (e *env) outbox(ctx context.Context) (Row, error) {
	row := Row{Unit: "emails", Work: "claim, render (sanitised HTML + text, signed links), charge, DKIM-sign (" + e.cfg.DKIM +
		"), send over SMTP (4 connections), mark sent; 2 workers"}
	queued, err := e.ensureQueued(ctx)
	if err != nil {
		return row, err
	}
	sink, err := e.smtpSink(ctx)
	if err != nil {
		return row, err
	}
	cfg, err := mailer.ParseSMTPURL(sink.url)
	if err != nil {
		return row, err
	}

	// The bare loop: the same number of pre-built messages, one connection.
	base, bareSink, err := e.bareMail(ctx, sink, cfg, queued)
	if err != nil {
		return row, err
	}
	row.Baseline = base

	ob, closeTransport, err := e.newOutbox(cfg)
	if err != nil {
		return row, err
	}
	defer closeTransport()
	e.clk.Advance(time.Second)
	before, err := sink.read(ctx)
	if err != nil {
		return row, err
	}
	stop := e.progress("outbox", func() string { return fmt.Sprintf("%d/%d emails sent", sink.count(ctx)-before.Count, queued) })
	err = e.measure(ctx, &row, func(ctx context.Context) error { return sendAll(ctx, ob) })
	stop()
	if err != nil {
		return row, fmt.Errorf("outbox: %w", err)
	}
	after, err := sink.read(ctx)
	if err != nil {
		return row, err
	}
	sent := after.Count - before.Count
	if err := e.checkAllSent(ctx, sent, queued); err != nil {
		return row, err
	}
	row.Count = sent
	row.Sink = &SinkUse{PID: after.PID, Separate: sink.proc != nil, Received: sent, CPU: after.CPU - before.CPU, BareCPU: bareSink}
	row.Note = fmt.Sprintf("%d emails at the sink, all marked sent and charged; %s", sent, sink.note(row.Sink, sent))
	return row, nil
}

// ensureQueued returns how many emails are queued; when none are (the
// outbox scenario runs on its own) it first queues the fan-out's emails,
// untimed.
func (e *env) ensureQueued(ctx context.Context) (int, error) {
	queued, err := e.queued(ctx)
	if err != nil {
		return 0, err
	}
	if queued == 0 {
		if err := e.ensureFan(ctx); err != nil {
			return 0, err
		}
		p, err := e.poller()
		if err != nil {
			return 0, err
		}
		e.clk.Advance(time.Minute)
		e.fan.farm.Publish()
		if _, err := p.PollFeed(ctx, e.fan.id, "bench"); err != nil {
			return 0, fmt.Errorf("queueing the fan-out's emails: %w", err)
		}
		if queued, err = e.queued(ctx); err != nil {
			return 0, err
		}
	}
	if queued == 0 {
		return 0, checkf("nothing queued to send")
	}
	return queued, nil
}

// newOutbox returns the mailer's outbox sending over SMTP to the sink, and
// the function that closes its transport.
func (e *env) newOutbox(cfg mailer.SMTPConfig) (*outbox.Outbox, func(), error) {
	tokens, err := token.NewSigner([]byte("feedmail-bench-secret-0123456789"))
	if err != nil {
		return nil, nil, err
	}
	signer, err := e.dkimSigner()
	if err != nil {
		return nil, nil, err
	}
	smtp := mailer.NewSMTP(cfg, mailer.WithLogger(e.cfg.Log))
	tr := mailer.WithDKIM(smtp, signer)
	sender := mailer.Sender{Address: benchFrom}
	ob, err := outbox.NewOutbox(outbox.OutboxConfig{
		Store: e.st, Transport: tr, Sender: sender, Links: links.New(benchBaseURL, tokens, benchFrom),
		Clock: e.clk, Log: e.cfg.Log.With("role", "mailer"), Owner: fmt.Sprintf("bench-%d-mailer", os.Getpid()),
	})
	if err != nil {
		_ = smtp.Close()
		return nil, nil, err
	}
	return ob, func() { _ = smtp.Close() }, nil
}

// dkimSigner returns the DKIM signer of cfg.DKIM, with a key made for
// the run; nil when it is off.
func (e *env) dkimSigner() (*mailer.DKIMSigner, error) {
	var key crypto.Signer
	var err error
	switch e.cfg.DKIM {
	case "off":
		return nil, nil
	case "ed25519":
		_, key, err = ed25519.GenerateKey(rand.Reader)
	default:
		key, err = rsa.GenerateKey(rand.Reader, 2048)
	}
	if err != nil {
		return nil, fmt.Errorf("dkim key: %w", err)
	}
	return mailer.NewDKIMSigner("bench.example", "bench", key)
}

// sendAll does what the outbox's Run does, without its idle waits: two
// workers, each running passes until one finds nothing due. It returns the
// first worker's error, or ctx's.
func sendAll(ctx context.Context, ob *outbox.Outbox) error {
	const workers = 2
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				n, err := ob.SendDue(ctx)
				if err != nil {
					errs[w] = err
					return
				}
				if n == 0 {
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return ctx.Err()
}

// checkAllSent fails unless every queued email reached the sink, was marked
// sent and none is left queued.
func (e *env) checkAllSent(ctx context.Context, sent, queued int) error {
	var marked int64
	if err := e.st.DB.WithContext(ctx).Model(&store.OutboxRow{}).Where("state = ?", store.OutboxSent).Count(&marked).Error; err != nil {
		return err
	}
	if sent != queued || marked < int64(queued) {
		return checkf("%d of %d emails reached the sink, %d rows marked sent", sent, queued, marked)
	}
	left, err := e.queued(ctx)
	if err != nil {
		return err
	}
	if left != 0 {
		return checkf("%d emails still queued", left)
	}
	return nil
}

// queued counts the emails waiting to be sent.
func (e *env) queued(ctx context.Context) (int, error) {
	var n int64
	err := e.st.DB.WithContext(ctx).Model(&store.OutboxRow{}).Where("state = ?", store.OutboxQueued).Count(&n).Error
	if err != nil {
		return 0, fmt.Errorf("count queued email: %w", err)
	}
	return int(n), nil
}

// bareMail sends n pre-built item emails (composed by the mailer's
// templates, untimed) with go-mail over as many connections as the
// outbox's transport keeps (cfg.Pool), each sending its share. It returns
// the loop's figures and the CPU time the sink used meanwhile (0 when it
// runs in this process, where the loop's CPU includes it).
func (e *env) bareMail(ctx context.Context, sink *mailSink, cfg mailer.SMTPConfig, n int) (*Baseline, time.Duration, error) {
	sender := mailer.Sender{Address: benchFrom}
	now := e.clk.Now()
	content := "<p>Item 1 of the fan-out feed, posted on the feed farm.</p>"
	msgs := make([]*mail.Msg, n)
	for i := range msgs {
		m, err := sender.Item(mailer.ItemEmail{To: "bare" + strconv.Itoa(i) + "@bench.example", FeedTitle: "Fan-out",
			FeedURL: "http://127.0.0.1/f/1", MessageID: sender.ItemMessageID(1, int64(i)), Date: now, ItemTitle: "Item 1",
			ItemLink: "http://127.0.0.1/f/1/i/1", ItemHTML: content, Published: now,
			Footer: mailer.Footer{FeedTitle: "Fan-out", FeedURL: "http://127.0.0.1/f/1", ManageURL: benchBaseURL + "/account/x",
				UnsubscribeURL: benchBaseURL + "/unsubscribe/x", StatusURL: benchBaseURL + "/feeds/status"}})
		if err != nil {
			return nil, 0, fmt.Errorf("bare loop: compose: %w", err)
		}
		msgs[i] = m
	}
	conns := max(cfg.Pool, 1)
	before, err := sink.read(ctx)
	if err != nil {
		return nil, 0, err
	}
	stop := e.progress("bare go-mail loop", func() string { return fmt.Sprintf("%d/%d emails", sink.count(ctx)-before.Count, n) })
	defer stop()
	cpu := processCPU()
	start := time.Now()
	errs := make([]error, conns)
	var wg sync.WaitGroup
	for c := range conns {
		wg.Go(func() { errs[c] = bareSend(ctx, cfg, msgs[c*n/conns:(c+1)*n/conns]) })
	}
	wg.Wait()
	el, used := time.Since(start), processCPU()-cpu
	if err := errors.Join(errs...); err != nil {
		return nil, 0, err
	}
	after, err := sink.read(ctx)
	if err != nil {
		return nil, 0, err
	}
	if got := after.Count - before.Count; got != n {
		return nil, 0, checkf("bare loop: %d of %d messages at the sink", got, n)
	}
	return &Baseline{Name: fmt.Sprintf("go-mail, pre-built messages, %d connections", conns), Elapsed: el, CPU: used}, after.CPU - before.CPU, nil
}

// bareSend sends msgs with one go-mail client over one connection.
func bareSend(ctx context.Context, cfg mailer.SMTPConfig, msgs []*mail.Msg) error {
	c, err := mail.NewClient(cfg.Host, mail.WithPort(cfg.Port), mail.WithTLSPolicy(mail.NoTLS), mail.WithoutNoop())
	if err != nil {
		return fmt.Errorf("bare loop: %w", err)
	}
	if err := c.DialWithContext(ctx); err != nil {
		return fmt.Errorf("bare loop: dial: %w", err)
	}
	if err := c.Send(msgs...); err != nil {
		_ = c.Close()
		return fmt.Errorf("bare loop: send: %w", err)
	}
	if err := c.Close(); err != nil {
		return fmt.Errorf("bare loop: quit: %w", err)
	}
	return nil
}

// digest: cfg.Digests digests due at once, assembled.
func (e *env) digest(ctx context.Context) (Row, error) {
	row := Row{Unit: "digests", Work: fmt.Sprintf("%d items from %d feeds each: claim, assemble the issue, price it, queue its email, move to the next slot", digestItems, digestFeeds)}
	sched, err := digest.ParseSchedule("0 7 * * *", "UTC")
	if err != nil {
		return row, err
	}
	now := e.clk.Now()
	slot, ok := sched.Latest(now.Add(-48*time.Hour), now)
	if !ok {
		return row, checkf("no 07:00 slot in the last two days")
	}
	if err := e.seedDigests(ctx, e.cfg.Digests, slot); err != nil {
		return row, err
	}
	var beforeRows int64
	if err := e.st.DB.WithContext(ctx).Model(&store.OutboxRow{}).Where("kind = ?", store.KindDigest).Count(&beforeRows).Error; err != nil {
		return row, err
	}
	w, err := digest.NewWorker(digest.Config{Store: e.st, Owner: fmt.Sprintf("bench-%d-digest", os.Getpid()),
		Clock: e.clk, Log: e.cfg.Log.With("role", "digest")})
	if err != nil {
		return row, err
	}
	var issued int
	stop := e.progress("digest assembly", func() string { return "assembling" })
	err = e.measure(ctx, &row, func(ctx context.Context) error {
		var err error
		issued, err = w.AssembleDue(ctx)
		return err
	})
	stop()
	if err != nil {
		return row, fmt.Errorf("assemble: %w", err)
	}
	var rows, credits, pending int64
	if err := e.st.DB.WithContext(ctx).Raw(`SELECT COUNT(*), COALESCE(SUM(credits), 0) FROM outbox WHERE kind = ?`, store.KindDigest).
		Row().Scan(&rows, &credits); err != nil {
		return row, err
	}
	if err := e.st.DB.WithContext(ctx).Model(&store.DigestItem{}).Where("issue_id IS NULL").Count(&pending).Error; err != nil {
		return row, err
	}
	rows -= beforeRows
	perIssue := int64(billing.DigestCharge(digestFeeds))
	if issued != e.cfg.Digests || rows != int64(issued) || credits != perIssue*rows || pending != 0 {
		return row, checkf("issued %d, %d outbox rows for %d credits, %d items left; want %d, %d, %d, 0",
			issued, rows, credits, pending, e.cfg.Digests, e.cfg.Digests, perIssue*int64(e.cfg.Digests))
	}
	row.Count = issued
	row.Note = fmt.Sprintf("%d issues queued, %d items, %d credits priced", issued, issued*digestItems, credits)
	return row, nil
}
