package poller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/recovery"
	"github.com/feedmail/feedmail/internal/store"
)

// Verdicts of a rediscovery, as `feedmail feed recover` prints them.
const (
	VerdictHealthy = "healthy"
	VerdictMoved   = "moved"
	VerdictOffered = "offered"
	VerdictNone    = "none"
)

// RecoveryBudget is the most requests one rediscovery attempt makes.
const RecoveryBudget = 12

// RecoverOptions says how Recover runs.
type RecoverOptions struct {
	// Operator: run now for a feed whose last poll failed or that is
	// stale, without waiting for the ailing rule (`feedmail feed recover`).
	Operator bool
	// Apply carries the verdict out: readers moved, offered or told.
	Apply bool
}

// RecoverReport is what one rediscovery found and did.
type RecoverReport struct {
	Feed       string               `json:"feed"`
	State      string               `json:"state"` // healthy, failing, ailing, stale, or the feed's own state
	Verdict    string               `json:"verdict"`
	To         string               `json:"to,omitempty"`
	Candidates []recovery.Candidate `json:"candidates"`
	Tried      []string             `json:"tried"`
	Requests   int                  `json:"requests"`
	Applied    bool                 `json:"applied"`
	Readers    int                  `json:"readers"` // subscriptions moved or offered
	Told       int                  `json:"told"`    // notices queued
}

// Recover runs one rediscovery attempt for feed feedID now and, with
// o.Apply, carries out its verdict. Without o.Operator only a feed that
// is ailing or stale is looked at; with it, any feed whose last poll failed
// too. A feed that is neither gets the verdict "healthy" without a request.
func (p *Poller) Recover(ctx context.Context, feedID int64, o RecoverOptions) (*RecoverReport, error) {
	f, err := p.st.FeedByID(ctx, feedID)
	if err != nil {
		return nil, fmt.Errorf("poller: recover: %w", err)
	}
	now := p.clk.Now()
	rep := &RecoverReport{Feed: f.URL, Candidates: []recovery.Candidate{}, Tried: []string{}}
	if f.State != store.FeedActive && f.State != store.FeedBlacklisted {
		rep.State, rep.Verdict = f.State, VerdictNone
		return rep, nil
	}
	staleAt, err := p.staleAt(ctx, f)
	if err != nil {
		return nil, err
	}
	stale := !staleAt.IsZero() && !now.Before(staleAt)
	rep.State = healthWord(f, stale, now)
	failing := f.ConsecutiveErrors > 0
	if !(Ailing(f, now) || stale || (o.Operator && failing)) {
		rep.Verdict = VerdictHealthy
		if o.Apply {
			return rep, p.planNextLook(ctx, f, staleAt, now)
		}
		return rep, nil
	}
	known, err := p.known(ctx, f, !failing)
	if err != nil {
		return nil, err
	}
	res := recovery.Attempt(ctx, known, p.recoveryFetch(f), RecoveryBudget)
	rep.Candidates, rep.Tried, rep.Requests = nonNil(res.Candidates), nonNilStr(res.Tried), res.Requests
	rep.Verdict, rep.To = verdictOf(res.Verdict), res.To
	if o.Apply {
		if err := p.applyRecovery(ctx, f, res, rep, now); err != nil {
			return rep, err
		}
		rep.Applied = true
	}
	return rep, nil
}

// staleAt is when feed f, answering without error, will have been silent
// for longer than its own history explains (StaleAfter its longest gap
// since its last new post); zero for a failing feed or one never seen to
// post.
func (p *Poller) staleAt(ctx context.Context, f *store.Feed) (time.Time, error) {
	if f.ConsecutiveErrors > 0 || f.LastNewItemAt == nil {
		return time.Time{}, nil
	}
	dates, err := p.st.ItemDates(ctx, f.ID, 100)
	if err != nil {
		return time.Time{}, fmt.Errorf("poller: recover: %w", err)
	}
	return f.LastNewItemAt.Add(StaleAfter(LongestGap(dates))), nil
}

// planNextLook records when the worker should look at feed f again, found
// fine at now: when it would be ailing if it fails, or stale if it stays
// silent (staleAt), a week on otherwise; never sooner than an hour.
func (p *Poller) planNextLook(ctx context.Context, f *store.Feed, staleAt, now time.Time) error {
	next := now.Add(StaleRecheck)
	switch {
	case f.ConsecutiveErrors > 0 && f.ErrorsSince != nil:
		next = f.ErrorsSince.Add(AilingAfter)
	case !staleAt.IsZero():
		next = staleAt
	}
	if soon := now.Add(time.Hour); next.Before(soon) {
		next = soon
	}
	return p.st.PlanRecovery(ctx, f.ID, next)
}

