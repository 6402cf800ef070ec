package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/poller"
)

const feedStatusUsage = "URL"

const feedHostUsage = "HOST [--min-interval DURATION]"

// feedStatus is what `feedmail feed status` prints.
type feedStatus struct {
	ID                int64          `json:"id"`
	URL               string         `json:"url"`
	Title             string         `json:"title"`
	SiteURL           string         `json:"site_url,omitempty"`
	State             string         `json:"state"`
	NextPollAt        string         `json:"next_poll_at,omitempty"` // RFC 3339; only while polled
	Reason            string         `json:"reason"`
	Subscribers       int            `json:"subscribers"`
	LastPolledAt      *time.Time     `json:"last_polled_at"`
	LastStatus        int            `json:"last_status"`
	LastError         string         `json:"last_error,omitempty"`
	LastElapsedMS     int            `json:"last_elapsed_ms"`
	LastSuccessAt     *time.Time     `json:"last_success_at"`
	Validators        feedValidators `json:"validators"`
	ConsecutiveErrors int            `json:"consecutive_errors"`
	ErrorsSince       *time.Time     `json:"errors_since"`
	PrimedAt          *time.Time     `json:"primed_at"`
	LastNewItemAt     *time.Time     `json:"last_new_item_at"`
	NewestItemDate    *time.Time     `json:"newest_item_date"`
	Items             feedItemCounts `json:"items"`
	WebSub            *feedWebSub    `json:"websub,omitempty"`
	Host              *feedHost      `json:"host,omitempty"`
	Owner             *feedOwnerJSON `json:"owner,omitempty"` // owner-paid feeds only
	// Health is poller.Health: healthy, failing, ailing, frozen, moved, …
	Health      string            `json:"health"`
	Recovery    *feedRecoveryJSON `json:"recovery,omitempty"` // once rediscovery looked at the feed
	RecentPolls []feedPollEntry   `json:"recent_polls"`
}

// feedRecoveryJSON is where rediscovery stands for a feed that moved or
// died: its state, attempts, the last attempt's report and the moves of
// its readers.
type feedRecoveryJSON struct {
	State         string          `json:"state"`
	Attempts      int             `json:"attempts"`
	LastAttemptAt *time.Time      `json:"last_attempt_at"`
	NextAttemptAt *time.Time      `json:"next_attempt_at"`
	Last          json.RawMessage `json:"last,omitempty"`
	Moves         []feedMoveJSON  `json:"moves"`
}

type feedMoveJSON struct {
	ToFeedID      int64     `json:"to_feed_id"`
	Kind          string    `json:"kind"`
	FoundBy       string    `json:"found_by"`
	PostsInCommon int       `json:"posts_in_common"`
	At            time.Time `json:"at"`
}

// feedRecoveryOf is the recovery part of `feed status`: nil for a feed
// rediscovery never looked at.
func feedRecoveryOf(ctx context.Context, s *store.Store, f *store.Feed) (*feedRecoveryJSON, error) {
	moves, err := s.FeedMovesFrom(ctx, f.ID)
	if err != nil {
		return nil, err
	}
	if f.RecoveryAt == nil && len(moves) == 0 {
		return nil, nil
	}
	out := &feedRecoveryJSON{State: f.RecoveryState, Attempts: f.RecoveryAttempts, LastAttemptAt: f.RecoveryAt,
		NextAttemptAt: f.RecoveryNextAt, Moves: []feedMoveJSON{}}
	if json.Valid([]byte(f.RecoveryNote)) {
		out.Last = json.RawMessage(f.RecoveryNote)
	}
	for _, m := range moves {
		out.Moves = append(out.Moves, feedMoveJSON{ToFeedID: m.ToFeedID, Kind: m.Kind, FoundBy: m.FoundBy,
			PostsInCommon: m.PostsInCommon, At: m.CreatedAt.UTC()})
	}
	return out, nil
}

type feedValidators struct {
	URL          string `json:"url"` // the final URL they came from
	ETag         string `json:"etag"`
	LastModified string `json:"last_modified"`
}

type feedItemCounts struct {
	Recorded int64 `json:"recorded"`
	Ignored  int64 `json:"ignored"`
}

type feedWebSub struct {
	State     string     `json:"state"`
	Hub       string     `json:"hub"`
	Topic     string     `json:"topic"`
	ExpiresAt *time.Time `json:"expires_at"`
}

type feedHost struct {
	Host               string     `json:"host"`
	MinIntervalSeconds int        `json:"min_interval_seconds"`
	BackoffUntil       *time.Time `json:"backoff_until,omitempty"`
	BackoffReason      string     `json:"backoff_reason,omitempty"`
}

type feedPollEntry struct {
	PolledAt    time.Time `json:"polled_at"`
	URL         string    `json:"url"`
	Status      int       `json:"status"`
	Outcome     string    `json:"outcome"`
	Conditional bool      `json:"conditional"`
	Bytes       int64     `json:"bytes"`
	ElapsedMS   int       `json:"elapsed_ms"`
	NewItems    int       `json:"new_items"`
	Reason      string    `json:"reason"`
	// Repeats counts the identical polls (304 after 304) folded into this
	// line after it.
	Repeats int64 `json:"repeats"`
}

