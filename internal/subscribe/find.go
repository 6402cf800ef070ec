package subscribe

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/forecast"
	"github.com/feedmail/feedmail/internal/newitems"
	"github.com/feedmail/feedmail/internal/store"
)

// knownFeedFresh is how recent a feed's last successful poll must be for
// signup to trust it without fetching it.
const knownFeedFresh = 7 * 24 * time.Hour

// Found is the outcome of looking at an address: a feed (URL, Title,
// SiteURL), or the feeds a page advertises when there are several to pick
// from (Candidates).
type Found struct {
	URL, Title, SiteURL string
	Candidates          []newitems.Alternate
	// Forecast is the feed's cost forecast: from the fetched document's
	// items, or the stored items of a feed not fetched (zero with
	// Candidates).
	Forecast forecast.Forecast
	// doc is the feed document fetched to check it, nil when the feed was
	// not fetched (known and polled lately): Subscribe records it as the
	// feed's baseline (Service.Baseline).
	doc *fetchedDoc
}

// fetchedDoc is a feed document as fetched: the answer (its body and
// Content-Type, validators and caching headers), when its request went
// out, and the feed parsed from it with base as the base URL (the address
// it was fetched from at last).
type fetchedDoc struct {
	resp      *fetcher.Response
	fetchedAt time.Time
	parsed    *newitems.Feed
	base      string
}

// document is d as the poller's baseline takes it (Baseliner): parsed with
// feedURL, the feed's own address, as the base (again when it was fetched
// from another), with the fetch that brought it, its body dropped. It is
// nil when the document does not parse that way.
func (d *fetchedDoc) document(feedURL string) *newitems.Document {
	parsed := d.parsed
	if d.base != feedURL {
		var err error
		if parsed, err = newitems.Parse(d.resp.Body, d.resp.ContentType, feedURL); err != nil {
			return nil
		}
	}
	fetch := *d.resp
	fetch.Body = nil
	return &newitems.Document{Feed: parsed, Bytes: int64(len(d.resp.Body)), Fetch: &fetch, FetchedAt: d.fetchedAt}
}

// Document returns the feed document fetched to check the feed, parsed
// with the feed's own address as the base as the poller parses it, nil
// when the feed was not fetched (known and polled lately: its stored
// items are as recent) or found only candidates.
func (f Found) Document() *newitems.Document {
	if f.doc == nil || f.URL == "" {
		return nil
	}
	return f.doc.document(f.URL)
}

// FindFeed fetches raw; a feed is returned as is; an HTML page is searched
// for <link rel="alternate"> feeds: one is fetched and checked, several are
// returned as candidates. Problems are FieldErrors in plain words.
//
// A feed feedmail already polls successfully is not fetched again: one
// fetch per feed URL however many people sign up for it (a publisher's
// signup form must not turn into a stream of requests to their server).
// Feeds that are gone or stopped are refused with the reason.
//
// A feed that must be fetched first spends one check of budget (nil: no
// limit); a spent budget is a *BudgetError and nothing is fetched.
func (s *Service) FindFeed(ctx context.Context, raw string, budget Budget) (Found, error) {
	f, err := s.Store.FeedByURL(ctx, raw)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return Found{}, err
	default:
		found, settled, err := s.knownFeed(f)
		if !settled {
			break
		}
		if err == nil {
			found.Forecast, err = s.StoredForecast(ctx, f.ID)
		}
		return found, err
	}
	if err := spend(ctx, budget); err != nil {
		return Found{}, err
	}
	found, err := s.findFeedDepth(ctx, raw, 0)
	if err == nil && found.doc != nil {
		found.Forecast = forecast.Estimate(parsedDates(found.doc.parsed.Items), forecastPresets(), s.Clock.Now())
	}
	return found, err
}

