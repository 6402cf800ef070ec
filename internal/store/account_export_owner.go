package store

import (
	"context"
	"fmt"
	"time"
)

// ExportPublisher is the publisher's part of an account export.
type ExportPublisher struct {
	OwnedFeeds []ExportOwnedFeed `json:"owned_feeds"`
	Claims     []ExportClaim     `json:"claims"`
}

// ExportOwnedFeed is a feed the person pays for, since when and how they
// were verified, and the current lapse of their credits, if any.
type ExportOwnedFeed struct {
	FeedURL    string     `json:"feed_url"`
	VerifiedBy string     `json:"verified_by"`
	Since      time.Time  `json:"since"`
	LapsedAt   *time.Time `json:"credits_ran_out_at,omitempty"`
}

// ExportClaim is a claim to a feed with its token and the last check.
type ExportClaim struct {
	FeedURL    string     `json:"feed_url"`
	Token      string     `json:"token"`
	CreatedAt  time.Time  `json:"created_at"`
	CheckedAt  *time.Time `json:"checked_at,omitempty"`
	LastError  string     `json:"last_error,omitempty"`
	VerifiedAt *time.Time `json:"verified_at,omitempty"`
}

// exportPublisher returns userID's owned feeds and claims, nil when there
// are none.
func (s *Store) exportPublisher(ctx context.Context, userID int64) (*ExportPublisher, error) {
	owned, err := s.OwnedFeeds(ctx, userID)
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	claims, err := s.ClaimsOf(ctx, userID)
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	if len(owned) == 0 && len(claims) == 0 {
		return nil, nil
	}
	out := &ExportPublisher{OwnedFeeds: []ExportOwnedFeed{}, Claims: []ExportClaim{}}
	for _, o := range owned {
		out.OwnedFeeds = append(out.OwnedFeeds, ExportOwnedFeed{FeedURL: o.FeedURL, VerifiedBy: o.VerifiedBy,
			Since: o.CreatedAt.UTC(), LapsedAt: utcPtrOf(o.LapsedAt)})
	}
	for _, c := range claims {
		out.Claims = append(out.Claims, ExportClaim{FeedURL: c.FeedURL, Token: c.Token, CreatedAt: c.CreatedAt.UTC(),
			CheckedAt: utcPtrOf(c.CheckedAt), LastError: c.LastError, VerifiedAt: utcPtrOf(c.VerifiedAt)})
	}
	return out, nil
}