// recentPolls is how many poll_log rows `feed status` shows.
const recentPolls = 10

// cmdFeedStatus prints why a feed is polled when it is, as JSON.
func cmdFeedStatus(ctx context.Context, a *app, args []string) error {
	raw, err := a.oneFeedArg("feed status", args)
	if err != nil {
		return err
	}
	s, err := a.openExistingStore(ctx)
	if err != nil {
		return err
	}
	f, err := s.FeedByURL(ctx, raw)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("no feed with URL %s (`feedmail poll %s` adds and polls it)", raw, raw)
	}
	if err != nil {
		return err
	}
	out := feedStatus{
		ID: f.ID, URL: f.URL, Title: f.Title, SiteURL: f.SiteURL, State: f.State, Reason: f.PollReason,
		Subscribers: f.SubscriberCount, LastPolledAt: f.LastPolledAt, LastStatus: f.LastStatus,
		LastError: f.LastError, LastElapsedMS: f.LastElapsedMS, LastSuccessAt: f.LastSuccessAt,
		Validators:        feedValidators{URL: f.ValidatorURL, ETag: f.ETag, LastModified: f.LastModified},
		ConsecutiveErrors: f.ConsecutiveErrors, ErrorsSince: f.ErrorsSince, PrimedAt: f.PrimedAt,
		LastNewItemAt: f.LastNewItemAt, NewestItemDate: f.NewestItemDate, RecentPolls: []feedPollEntry{},
	}
	if f.State == store.FeedActive {
		if f.SubscriberCount > 0 {
			out.NextPollAt = f.NextPollAt.UTC().Format(time.RFC3339)
		} else {
			out.Reason = "nobody follows this feed: not polled (" + f.PollReason + ")"
		}
	}
	if out.Items.Recorded, out.Items.Ignored, err = s.CountItems(ctx, f.ID); err != nil {
		return err
	}
	if f.WebSubState != "" {
		out.WebSub = &feedWebSub{State: f.WebSubState, Hub: f.WebSubHub, Topic: f.WebSubTopic, ExpiresAt: f.WebSubExpiresAt}
	}
	host := store.HostOf(f.URL)
	hosts, err := s.Hosts(ctx, []string{host})
	if err != nil {
		return err
	}
	if h, ok := hosts[host]; ok {
		out.Host = &feedHost{Host: h.Host, MinIntervalSeconds: h.MinIntervalSeconds, BackoffUntil: h.BackoffUntil, BackoffReason: h.BackoffReason}
	}
	if out.Owner, err = feedOwnerOf(ctx, s, f); err != nil {
		return err
	}
	out.Health = poller.Health(f, a.clock.Now())
	if out.Recovery, err = feedRecoveryOf(ctx, s, f); err != nil {
		return err
	}
	polls, err := s.RecentPolls(ctx, f.ID, recentPolls)
	if err != nil {
		return err
	}
	repeats := store.Repeats(f, polls)
	for i, p := range polls {
		out.RecentPolls = append(out.RecentPolls, feedPollEntry{PolledAt: p.PolledAt, URL: p.URL, Status: p.Status,
			Outcome: p.Outcome, Conditional: p.Conditional, Bytes: p.Bytes, ElapsedMS: p.ElapsedMS,
			NewItems: p.NewItems, Reason: p.Reason, Repeats: repeats[i]})
	}
	return a.printJSON(out)
}

// cmdFeedHost shows, and with --min-interval sets, the politeness settings
// of a host: the operator's minimum poll interval for every feed on it
// (0 removes it) and any running back-off.
func cmdFeedHost(ctx context.Context, a *app, args []string) error {
	fs := flags(a, "feed host")
	minIvText := fs.String("min-interval", "", "minimum time between two polls of any feed on the host, e.g. 10m (0 removes it; left out: show only)")
	// Accept the host before or after the flag.
	var host string
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		host, args = args[0], args[1:]
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if host == "" && fs.NArg() == 1 {
		host = fs.Arg(0)
	} else if fs.NArg() != 0 || host == "" {
		return fmt.Errorf("%w: give exactly one host name", errUsage)
	}
	minIv := time.Duration(-1) // not given: show only
	if *minIvText != "" {
		d, err := time.ParseDuration(*minIvText)
		switch {
		case err != nil:
			return fmt.Errorf("%w: --min-interval %q is not a duration like 10m or 2h", errUsage, *minIvText)
		case d < 0:
			return fmt.Errorf("%w: --min-interval must not be negative", errUsage)
		}
		minIv = d
	}
	key := store.HostOf("http://" + host + "/")
	if key == "" {
		return fmt.Errorf("%w: %q is not a host name", errUsage, host)
	}
	s, err := a.openStore(ctx)
	if err != nil {
		return err
	}
	if minIv >= 0 {
		if err := s.SetHostMinInterval(ctx, key, minIv); err != nil {
			return err
		}
	}
	hosts, err := s.Hosts(ctx, []string{key})
	if err != nil {
		return err
	}
	h := hosts[key]
	return a.printJSON(feedHost{Host: key, MinIntervalSeconds: h.MinIntervalSeconds, BackoffUntil: h.BackoffUntil, BackoffReason: h.BackoffReason})
}
