package web

import (
	"context"
	"errors"

	"github.com/feedmail/feedmail/internal/article"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/subscribe"
)

// articleSamples is how many of a feed's newest posts the truncation
// verdict reads.
const articleSamples = 10

// cutShort returns why feedID's posts look cut short (article.Truncated
// over its newest stored posts), "" when they do not: the status page
// marks such a feed and the signup form suggests the article format.
func (s *Server) cutShort(ctx context.Context, feedID int64) (string, error) {
	rows, err := s.Store.FeedArticleSamples(ctx, feedID, articleSamples)
	if err != nil {
		return "", err
	}
	samples := make([]article.Sample, len(rows))
	for i, r := range rows {
		samples[i] = article.Sample{Content: r.Content, ArticleChars: r.ArticleChars}
	}
	return article.Truncated(samples).Reason, nil
}

// suggestFormat picks the article format on the landing form of a feed
// feedmail knows whose posts look cut short, and says why; any other feed
// keeps the form's format. Nothing is fetched.
func (s *Server) suggestFormat(ctx context.Context, d *signupData) error {
	u, msg := subscribe.NormalizeFeedURL(d.URL)
	if d.URL == "" || msg != "" {
		return nil
	}
	f, err := s.Store.FeedByURL(ctx, u)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	why, err := s.cutShort(ctx, f.ID)
	if err != nil || why == "" {
		return err
	}
	d.Format = store.FormatArticle
	d.FormatHint = "Suggested for this feed: " + why + "."
	return nil
}

// cutShortUnlessArticle is cutShort for the feed a person just signed up
// to (its fetched posts are stored by then), "" when they picked the
// article format already or the feed is unknown.
func (s *Server) cutShortUnlessArticle(ctx context.Context, f *store.Feed, format string) (string, error) {
	if f == nil || format == store.FormatArticle {
		return "", nil
	}
	return s.cutShort(ctx, f.ID)
}
