package digest_test

import (
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/model"
	"github.com/feedmail/feedmail/internal/store"
)

// TestPausedDigestWaitsThenCoversThePause: while a digest subscription is
// paused its slots pass without an issue (nothing sent or charged); the
// first slot after resuming sends one issue with everything queued before
// and during the pause. Another subscription of the same digest, not
// paused, keeps getting its issues.
func TestPausedDigestWaitsThenCoversThePause(t *testing.T) {
	e := newEnv(t, utc("2026-05-04T06:00:00Z"))
	p := e.newPerson("pause@example.com", "Morning", "daily", "UTC", 2)
	paused := p.subs[0]
	p.queue(e, 0, "before the pause", "", time.Time{})
	if err := e.st.Pause(e.ctx, p.user.ID, paused.ID, nil); err != nil {
		t.Fatal(err)
	}
	p.queue(e, 0, "during the pause", "", time.Time{})
	p.queue(e, 1, "other feed", "", time.Time{})

	e.clk.Set(utc("2026-05-04T07:00:30Z")) // first slot: only the other feed
	e.assemble()
	is := e.issues(p.digest.ID)
	if len(is) != 1 || is[0].ItemCount != 1 || is[0].FeedCount != 1 {
		t.Fatalf("issues while paused: %+v; want one with the other feed's item only", is)
	}
	if n := e.pending(p.digest.ID); n != 2 {
		t.Fatalf("%d items waiting, want the paused feed's 2", n)
	}
	e.clk.Set(utc("2026-05-05T07:00:30Z")) // second slot: nothing unpaused waits
	e.assemble()
	if is := e.issues(p.digest.ID); len(is) != 1 {
		t.Fatalf("%d issues after a paused slot, want still 1", len(is))
	}
	if ob := e.outbox(p.user.ID); len(ob) != 1 {
		t.Fatalf("%d digest emails, want 1", len(ob))
	}

	if _, err := e.st.Resume(e.ctx, p.user.ID, paused.ID); err != nil {
		t.Fatal(err)
	}
	e.clk.Set(utc("2026-05-06T07:00:30Z"))
	e.assemble()
	is = e.issues(p.digest.ID)
	if len(is) != 2 || is[1].ItemCount != 2 || is[1].FeedCount != 1 {
		t.Fatalf("issues after resuming: %+v; want a second with both items of the paused feed", is)
	}
	c, err := e.st.DigestIssueContent(e.ctx, is[1].ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Feeds) != 1 || len(c.Feeds[0].Items) != 2 {
		t.Fatalf("issue content %+v", c.Feeds)
	}
}

// TestPausedAccountDigestUntil: an account paused until a time gets no
// issue before it; the first slot after it ends sends one, without anyone
// resuming.
func TestPausedAccountDigestUntil(t *testing.T) {
	e := newEnv(t, utc("2026-05-04T06:00:00Z"))
	p := e.newPerson("until@example.com", "Morning", "daily", "UTC", 1)
	until := utc("2026-05-05T12:00:00Z")
	if err := e.st.Pause(e.ctx, p.user.ID, 0, &until); err != nil {
		t.Fatal(err)
	}
	p.queue(e, 0, "one", "", time.Time{})
	e.clk.Set(utc("2026-05-05T07:00:30Z"))
	e.assemble()
	p.queue(e, 0, "two", "", time.Time{})
	if is := e.issues(p.digest.ID); len(is) != 0 {
		t.Fatalf("issues during the pause: %+v", is)
	}
	e.clk.Set(utc("2026-05-06T07:00:30Z"))
	e.assemble()
	is := e.issues(p.digest.ID)
	if len(is) != 1 || is[0].ItemCount != 2 {
		t.Fatalf("issues after the pause ended: %+v; want one with both items", is)
	}
	if ob := e.outbox(p.user.ID); len(ob) != 1 || ob[0].State != store.OutboxQueued {
		t.Fatalf("digest emails %+v", ob)
	}
}

// TestEditedItemInDigest: an item edited before its issue goes out is
// rendered in its latest version (the issue reads items when it is sent).
func TestEditedItemInDigest(t *testing.T) {
	e := newEnv(t, utc("2026-05-04T06:00:00Z"))
	p := e.newPerson("edit@example.com", "Morning", "daily", "UTC", 1)
	it := p.queue(e, 0, "First title", "<p>first</p>", time.Time{})
	// The poll's write of an edit, as a claimed feed's record.
	f := p.feeds[0]
	if _, err := e.st.ClaimFeedForPoll(e.ctx, f.ID, "w", time.Minute, e.clk.Now()); err != nil {
		t.Fatal(err)
	}
	now := e.clk.Now()
	out, err := e.st.RecordPoll(e.ctx, "w", store.PollRecord{FeedID: f.ID, At: now, URL: f.URL, Status: 200, Outcome: "ok",
		Edits: []store.ItemEdit{{Identity: it.Identity, Title: "Edited title", Content: "<p>edited</p>",
			ContentHash: store.Fingerprint("Edited title", "<p>edited</p>", model.ItemMedia{})}},
		State: store.FeedState{State: store.FeedActive, NextPollAt: now.Add(time.Hour), PrimedAt: &now}})
	if err != nil {
		t.Fatal(err)
	}
	if out.Edited != 1 || out.DigestItems != 0 {
		t.Fatalf("outcome %+v; want one edit and nothing queued", out)
	}
	e.clk.Set(utc("2026-05-04T07:00:30Z"))
	e.assemble()
	is := e.issues(p.digest.ID)
	if len(is) != 1 || is[0].ItemCount != 1 {
		t.Fatalf("issues %+v", is)
	}
	c, err := e.st.DigestIssueContent(e.ctx, is[0].ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Feeds[0].Items[0]; got.Title != "Edited title" || got.Content != "<p>edited</p>" {
		t.Fatalf("issue item %q %q; want the edited version", got.Title, got.Content)
	}
}
