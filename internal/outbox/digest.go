package outbox

import (
	"context"
	"errors"
	"fmt"

	"github.com/wneessen/go-mail"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/mailer"
)

// DigestRenderConfig is what the digest renderer needs. Store and Links are
// required.
type DigestRenderConfig struct {
	Store  *store.Store
	Sender mailer.Sender
	Links  links.Links
	Clock  clock.Clock
	// PerFeed caps the items shown per feed (default DefaultPerFeed).
	PerFeed int
}

// NewDigestRenderer returns the outbox renderer for rows of kind "digest": it
// loads the row's issue when the email is rendered (so an issue that waited
// for credits is sent with everything it holds) and composes it with
// [mailer.Sender.Digest], with one Message-ID per issue so retries thread.
// Items of ended subscriptions are left out; an issue left empty is
// cancelled (ErrCancelled), neither sent nor charged; a database
// error is temporary (ErrTemporary), so the outbox retries the row.
func NewDigestRenderer(cfg DigestRenderConfig) Renderer {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.PerFeed <= 0 {
		cfg.PerFeed = mailer.DefaultPerFeed
	}
	return func(ctx context.Context, row *store.OutboxRow) (*mail.Msg, error) {
		if row == nil || row.IssueID == nil {
			return nil, errors.New("digest render: outbox row without an issue")
		}
		c, err := cfg.Store.DigestIssueContent(ctx, *row.IssueID, cfg.PerFeed)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return nil, fmt.Errorf("digest render: %w: %w", ErrCancelled, err)
		case err != nil:
			return nil, fmt.Errorf("digest render: %w: %w", mailer.ErrTemporary, err)
		}
		e := mailer.DigestEmailOf(c, row.Address, cfg.Sender, cfg.Links, cfg.Clock.Now())
		e.Footer.UnsubscribeMailto = cfg.Links.UnsubscribeMailto(row.ID)
		m, err := cfg.Sender.Digest(e)
		if errors.Is(err, mailer.ErrEmptyDigest) {
			return nil, fmt.Errorf("digest render: issue %d: %w: %w", *row.IssueID, ErrCancelled, err)
		}
		if err != nil {
			return nil, fmt.Errorf("digest render: issue %d: %w", *row.IssueID, err)
		}
		return m, nil
	}
}