// healthWord is the state Recover reports for f.
func healthWord(f *store.Feed, stale bool, now time.Time) string {
	switch {
	case f.State != store.FeedActive:
		return f.State
	case Ailing(f, now):
		return "ailing"
	case f.ConsecutiveErrors > 0:
		return "failing"
	case stale:
		return "stale"
	}
	return VerdictHealthy
}

// known is what the store knows of f for a rediscovery: its address, title,
// site, self link and recent items.
func (p *Poller) known(ctx context.Context, f *store.Feed, frozen bool) (recovery.Known, error) {
	items, err := p.st.ItemsOfFeed(ctx, f.ID, 100)
	if err != nil {
		return recovery.Known{}, fmt.Errorf("poller: recover: %w", err)
	}
	// The store keeps a feed's self link as its WebSub topic (with the hub
	// it advertised), when it advertised one.
	k := recovery.Known{URL: f.URL, SiteURL: f.SiteURL, Title: f.Title, Frozen: frozen,
		SelfURL: f.WebSubTopic, HubURL: f.WebSubHub}
	if f.NewestItemDate != nil {
		k.NewestItemDate = *f.NewestItemDate
	}
	for _, it := range items {
		ki := recovery.KnownItem{GUID: it.GUID, Link: it.Link, Title: it.Title}
		if it.PublishedAt != nil {
			ki.Published = *it.PublishedAt
		}
		k.Items = append(k.Items, ki)
	}
	return k, nil
}

// recoveryFetch is the Fetch of a rediscovery of feed f: one GET through
// the poller's client, behind the host limiter, never to a host that is
// backed off. Publishers see the same User-Agent as in a poll.
func (p *Poller) recoveryFetch(f *store.Feed) recovery.Fetch {
	return func(ctx context.Context, raw string) (*fetcher.Response, error) {
		host := store.HostOf(raw)
		rows, err := p.st.Hosts(ctx, []string{host})
		if err != nil {
			return nil, err
		}
		if until, why, ok := p.backedOff(host, rows[host]); ok {
			return nil, fmt.Errorf("host %s backed off until %s: %s", host, until.UTC().Format(time.RFC3339), why)
		}
		actx, cancel := context.WithTimeout(ctx, time.Minute)
		release, err := p.limiter.Acquire(actx, host)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("host %s busy: %w", host, err)
		}
		defer release()
		return p.client.Fetch(ctx, fetcher.Request{URL: raw, Subscribers: f.SubscriberCount})
	}
}

func verdictOf(v string) string {
	switch v {
	case VerdictMoved, VerdictOffered:
		return v
	}
	return VerdictNone
}

func nonNil(c []recovery.Candidate) []recovery.Candidate {
	if c == nil {
		return []recovery.Candidate{}
	}
	return c
}

func nonNilStr(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// RecoverDue runs the rediscovery attempts that are due (at most limit),
// each claimed first so that processes share the work, and returns how
// many ran. A failure of one is logged and the others go on.
func (p *Poller) RecoverDue(ctx context.Context, limit int) (int, error) {
	now := p.clk.Now()
	feeds, err := p.st.DueRecoveries(ctx, now, now.Add(-AilingAfter), now.Add(-StaleMin), AilingPolls, limit)
	if err != nil {
		return 0, fmt.Errorf("poller: %w", err)
	}
	n := 0
	for i := range feeds {
		f := &feeds[i]
		ok, err := p.st.ClaimRecovery(ctx, f.ID, now, now.Add(time.Hour))
		if err != nil {
			return n, fmt.Errorf("poller: %w", err)
		}
		if !ok {
			continue
		}
		rep, err := p.Recover(ctx, f.ID, RecoverOptions{Apply: true})
		if err != nil {
			if errors.Is(err, context.Canceled) {
				return n, err
			}
			p.log.Warn("rediscovery failed", "feed", f.ID, "url", f.URL, "err", err)
			continue
		}
		n++
		if rep.Verdict != VerdictHealthy {
			p.log.Info("rediscovery", "feed", f.ID, "url", f.URL, "state", rep.State, "verdict", rep.Verdict,
				"to", rep.To, "requests", rep.Requests, "readers", rep.Readers, "told", rep.Told)
		}
	}
	return n, nil
}

// RunRecovery runs RecoverDue every interval until ctx ends.
func (p *Poller) RunRecovery(ctx context.Context, every time.Duration) error {
	for {
		if _, err := p.RecoverDue(ctx, 50); err != nil && ctx.Err() == nil {
			p.log.Warn("rediscovery pass failed", "err", err)
		}
		t := time.NewTimer(every)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// noteOf is the JSON of a report, kept on the feed for its status.
func noteOf(rep *RecoverReport) string {
	b, err := json.Marshal(rep)
	if err != nil {
		return ""
	}
	return string(b)
}
