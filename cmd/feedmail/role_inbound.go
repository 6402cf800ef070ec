package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/feedmail/feedmail/internal/mailbox"
	"github.com/feedmail/feedmail/internal/outbox"
	"github.com/feedmail/feedmail/internal/web"
)

// roleInbound reads the IMAP mailbox of FEEDMAIL_INBOUND_URL and handles
// each message as `feedmail inbound` does (outbox.Returns), moving it out
// of the way once handled. A message handled but not moved (a crash, a
// lost connection) is handled again on the next pass, which changes
// nothing: every effect is recorded once.
func roleInbound(a *app, _ *web.Server) (func(ctx context.Context) error, error) {
	s, err := a.openStore(context.Background())
	if err != nil {
		return nil, err
	}
	if a.cfg.BounceAddress == "" {
		a.log.Warn("the inbound role runs without FEEDMAIL_BOUNCE_ADDRESS: only complaints naming a Message-ID can be matched to an email")
	}
	log := a.log.With("role", "inbound")
	ret := &outbox.Returns{Store: s, Links: a.links(), Clock: a.clock, Log: log, Metrics: a.metrics,
		MaxBytes: mailbox.DefaultMaxBytes}
	r, err := mailbox.New(mailbox.Config{URL: a.cfg.InboundURL, MaxBytes: mailbox.DefaultMaxBytes,
		TLS: a.inboundTLS, Logger: log, Clock: a.clock}, func(ctx context.Context, raw []byte, truncated bool) error {
		_, err := ret.Handle(ctx, wholeMessage(raw, truncated), nil)
		if err == nil && a.afterInbound != nil {
			a.afterInbound(raw)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("FEEDMAIL_INBOUND_URL: %w", err)
	}
	if t, err := mailbox.ParseURL(a.cfg.InboundURL); err == nil {
		log.Info("inbound ready", "mailbox", t.String())
	}
	return r.Run, nil
}

// wholeMessage is raw as the handler reads it: a message the mailbox cut
// at its size limit gets one byte more, so that it reads as over the
// limit (inbound.Parse's "too large") and not as a short message.
func wholeMessage(raw []byte, truncated bool) io.Reader {
	if !truncated {
		return bytes.NewReader(raw)
	}
	return io.MultiReader(bytes.NewReader(raw), strings.NewReader("\n"))
}
