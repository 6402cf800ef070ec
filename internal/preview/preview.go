package preview

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/wneessen/go-mail"
	"golang.org/x/sync/singleflight"

	"github.com/feedmail/feedmail/digest"
	"github.com/feedmail/feedmail/internal/article"
	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/subscribe"
	"github.com/feedmail/feedmail/mailer"
)

// DefaultReuse is how long a fetched feed (or article page) serves
// previews before it is fetched again.
const DefaultReuse = 10 * time.Minute

// Delivery "instant": each post in its own email.
const Instant = "instant"

// Config is what a Service needs. Subs is required (its Store, Fetch and
// Clock are the ones signup uses).
type Config struct {
	Subs   *subscribe.Service
	Sender mailer.Sender
	// Links are the install's; a preview's personal links are
	// placeholders under Links.Base.
	Links links.Links
	// Articles reads article pages for the "article" format; nil shows
	// the feed's own content with the outbox's line saying so.
	Articles *article.Reader
	Limits   Limits
	// Reuse is how long a fetch serves previews (DefaultReuse when zero).
	Reuse time.Duration
}

// Service makes previews. Safe for concurrent use.
type Service struct {
	cfg               Config
	perClient, byFeed *keyed
	feeds             *cache[*source]
	flight            singleflight.Group
	articles          *cache[*store.ItemArticle]
}

// New returns a Service for cfg.
func New(cfg Config) *Service {
	if cfg.Reuse <= 0 {
		cfg.Reuse = DefaultReuse
	}
	return &Service{cfg: cfg, perClient: newKeyed(cfg.Limits.PerClient), byFeed: newKeyed(cfg.Limits.PerFeed),
		feeds: newCache[*source](cfg.Reuse), articles: newCache[*store.ItemArticle](cfg.Reuse)}
}

// Request is what to preview.
type Request struct {
	// Feed is a feed or site address as a person types it.
	Feed string
	// Format is a store.Format* ("" is the whole post).
	Format string
	// Delivery is Instant ("" too) or a digest schedule: a preset key or
	// any spec digest.ParseSchedule takes.
	Delivery string
	// Zone is the reader's time zone ("" is UTC).
	Zone string
	// Client is who asks, for the per-client limit (an IP address, a
	// token); "" is not limited per client (the operator's command).
	Client string
}

// Result is a preview: the message as it would be sent, its subject and
// parts, and what the choice would cost.
type Result struct {
	FeedURL, FeedTitle string
	// Digest: the message is a sample digest issue.
	Digest              bool
	Subject, HTML, Text string
	Forecast            Forecast
	Message             *mail.Msg
	// Note says how the sample was chosen ("" when it is the newest post).
	Note string
}

// Problem is a request that cannot be previewed, in words a person can
// act on: a bad choice (Field "format", "delivery", "zone") or a feed
// that cannot be read (Field "feed", as signup words it).
type Problem struct {
	Field, Msg string
	// Detail is the precise reason when Msg is kept coarse for the public
	// (subscribe.FieldError.Why), for the operator's command line.
	Detail string
}

func (p *Problem) Error() string { return p.Field + ": " + p.Msg }

// LimitError is a preview refused by a rate limit; Wait is when to try
// again.
type LimitError struct{ Wait time.Duration }

func (e *LimitError) Error() string {
	return fmt.Sprintf("too many previews; try again in %s", e.Wait.Round(time.Second))
}

// choice is a checked request.
type choice struct {
	format string
	loc    *time.Location
	zone   string
	sched  *digest.Schedule // nil: instant
	name   string           // the digest's name, as signup would give it
}

// check returns the request's choices, or a Problem.
func check(r Request) (choice, error) {
	c := choice{format: store.FormatFull, zone: strings.TrimSpace(r.Zone)}
	if f := strings.TrimSpace(r.Format); f != "" {
		ctl, err := store.CheckControls(store.Controls{Format: &f})
		if err != nil {
			return c, &Problem{Field: "format", Msg: "pick one of full, summary, title or article"}
		}
		c.format = *ctl.Format
	}
	if c.zone == "" {
		c.zone = "UTC"
	}
	loc, err := time.LoadLocation(c.zone)
	if err != nil || c.zone == "Local" {
		return c, &Problem{Field: "zone", Msg: fmt.Sprintf("%q is not a time zone (e.g. Europe/Paris)", c.zone)}
	}
	c.loc = loc
	d := strings.TrimSpace(r.Delivery)
	if d == "" || d == Instant {
		return c, nil
	}
	if c.sched, err = digest.ParseSchedule(d, c.zone); err != nil {
		return c, &Problem{Field: "delivery", Msg: digest.ScheduleProblem(err)}
	}
	for _, p := range digest.Presets() {
		if strings.EqualFold(p.Key, d) || strings.EqualFold(p.Label, d) {
			c.name = subscribe.PresetName(&p)
		}
	}
	return c, nil
}

