package faults

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/feedmail/feedmail/internal/newitems"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/farm"
	"github.com/feedmail/feedmail/internal/testkit/smtptest"
	"github.com/feedmail/feedmail/poller"
)

// feedRow is one hostile feed server of the matrix.
type feedRow struct {
	name string
	// hostile is merged into the good feed's spec (Hostile, Latency,
	// TrickleEvery, BombBytes, ItemCount).
	hostile farm.Spec
	// outcome is the poll_log outcome the hostile poll must record.
	outcome string
	// reason, for a failure, is the public reason of the decision: the
	// failure text followed by the first step of the growing penalty.
	reason string
	// timeout, when set, replaces the 2 s fetch timeout of the test.
	timeout time.Duration
	// check runs extra checks after the hostile poll (nil: none).
	check func(t *testing.T, e *env, f *store.Feed, before map[string]string)
}

const firstPenalty = ": penalty 1 h (1st consecutive error)"

// feedRows is the feed half of the matrix. Every failure row gets the first
// step of the growing penalty (1 h, then 2 h, 4 h … capped at 24 h) with a
// reason naming what went wrong (docs/design.md, "Errors"); the limits are the
// production ones (10 MB after decompression, 5 redirects, 1000 items)
// except the 30 s timeout, cut to 2 s for the test.
var feedRows = []feedRow{
	{name: "hangs before answering", hostile: farm.Spec{Latency: time.Minute},
		outcome: "failure", reason: "timeout" + firstPenalty},
	{name: "trickles one byte per 200 ms", hostile: farm.Spec{Hostile: farm.Trickle, TrickleEvery: 200 * time.Millisecond},
		outcome: "failure", reason: "timeout" + firstPenalty},
	// Reading 10 MB may take longer than 2 s under the race detector on a
	// loaded machine: these rows get the production 30 s, as below.
	{name: "endless body", hostile: farm.Spec{Hostile: farm.Endless},
		timeout: 30 * time.Second, outcome: "failure", reason: "body too large" + firstPenalty},
	{name: "gzip bomb (1 GiB of zeros)", hostile: farm.Spec{Hostile: farm.GzipBomb},
		timeout: 30 * time.Second, outcome: "failure", reason: "body too large" + firstPenalty},
	{name: "redirect loop", hostile: farm.Spec{Hostile: farm.RedirectLoop},
		outcome: "failure", reason: "too many redirects" + firstPenalty},
	{name: "Content-Length 1000 bytes longer than the body", hostile: farm.Spec{Hostile: farm.LyingLength},
		outcome: "failure", reason: "connection failed" + firstPenalty},
	{name: "connection reset before the answer", hostile: farm.Spec{Hostile: farm.Reset},
		outcome: "failure", reason: "connection failed" + firstPenalty},
	{name: "HTML page instead of a feed", hostile: farm.Spec{Hostile: farm.HTMLPage},
		outcome: "failure", reason: "not a feed" + firstPenalty},
	// The production 30 s timeout: generating 10 MB of items may take the
	// farm longer than 2 s under the race detector.
	{name: "1,000,000 items (over 10 MB)", hostile: farm.Spec{Hostile: farm.HugeItems, ItemCount: 1_000_000},
		timeout: 30 * time.Second, outcome: "failure", reason: "body too large" + firstPenalty},
	{name: "XML entity bomb (billion laughs)", hostile: farm.Spec{Hostile: farm.EntityBomb}, outcome: "ok",
		check: func(t *testing.T, e *env, f *store.Feed, _ map[string]string) {
			// The entities are never expanded: the title is the literal
			// reference or nothing, not 3 GB of "lol".
			t.Logf("entity bomb title stored as %q", f.Title)
			if len(f.Title) > 100 || strings.Contains(f.Title, "lollol") {
				t.Errorf("entity expanded into the title: %d bytes", len(f.Title))
			}
		}},
	{name: "invalid UTF-8 in titles", hostile: farm.Spec{Hostile: farm.InvalidUTF8}, outcome: "ok",
		check: func(t *testing.T, e *env, f *store.Feed, _ map[string]string) {
			// The document parses; whatever is stored is valid UTF-8.
			if !utf8.ValidString(f.Title) || f.Title == "" {
				t.Errorf("feed title %q", f.Title)
			}
			for id, title := range e.items(f.ID) {
				if !utf8.ValidString(title) {
					t.Errorf("item %s: title %q is not UTF-8", id, title)
				}
			}
		}},
	{name: "20,000 items (under 10 MB)", hostile: farm.Spec{Hostile: farm.HugeItems, ItemCount: 20_000},
		timeout: 30 * time.Second, outcome: "ok",
		check: func(t *testing.T, e *env, f *store.Feed, before map[string]string) {
			// Only the first 1000 items of the document are looked at.
			after := e.items(f.ID)
			if added := len(after) - len(before); added <= 0 || added > newitems.MaxItems {
				t.Errorf("%d items recorded by the poll, want 1 to %d", added, newitems.MaxItems)
			}
			// Of those, the "older than the 10th newest" rule lets at most
			// ten through: ten emails per subscriber at most.
			queued := 0
			for _, r := range e.outbox() {
				if r.State == store.OutboxQueued {
					queued++
				}
			}
			if queued > 2+2*10 {
				t.Errorf("%d emails queued, want at most 22", queued)
			}
		}},
}

