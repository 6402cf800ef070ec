package subscribe

import (
	"context"
	"time"

	"github.com/feedmail/feedmail/digest"
	"github.com/feedmail/feedmail/internal/filter"
	"github.com/feedmail/feedmail/internal/forecast"
	"github.com/feedmail/feedmail/internal/newitems"
	"github.com/feedmail/feedmail/internal/store"
)

// forecastPresets returns digest's presets as the forecast prices them,
// their schedules parsed in UTC (a zone shifts the slots, not their gaps).
// A preset that does not parse (digest's tests say none) is left out.
func forecastPresets() []forecast.Preset {
	var out []forecast.Preset
	for _, p := range digest.Presets() {
		if s, err := digest.ParseSchedule(p.Spec, "UTC"); err == nil {
			out = append(out, forecast.Preset{Key: p.Key, Slots: s})
		}
	}
	return out
}

// parsedDates returns the publish dates of a parsed feed's items (zero
// for an undated item).
func parsedDates(items []newitems.Item) []time.Time {
	out := make([]time.Time, len(items))
	for i, it := range items {
		out[i] = it.Published
	}
	return out
}

// storedDates returns the publish dates of a feed's newest stored items,
// as many as a feed document can show (newitems.MaxItems). An item stored
// without a date counts as undated: when feedmail saw it says nothing of
// when it was published (a first poll sees a whole feed at once).
func (s *Service) storedDates(ctx context.Context, feedID int64) ([]time.Time, error) {
	return s.Store.ItemDates(ctx, feedID, newitems.MaxItems)
}

// StoredForecast returns the cost forecast of a feed from its stored
// items (forecast.Estimate). Nothing is fetched.
func (s *Service) StoredForecast(ctx context.Context, feedID int64) (forecast.Forecast, error) {
	ds, err := s.storedDates(ctx, feedID)
	if err != nil {
		return forecast.Forecast{}, err
	}
	return forecast.Estimate(ds, forecastPresets(), s.Clock.Now()), nil
}

// StoredHistory returns what a feed's stored items say of its rate
// (forecast.Read), for the cost of a digest it shares with other feeds.
func (s *Service) StoredHistory(ctx context.Context, feedID int64) (forecast.History, error) {
	ds, err := s.storedDates(ctx, feedID)
	if err != nil {
		return forecast.History{}, err
	}
	return forecast.Read(ds, s.Clock.Now()), nil
}

// StoredHistoryFiltered is StoredHistory for a subscription with include
// and exclude terms: only the posts they pass count as sent (the
// forecast applies the filters as the fan-out does). Terms that no longer
// parse (the fan-out then sends nothing) give no forecast.
func (s *Service) StoredHistoryFiltered(ctx context.Context, feedID int64, include, exclude string) (forecast.History, error) {
	if include == "" && exclude == "" {
		return s.StoredHistory(ctx, feedID)
	}
	items, err := s.Store.ItemsOfFeed(ctx, feedID, newitems.MaxItems)
	if err != nil {
		return forecast.History{}, err
	}
	posts := storedPosts(items)
	f, err := filter.New(include, exclude)
	if err != nil {
		return forecast.History{Reason: "its filters cannot be read"}, nil
	}
	return forecast.ReadPosts(posts, f, s.Clock.Now()), nil
}

// ForecastFor returns the forecast of a subscription to found with the
// given include and exclude terms: found.Forecast without terms, else the
// forecast of the posts they pass, from the fetched document's items or,
// for a feed not fetched, its stored ones.
func (s *Service) ForecastFor(ctx context.Context, found *Found, feedID int64, include, exclude string) (forecast.Forecast, error) {
	if include == "" && exclude == "" {
		return found.Forecast, nil
	}
	f, err := filter.New(include, exclude)
	if err != nil {
		return forecast.Forecast{NotEnoughHistory: true, Reason: "its filters cannot be read"}, nil
	}
	var posts []forecast.Post
	if found.doc != nil {
		for _, it := range found.doc.parsed.Items {
			posts = append(posts, forecast.Post{Date: it.Published, Title: it.Title, Content: it.ContentHTML})
		}
	} else {
		items, err := s.Store.ItemsOfFeed(ctx, feedID, newitems.MaxItems)
		if err != nil {
			return forecast.Forecast{}, err
		}
		posts = storedPosts(items)
	}
	return forecast.EstimatePosts(posts, f, forecastPresets(), s.Clock.Now()), nil
}

// storedPosts is what the forecast reads of stored items.
func storedPosts(items []store.Item) []forecast.Post {
	posts := make([]forecast.Post, len(items))
	for i, it := range items {
		posts[i] = forecast.Post{Title: it.Title, Content: it.Content}
		if it.PublishedAt != nil {
			posts[i].Date = it.PublishedAt.UTC()
		}
	}
	return posts
}
