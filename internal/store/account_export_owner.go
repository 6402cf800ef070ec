package store

import (
	"context"
	"fmt"

	"github.com/feedmail/feedmail/internal/model"
)

// exportPublisher returns userID's owned feeds and claims, nil when there
// are none.
func (s *Store) exportPublisher(ctx context.Context, userID int64) (*model.ExportPublisher, error) {
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
	out := &model.ExportPublisher{OwnedFeeds: []model.ExportOwnedFeed{}, Claims: []model.ExportClaim{}}
	for _, o := range owned {
		out.OwnedFeeds = append(out.OwnedFeeds, model.ExportOwnedFeed{FeedURL: o.FeedURL, VerifiedBy: o.VerifiedBy,
			Since: o.CreatedAt.UTC(), LapsedAt: utcPtrOf(o.LapsedAt)})
	}
	for _, c := range claims {
		out.Claims = append(out.Claims, model.ExportClaim{FeedURL: c.FeedURL, Token: c.Token, CreatedAt: c.CreatedAt.UTC(),
			CheckedAt: utcPtrOf(c.CheckedAt), LastError: c.LastError, VerifiedAt: utcPtrOf(c.VerifiedAt)})
	}
	return out, nil
}