// knownFeed settles an address feedmail already has a feed for without
// fetching it, when it can (settled): a feed that is gone or stopped is a
// FieldError saying so; one polled successfully lately is Found as stored
// (without its Forecast). Otherwise it must be fetched.
func (s *Service) knownFeed(f *store.Feed) (Found, bool, error) {
	switch {
	case f.State == store.FeedGone:
		return Found{}, true, FieldError{Msg: "that feed is gone: its server said it was removed (410 Gone)"}
	case f.State == store.FeedBlacklisted:
		return Found{}, true, FieldError{Msg: "feedmail stopped polling that feed after 90 days of errors; its publisher can ping feedmail to restart it"}
	case f.LastSuccessAt != nil && s.Clock.Now().Sub(*f.LastSuccessAt) < knownFeedFresh:
		return Found{URL: f.URL, Title: f.Title, SiteURL: f.SiteURL}, true, nil
	}
	return Found{}, false, nil
}

// FindTyped is FindFeed for an address as a person typed it: normalized
// (NormalizeFeedURL: "example.com/blog" is https://example.com/blog) and,
// when it had no scheme and nothing answered over https, tried again over
// plain http, as a browser would (one check of budget for both).
func (s *Service) FindTyped(ctx context.Context, typed string, budget Budget) (Found, error) {
	u, msg := NormalizeFeedURL(typed)
	if msg != "" {
		return Found{}, FieldError{Msg: msg}
	}
	found, err := s.FindFeed(ctx, u, budget)
	var fe FieldError
	if errors.As(err, &fe) && fe.noAnswer && !typedScheme(typed) {
		if plain, perr := s.FindFeed(ctx, "http://"+strings.TrimPrefix(u, "https://"), nil); perr == nil {
			return plain, nil
		}
	}
	return found, err
}

// typedScheme reports whether an address as typed names its scheme.
func typedScheme(typed string) bool {
	low := strings.ToLower(strings.TrimSpace(typed))
	return strings.Contains(low, "://") || strings.HasPrefix(low, "feed:")
}

// findFeedDepth fetches raw; depth 1 is a feed a page pointed to, which
// must be a feed itself. The Found has no Forecast (FindFeed works it out;
// an import has no use for it).
func (s *Service) findFeedDepth(ctx context.Context, raw string, depth int) (Found, error) {
	fetchedAt := s.Clock.Now()
	resp, err := s.Fetch.Fetch(ctx, fetcher.Request{URL: raw})
	if err != nil {
		if fetcher.KindOf(err) == fetcher.KindPrivateAddress && s.Log != nil {
			s.Log.Warn("refused a feed on a private or local network; FEEDMAIL_ALLOW_PRIVATE_NETWORKS=1 allows them",
				"url", raw, "err", err)
		}
		switch fetcher.KindOf(err) {
		case fetcher.KindConnection, fetcher.KindTLS, fetcher.KindTimeout:
			return Found{}, FieldError{Msg: NotFetched, Detail: FetchProblem(err), noAnswer: true}
		case fetcher.KindCanceled:
			return Found{}, FieldError{Msg: FetchProblem(err)}
		}
		return Found{}, FieldError{Msg: NotFetched, Detail: FetchProblem(err)}
	}
	if resp.Status < 200 || resp.Status > 299 {
		return Found{}, FieldError{Msg: NotFetched, Detail: "that address answered " + StatusText(resp.Status) + ", not a feed"}
	}
	feedURL := raw
	if resp.PermanentURL != "" {
		feedURL = resp.PermanentURL
	}
	feed, perr := newitems.Parse(resp.Body, resp.ContentType, resp.FinalURL)
	if perr == nil {
		return Found{URL: feedURL, Title: feed.Title, SiteURL: feed.SiteURL,
			doc: &fetchedDoc{resp: resp, fetchedAt: fetchedAt, parsed: feed, base: resp.FinalURL}}, nil
	}
	if errors.Is(perr, newitems.ErrInvalidFeed) {
		return Found{}, FieldError{Msg: "that feed is broken and could not be read"}
	}
	if depth > 0 {
		return Found{}, FieldError{Msg: "that page points to a feed that is not a feed"}
	}
	alts := newitems.Discover(resp.Body, resp.FinalURL)
	switch len(alts) {
	case 0:
		return Found{}, FieldError{Msg: "that page has no feed"}
	case 1:
		return s.findFeedDepth(ctx, alts[0].URL, depth+1)
	}
	return Found{Candidates: alts}, nil
}