// TestFeedFaults drives each hostile feed through poller.PollDue on a real
// store, with two subscribers who already have email queued from an
// earlier post, and checks the outcome, that nothing stored was lost, that
// a later good poll delivers the next post, and finally that the outbox
// worker sends every queued email exactly once.
func TestFeedFaults(t *testing.T) {
	for _, row := range feedRows {
		t.Run(row.name, func(t *testing.T) {
			t.Parallel()
			runFeedRow(t, row)
		})
	}
}

func runFeedRow(t *testing.T, row feedRow) {
	e := newEnv(t)
	readers := []string{"ann@example.net", "bob@example.net"}
	ff := e.fm.AddFeed(farm.Spec{Title: "Good feed", ItemCount: 4, ItemInterval: time.Hour,
		ETag: farm.ETagStrong, LastModified: true})
	f := e.follow(ff.URL(), 100, readers...)
	p := e.poller(func(c *poller.Config) {
		if row.timeout > 0 {
			c.Fetch.Timeout = row.timeout
		}
	})

	// Prime (everything seen, nothing mailed), then one new post: one
	// queued email per reader, left unsent on purpose.
	e.pass(p, 1)
	e.clk.Advance(10 * time.Minute)
	ff.Publish()
	e.pass(p, 1)
	if n := e.outboxIn(store.OutboxQueued); n != len(readers) {
		t.Fatalf("%d emails queued before the fault, want %d", n, len(readers))
	}
	good := ff.Spec()
	beforeFeed := e.feed(f.ID)
	beforeItems := e.items(f.ID)
	beforeRows := e.outbox()
	pollsBefore := counter(t, e.m.Polls.WithLabelValues(row.outcome, "0"))

	// The fault.
	hostile := good
	hostile.Hostile = row.hostile.Hostile
	hostile.Latency = row.hostile.Latency
	hostile.TrickleEvery = row.hostile.TrickleEvery
	hostile.BombBytes = row.hostile.BombBytes
	if row.hostile.ItemCount > 0 {
		hostile.ItemCount = row.hostile.ItemCount
	}
	ff.SetSpec(hostile)
	e.clk.Advance(10 * time.Minute)
	start := time.Now()
	e.pass(p, 1)
	if d := time.Since(start); d > 3*max(fetchTimeout, row.timeout)+10*time.Second {
		t.Errorf("the hostile poll took %v", d)
	}
	after := e.feed(f.ID)
	lp := e.lastPoll(f.ID)
	if lp.Outcome != row.outcome {
		t.Fatalf("poll outcome %q (status %d, reason %q, error %q), want %q", lp.Outcome, lp.Status,
			after.PollReason, after.LastError, row.outcome)
	}
	if after.State != store.FeedActive || after.LeaseOwner != "" {
		t.Errorf("after the fault: state %q, lease %q", after.State, after.LeaseOwner)
	}
	if row.outcome == "failure" {
		if after.PollReason != row.reason || lp.Reason != row.reason {
			t.Errorf("reason %q (poll_log %q), want %q", after.PollReason, lp.Reason, row.reason)
		}
		if d := after.NextPollAt.Sub(e.clk.Now()); d < time.Hour || d > time.Hour+6*time.Minute {
			t.Errorf("next poll in %v, want 1 h plus at most 10 %% jitter", d)
		}
		if after.ConsecutiveErrors != 1 || after.ErrorsSince == nil || after.LastError == "" {
			t.Errorf("error streak %d since %v, last error %q", after.ConsecutiveErrors, after.ErrorsSince, after.LastError)
		}
		// A failure keeps what the last good poll stored.
		if after.ETag != beforeFeed.ETag || after.LastModified != beforeFeed.LastModified ||
			after.BodyHash != beforeFeed.BodyHash || after.Title != beforeFeed.Title || after.PrimedAt == nil {
			t.Errorf("stored feed state changed:\n before %+v\n after  %+v", beforeFeed, after)
		}
		if got := len(e.items(f.ID)); got != len(beforeItems) {
			t.Errorf("%d items after the fault, had %d", got, len(beforeItems))
		}
		if got := len(e.outbox()); got != len(beforeRows) {
			t.Errorf("%d outbox rows after the fault, had %d", got, len(beforeRows))
		}
	} else if after.ConsecutiveErrors != 0 || strings.Contains(after.PollReason, "penalty") {
		t.Errorf("a success was penalised: %q (%d errors)", after.PollReason, after.ConsecutiveErrors)
	}
	if row.check != nil {
		row.check(t, e, after, beforeItems)
	}
	e.keepsAll(f.ID, beforeItems, beforeRows)
	if lp.Status == 0 && counter(t, e.m.Polls.WithLabelValues(row.outcome, "0")) != pollsBefore+1 {
		t.Errorf("feedmail_polls_total{outcome=%q,status=\"0\"} did not count the poll", row.outcome)
	}
	t.Logf("outcome %s, status %d: %s (%s)", lp.Outcome, lp.Status, after.PollReason, after.LastError)

	// The publisher fixes the server and posts again: the next poll (after
	// the penalty) is a success that delivers the new post.
	ff.SetSpec(good)
	e.clk.Advance(time.Minute)
	ff.Publish(farm.Item{ID: "after-the-fault", Title: "After the fault", Link: ff.URL() + "/i/after",
		Content: "<p>Back to normal.</p>", Published: e.clk.Now()})
	queuedBefore := e.outboxIn(store.OutboxQueued)
	e.clk.Set(e.feed(f.ID).NextPollAt.Add(time.Second))
	e.pass(p, 1)
	rec := e.feed(f.ID)
	if lp := e.lastPoll(f.ID); lp.Outcome != "ok" || rec.ConsecutiveErrors != 0 || rec.ErrorsSince != nil {
		t.Fatalf("recovery poll: outcome %q, errors %d, reason %q", lp.Outcome, rec.ConsecutiveErrors, rec.PollReason)
	}
	if got := e.outboxIn(store.OutboxQueued); got != queuedBefore+len(readers) {
		t.Errorf("recovery poll queued %d emails, want %d", got-queuedBefore, len(readers))
	}
	e.keepsAll(f.ID, beforeItems, beforeRows)

	// And the mailer sends everything that was queued, once each.
	srv := smtptest.StartT(t, smtptest.Options{})
	ob := e.outboxWorker(smtpTo(t, srv, "pool=1"))
	want := e.outboxIn(store.OutboxQueued)
	for range 5 {
		if e.send(ob) == 0 {
			break
		}
	}
	if n := e.outboxIn(store.OutboxSent); n != want {
		t.Errorf("%d of %d queued emails sent", n, want)
	}
	ids := messageIDs(srv)
	if len(ids) != want {
		t.Errorf("%d distinct messages on the wire, want %d", len(ids), want)
	}
	for id, n := range ids {
		if n != 1 {
			t.Errorf("message %s sent %d times", id, n)
		}
	}
}