// Preview returns the email req would make. Errors are a *Problem, a
// *LimitError, or a failure of feedmail's own (the database).
func (s *Service) Preview(ctx context.Context, req Request) (*Result, error) {
	c, err := check(req)
	if err != nil {
		return nil, err
	}
	addr, msg := subscribe.NormalizeFeedURL(req.Feed)
	if msg != "" {
		return nil, &Problem{Field: "feed", Msg: msg}
	}
	now := s.cfg.Subs.Clock.Now()
	if ok, wait := s.perClient.allow(req.Client, now); !ok {
		return nil, &LimitError{Wait: wait}
	}
	if ok, wait := s.byFeed.allow(addr, now); !ok {
		return nil, &LimitError{Wait: wait}
	}
	src, err := s.source(ctx, req.Feed, addr)
	if err != nil {
		return nil, err
	}
	res := &Result{FeedURL: src.feed.URL, FeedTitle: src.feed.Title, Forecast: forecastOf(src.items, c, now)}
	if c.sched != nil {
		err = s.composeDigest(res, src, c, now)
	} else {
		err = s.composeItem(ctx, res, src, c, now)
	}
	if err != nil {
		return nil, err
	}
	return res, nil
}

// composeItem makes res the email of the feed's newest post.
func (s *Service) composeItem(ctx context.Context, res *Result, src *source, c choice, now time.Time) error {
	it := newest(src.items)
	if it == nil {
		return &Problem{Field: "feed", Msg: "that feed has no posts yet, so there is nothing to show"}
	}
	var art *store.ItemArticle
	if c.format == store.FormatArticle {
		var err error
		if art, err = s.article(ctx, src, it); err != nil {
			return err
		}
	}
	m, err := s.cfg.Sender.PreviewItem(s.cfg.Links, &src.feed, it, c.format, c.loc, art, now)
	if err != nil {
		return fmt.Errorf("preview: compose: %w", err)
	}
	return fill(res, m)
}

// composeDigest makes res a sample issue of the digest from the feed's
// recent posts.
func (s *Service) composeDigest(res *Result, src *source, c choice, now time.Time) error {
	slot, items, more, note := sample(src.items, c.sched, now)
	if len(items) == 0 {
		return &Problem{Field: "feed", Msg: "that feed has no posts yet, so there is nothing to show"}
	}
	issue := &store.IssueContent{
		Issue:  store.DigestIssue{SlotAt: slot},
		Digest: store.Digest{Name: c.name, Schedule: c.sched.Spec(), Timezone: c.zone},
		Feeds: []store.IssueFeed{{FeedID: src.feed.ID, Title: src.feed.Title, URL: src.feed.URL, SiteURL: src.feed.SiteURL,
			Format: c.format, Items: items, More: more}},
	}
	m, err := s.cfg.Sender.PreviewDigest(s.cfg.Links, issue, now)
	if errors.Is(err, mailer.ErrEmptyDigest) {
		return &Problem{Field: "feed", Msg: "that feed has no posts yet, so there is nothing to show"}
	}
	if err != nil {
		return fmt.Errorf("preview: compose digest: %w", err)
	}
	res.Digest, res.Note = true, note
	return fill(res, m)
}

// fill sets res's message, subject and parts from m.
func fill(res *Result, m *mail.Msg) error {
	res.Message = m
	if v := m.GetGenHeader(mail.HeaderSubject); len(v) > 0 {
		res.Subject = v[0]
	}
	for _, p := range m.GetParts() {
		b, err := p.GetContent()
		if err != nil {
			return fmt.Errorf("preview: part: %w", err)
		}
		switch p.GetContentType() {
		case mail.TypeTextHTML:
			res.HTML = string(b)
		case mail.TypeTextPlain:
			res.Text = string(b)
		}
	}
	return nil
}
