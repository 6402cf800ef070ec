package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/feedmail/feedmail/internal/channel/channels"
	"github.com/feedmail/feedmail/internal/lowbalance"
	"github.com/feedmail/feedmail/internal/outbox"
	"github.com/feedmail/feedmail/internal/subscribe"
	"github.com/feedmail/feedmail/internal/web"
	"github.com/feedmail/feedmail/mailer"
)

// newTransport picks the mail transport: SMTP when FEEDMAIL_SMTP_URL is
// set, else the Maildir in FEEDMAIL_MAILDIR.
func (a *app) newTransport() (mailer.Transport, string, error) {
	if a.cfg.SMTPURL != "" {
		cfg, err := mailer.ParseSMTPURL(a.cfg.SMTPURL)
		if err != nil {
			return nil, "", fmt.Errorf("FEEDMAIL_SMTP_URL: %w", err)
		}
		return mailer.NewSMTP(cfg, mailer.WithLogger(a.log), mailer.WithClock(a.clock)), cfg.String(), nil
	}
	md, err := mailer.NewMaildir(a.cfg.Maildir, mailer.WithLogger(a.log), mailer.WithClock(a.clock))
	if err != nil {
		return nil, "", fmt.Errorf("FEEDMAIL_MAILDIR: %w", err)
	}
	return md, "maildir " + a.cfg.Maildir, nil
}

// sender composes this install's mail: from FEEDMAIL_FROM, with
// Message-IDs made unique to the install by a key derived from its secret
// and its database's install id (call after openStore).
func (a *app) sender() mailer.Sender {
	return mailer.Sender{Address: a.cfg.From, IDKey: mailer.MessageIDKey(a.tokens.Derive(mailer.MessageIDKeyLabel), a.installID)}
}

// journalDir is where this install's mailers on this machine keep their
// passes' journals of acceptances not yet recorded, in a folder named by
// the database's install id (two installs never replay each other's): in
// systemd's StateDirectory when there is one (the unit's private /tmp is
// removed when a killed process's unit stops, journal included), else in
// the temporary directory.
func journalDir(installID string) string {
	base := os.TempDir()
	if sd, _, _ := strings.Cut(os.Getenv("STATE_DIRECTORY"), ":"); sd != "" {
		base = sd
	}
	return filepath.Join(base, "feedmail-outbox-"+installID)
}

// roleMailer runs the outbox worker: it claims queued email, renders,
// charges and sends it.
func roleMailer(a *app, _ *web.Server) (func(ctx context.Context) error, error) {
	s, err := a.openStore(context.Background())
	if err != nil {
		return nil, err
	}
	tr, desc, err := a.newTransport()
	if err != nil {
		return nil, err
	}
	if err := a.loadDKIM(); err != nil {
		_ = tr.Close()
		return nil, err
	}
	if a.dkim != nil {
		tr = mailer.WithDKIM(tr, a.dkim)
		name, record := a.dkim.DNSRecord()
		a.log.Info("DKIM signing on", "domain", a.dkim.Domain(), "selector", a.cfg.DKIMSelector, "txt_name", name, "txt", record)
		if from := strings.ToLower(a.cfg.From[strings.LastIndexByte(a.cfg.From, '@')+1:]); from != a.dkim.Domain() && !strings.HasSuffix(from, "."+a.dkim.Domain()) {
			a.log.Warn("FEEDMAIL_DKIM_DOMAIN is not FEEDMAIL_FROM's domain or a parent of it: the signature will not align for DMARC",
				"dkim_domain", a.dkim.Domain(), "from", a.cfg.From)
		}
	}
	sender := a.sender()
	lk := a.links()
	holder := fmt.Sprintf("%s-%d-mailer", hostname(), os.Getpid())
	ob, err := outbox.NewOutbox(outbox.OutboxConfig{
		Store: s, Transport: tr, Sender: sender, Links: lk, Clock: a.clock, Log: a.log.With("role", "mailer"),
		Metrics: a.metrics, Owner: holder, DBWait: a.dbWait,
		PaymentsOn: a.cfg.PaymentsEnabled(), Channels: channels.All(), HTTP: a.channelHTTP(),
		JournalDir: journalDir(a.installID),
	})
	if err != nil {
		_ = tr.Close()
		return nil, err
	}
	hist := (&subscribe.Service{Store: s, Clock: a.clock}).StoredHistoryFiltered
	low, err := lowbalance.New(lowbalance.Config{Store: s, History: hist, Links: lk, PaymentsOn: a.cfg.PaymentsEnabled(), Clock: a.clock,
		Log: a.log.With("role", "mailer", "pass", "running-low")})
	if err != nil {
		_ = tr.Close()
		return nil, err
	}
	a.log.Info("mailer ready", "transport", desc, "owner", holder)
	return func(ctx context.Context) error {
		defer func() {
			if err := tr.Close(); err != nil {
				a.log.Warn("closing mail transport", "err", err)
			}
		}()
		var wg sync.WaitGroup
		defer wg.Wait()
		lowCtx, stop := context.WithCancel(ctx)
		defer stop()
		wg.Go(func() { _ = low.Run(lowCtx) })
		wg.Go(func() { a.runOwnerLapses(lowCtx, s) })
		return ob.Run(ctx)
	}, nil
}
