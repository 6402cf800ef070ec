package digest_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/feedmail/feedmail/billing"
	"github.com/feedmail/feedmail/digest"
	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// TestChargeEndToEnd: an issue costs one credit per five feeds with items,
// rounded up, as written on its outbox row; every digest in the batch gets
// exactly one issue holding all its items.
func TestChargeEndToEnd(t *testing.T) {
	start := utc("2026-05-04T06:00:00Z")
	e := newEnv(t, start)
	tests := []struct {
		feeds, itemsPerFeed, want int
	}{
		{1, 1, 1}, {2, 3, 1}, {5, 1, 1}, {6, 1, 2}, {7, 2, 2}, {10, 1, 2}, {11, 1, 3}, {14, 1, 3}, {15, 1, 3}, {16, 1, 4},
	}
	people := make([]*person, len(tests))
	for i, tt := range tests {
		// One feed more than used: a feed without items costs nothing.
		p := e.newPerson(fmt.Sprintf("p%d@example.com", i), "Morning", "daily", "UTC", tt.feeds+1)
		for f := range tt.feeds {
			for k := range tt.itemsPerFeed {
				p.queue(e, f, fmt.Sprintf("f%d i%d", f, k), "", time.Time{})
			}
		}
		people[i] = p
	}
	e.clk.Set(utc("2026-05-04T07:00:30Z"))
	if n := e.assemble(); n != len(tests) {
		t.Fatalf("issued %d, want %d", n, len(tests))
	}
	for i, tt := range tests {
		p := people[i]
		is := e.issues(p.digest.ID)
		ob := e.outbox(p.user.ID)
		if len(is) != 1 || len(ob) != 1 {
			t.Fatalf("%d feeds: %d issues, %d emails", tt.feeds, len(is), len(ob))
		}
		if is[0].FeedCount != tt.feeds || is[0].ItemCount != tt.feeds*tt.itemsPerFeed || is[0].Credits != tt.want {
			t.Errorf("%d feeds: issue %+v, want %d credits", tt.feeds, is[0], tt.want)
		}
		o := ob[0]
		if o.Credits != tt.want || o.IssueID == nil || *o.IssueID != is[0].ID || o.State != store.OutboxQueued ||
			o.DedupeKey != "digest:"+strconv.FormatInt(is[0].ID, 10) || o.Address != p.user.Email || o.Kind != store.KindDigest {
			t.Errorf("%d feeds: outbox row %+v", tt.feeds, o)
		}
		if !is[0].SlotAt.Equal(utc("2026-05-04T07:00:00Z")) {
			t.Errorf("slot %s", is[0].SlotAt)
		}
		if n := e.pending(p.digest.ID); n != 0 {
			t.Errorf("%d items still waiting", n)
		}
		if d := e.digest(p.digest.ID); !d.NextSlotAt.Equal(utc("2026-05-05T07:00:00Z")) || d.LeaseOwner != "" {
			t.Errorf("digest after assembly: next %s, lease %q", d.NextSlotAt, d.LeaseOwner)
		}
	}
}

// TestEmptySlotSendsNothing: a slot with nothing waiting makes no issue and
// no email, costs nothing, and moves the digest on; the next slot with
// items is issued normally.
func TestEmptySlotSendsNothing(t *testing.T) {
	e := newEnv(t, utc("2026-05-04T06:00:00Z"))
	p := e.newPerson("a@example.com", "Morning", "0 7 * * *", "UTC", 3)
	e.clk.Set(utc("2026-05-04T07:00:01Z"))
	if n := e.assemble(); n != 0 {
		t.Fatalf("empty slot issued %d", n)
	}
	if is, ob := e.issues(p.digest.ID), e.outbox(p.user.ID); len(is) != 0 || len(ob) != 0 {
		t.Fatalf("empty slot made %d issues, %d emails", len(is), len(ob))
	}
	d := e.digest(p.digest.ID)
	if !d.NextSlotAt.Equal(utc("2026-05-05T07:00:00Z")) || d.LastSlotAt == nil || !d.LastSlotAt.Equal(utc("2026-05-04T07:00:00Z")) {
		t.Fatalf("digest not moved on: next %s last %v", d.NextSlotAt, d.LastSlotAt)
	}
	// Running again before the next slot does nothing.
	if n := e.assemble(); n != 0 {
		t.Fatal("assembled again before the next slot")
	}
	p.queueFeeds(e, 2)
	e.clk.Set(utc("2026-05-05T07:00:01Z"))
	if n := e.assemble(); n != 1 {
		t.Fatalf("issued %d, want 1", n)
	}
	if ob := e.outbox(p.user.ID); len(ob) != 1 || ob[0].Credits != 1 {
		t.Fatalf("outbox %+v", ob)
	}
}

// TestMissedSlotsCollapse: after downtime spanning many slots, one issue is
// made, for the newest slot, holding everything queued; the next slot is
// the first one after now.
func TestMissedSlotsCollapse(t *testing.T) {
	tests := []struct {
		name, spec, zone string
		down             string // when the worker runs again
		wantSlot         string
		wantNext         string
	}{
		{"hourly, 5½ hours down", "0 * * * *", "UTC", "2026-05-04T12:30:00Z", "2026-05-04T12:00:00Z", "2026-05-04T13:00:00Z"},
		{"daily, three days down", "daily", "Europe/Berlin", "2026-05-07T09:00:00Z", "2026-05-07T05:00:00Z", "2026-05-08T05:00:00Z"},
		{"every 10s, a minute down", "@every 10s", "", "2026-05-04T08:01:05Z", "2026-05-04T08:01:00Z", "2026-05-04T08:01:10Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, utc("2026-05-04T06:59:00Z"))
			p := e.newPerson("a@example.com", "Digest", tt.spec, tt.zone, 3)
			p.queueFeeds(e, 3)
			e.clk.Set(utc(tt.down))
			if n := e.assemble(); n != 1 {
				t.Fatalf("issued %d, want 1", n)
			}
			is := e.issues(p.digest.ID)
			if len(is) != 1 || !is[0].SlotAt.Equal(utc(tt.wantSlot)) || is[0].ItemCount != 3 {
				t.Fatalf("issues %+v, want one for %s with 3 items", is, tt.wantSlot)
			}
			if d := e.digest(p.digest.ID); !d.NextSlotAt.Equal(utc(tt.wantNext)) {
				t.Fatalf("next slot %s, want %s", d.NextSlotAt, tt.wantNext)
			}
			if n := e.assemble(); n != 0 || len(e.outbox(p.user.ID)) != 1 {
				t.Fatal("a second issue for the collapsed slots")
			}
		})
	}
}

// TestDSTThroughStore drives the fake clock in 15-minute steps across both
// DST transitions, with an item queued before every step, and checks that
// each local day gets exactly one issue at the expected instant: the 02:30
// slot on the spring-forward day runs once (at 03:00, the end of the gap),
// and the repeated 01:30/02:30 on the fall-back day runs once (at its first
// occurrence).
func TestDSTThroughStore(t *testing.T) {
	tests := []struct {
		name, zone, spec string
		from, to         string
		want             []string // slots in UTC
	}{
		{"Berlin spring forward, 02:30", "Europe/Berlin", "30 2 * * *", "2026-03-28T00:00:00Z", "2026-03-30T23:00:00Z",
			[]string{"2026-03-28T01:30:00Z", "2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"}},
		{"Berlin fall back, 02:30", "Europe/Berlin", "30 2 * * *", "2026-10-24T00:00:00Z", "2026-10-26T23:00:00Z",
			[]string{"2026-10-24T00:30:00Z", "2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"}},
		{"New York spring forward, 02:30", "America/New_York", "30 2 * * *", "2026-03-07T05:00:00Z", "2026-03-10T04:00:00Z",
			[]string{"2026-03-07T07:30:00Z", "2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z"}},
		{"New York fall back, 01:30", "America/New_York", "30 1 * * *", "2026-10-31T04:00:00Z", "2026-11-03T04:00:00Z",
			[]string{"2026-10-31T05:30:00Z", "2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, utc(tt.from))
			p := e.newPerson("a@example.com", "Night", tt.spec, tt.zone, 1)
			for now := utc(tt.from); !now.After(utc(tt.to)); now = now.Add(15 * time.Minute) {
				e.clk.Set(now)
				p.queue(e, 0, "post", "", time.Time{})
				e.assemble()
			}
			is := e.issues(p.digest.ID)
			var got []string
			for _, i := range is {
				got = append(got, i.SlotAt.UTC().Format(time.RFC3339))
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("slots %v, want %v", got, tt.want)
			}
			if ob := e.outbox(p.user.ID); len(ob) != len(tt.want) {
				t.Fatalf("%d emails for %d slots", len(ob), len(tt.want))
			}
		})
	}
}

// TestHeldIssueCollectsLaterItems: while a person's digest email waits for
// credits, later slots add their items to it (its price follows the feeds
// it now holds) instead of queueing a second email; once credits release
// it, the next slot makes a new issue again.
func TestHeldIssueCollectsLaterItems(t *testing.T) {
	e := newEnv(t, utc("2026-05-04T06:00:00Z"))
	p := e.newPerson("a@example.com", "Morning", "daily", "UTC", 12)
	p.queueFeeds(e, 4)
	e.clk.Set(utc("2026-05-04T07:00:00Z"))
	if n := e.assemble(); n != 1 {
		t.Fatalf("issued %d", n)
	}
	first := e.outbox(p.user.ID)[0]
	// The mailer finds no credits and holds the email.
	if err := e.st.DB.Model(&store.OutboxRow{}).Where("id = ?", first.ID).
		Updates(map[string]any{"state": store.OutboxHeld, "last_error": store.HoldCredits}).Error; err != nil {
		t.Fatal(err)
	}
	for i := 4; i < 12; i++ {
		p.queue(e, i, "later", "", time.Time{})
	}
	e.clk.Set(utc("2026-05-05T07:00:00Z"))
	if n := e.assemble(); n != 0 {
		t.Fatalf("a second email was queued while the first is held (%d)", n)
	}
	ob := e.outbox(p.user.ID)
	is := e.issues(p.digest.ID)
	if len(ob) != 1 || len(is) != 1 {
		t.Fatalf("%d emails, %d issues; want 1, 1", len(ob), len(is))
	}
	if is[0].FeedCount != 12 || is[0].ItemCount != 12 || is[0].Credits != 3 || ob[0].Credits != 3 || ob[0].State != store.OutboxHeld {
		t.Fatalf("held issue not repriced: issue %+v, email credits %d state %s", is[0], ob[0].Credits, ob[0].State)
	}
	if d := e.digest(p.digest.ID); !d.NextSlotAt.Equal(utc("2026-05-06T07:00:00Z")) {
		t.Fatalf("next slot %s", d.NextSlotAt)
	}
	// Credits arrive: the ledger releases the held email.
	if _, _, err := e.st.AddLedgerEntry(e.ctx, p.user.ID, store.LedgerGrant, 10, "grant:test", "test"); err != nil {
		t.Fatal(err)
	}
	if ob := e.outbox(p.user.ID); ob[0].State != store.OutboxQueued {
		t.Fatalf("held email not released by credits: %s", ob[0].State)
	}
	p.queueFeeds(e, 1)
	e.clk.Set(utc("2026-05-06T07:00:00Z"))
	if n := e.assemble(); n != 1 {
		t.Fatalf("after release issued %d, want 1", n)
	}
	if ob := e.outbox(p.user.ID); len(ob) != 2 || ob[1].Credits != 1 {
		t.Fatalf("outbox %+v", ob)
	}
}

// TestEndedSubscriptionItemsDropped: items waiting from a subscription that
// ended are not sent (and not charged for).
func TestEndedSubscriptionItemsDropped(t *testing.T) {
	e := newEnv(t, utc("2026-05-04T06:00:00Z"))
	p := e.newPerson("a@example.com", "Morning", "daily", "UTC", 6)
	p.queueFeeds(e, 6)
	if _, err := e.st.EndSubscription(e.ctx, p.subs[5].ID, "unsubscribed"); err != nil {
		t.Fatal(err)
	}
	e.clk.Set(utc("2026-05-04T07:00:00Z"))
	e.assemble()
	is := e.issues(p.digest.ID)
	if len(is) != 1 || is[0].FeedCount != 5 || is[0].Credits != 1 {
		t.Fatalf("issues %+v; want 5 feeds, 1 credit", is)
	}
	// All of a digest's subscriptions ended: nothing is sent.
	for _, s := range p.subs[:5] {
		if _, err := e.st.EndSubscription(e.ctx, s.ID, "unsubscribed"); err != nil {
			t.Fatal(err)
		}
	}
	p.queueFeeds(e, 3)
	e.clk.Set(utc("2026-05-05T07:00:00Z"))
	if n := e.assemble(); n != 0 || e.pending(p.digest.ID) != 0 {
		t.Fatalf("issued %d after every subscription ended", n)
	}
}

// TestScheduleChangeTakesEffect: changing a digest's schedule moves its
// next slot; items already waiting go into the next issue under the new
// schedule.
func TestScheduleChangeTakesEffect(t *testing.T) {
	e := newEnv(t, utc("2026-05-04T06:00:00Z"))
	p := e.newPerson("a@example.com", "Morning", "daily", "UTC", 2)
	p.queueFeeds(e, 2)
	d, _, err := digest.Set(e.ctx, e.st, p.user.ID, "morning", "0 18 * * *", "Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	if d.ID != p.digest.ID || d.Name != "morning" || d.Timezone != "Europe/Berlin" || !d.NextSlotAt.Equal(utc("2026-05-04T16:00:00Z")) {
		t.Fatalf("changed digest %+v", d)
	}
	e.clk.Set(utc("2026-05-04T07:00:00Z"))
	if n := e.assemble(); n != 0 {
		t.Fatal("issued at the old slot")
	}
	e.clk.Set(utc("2026-05-04T16:00:00Z"))
	if n := e.assemble(); n != 1 {
		t.Fatal("not issued at the new slot")
	}
}

// TestSetDigestErrors: bad specs, zones and names are refused with errors
// that say which.
func TestSetDigestErrors(t *testing.T) {
	e := newEnv(t, utc("2026-05-04T06:00:00Z"))
	u, _, err := e.st.EnsureUser(e.ctx, "a@example.com")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, spec, zone string
		want             error
	}{
		{"Morning", "every day", "UTC", digest.ErrBadSpec},
		{"Morning", "@every 5s", "UTC", digest.ErrBadSpec},
		{"Morning", "0 7 * * *", "Mars/Olympus", digest.ErrBadZone},
		{"   ", "0 7 * * *", "UTC", store.ErrBadDigestName},
		{"a\x00b", "0 7 * * *", "UTC", store.ErrBadDigestName},
	}
	for _, tt := range tests {
		if _, _, err := digest.Set(e.ctx, e.st, u.ID, tt.name, tt.spec, tt.zone); !errors.Is(err, tt.want) {
			t.Errorf("Set(%q, %q, %q) = %v, want %v", tt.name, tt.spec, tt.zone, err, tt.want)
		}
	}
	if ds, _ := e.st.DigestsOfUser(e.ctx, u.ID); len(ds) != 0 {
		t.Fatalf("bad input created %d digests", len(ds))
	}
}

// TestTwoProcessesRaceForOneSlot: two stores on one database (two
// processes), each running several workers at once over the same due
// digests, make exactly one issue and one email per digest, and every item
// lands in exactly one issue.
func TestTwoProcessesRaceForOneSlot(t *testing.T) {
	start := utc("2026-05-04T06:00:00Z")
	clk := clock.NewFake(start)
	dsn := storetest.FreshDSN(t, storetest.URL())
	st1 := storetest.OpenDSN(t, dsn, storetest.Options{Clock: clk})
	st2 := storetest.OpenDSN(t, dsn, storetest.Options{Clock: clk, NoMigrate: true})
	seed := newEnvOn(t, st1, clk, "seed")
	const n = 60
	people := make([]*person, n)
	for i := range people {
		people[i] = seed.newPerson(fmt.Sprintf("p%d@example.com", i), "Morning", "daily", "UTC", 3)
		people[i].queueFeeds(seed, 3)
	}
	clk.Set(utc("2026-05-04T07:00:00Z"))
	var workers []*digest.Worker
	for i := range 6 {
		st := st1
		if i%2 == 1 {
			st = st2
		}
		w, err := digest.NewWorker(digest.Config{Store: st, Owner: fmt.Sprintf("proc%d-w%d", i%2, i), Clock: clk, Batch: 7})
		if err != nil {
			t.Fatal(err)
		}
		workers = append(workers, w)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	total := 0
	for _, w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k, err := w.AssembleDue(context.Background())
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			total += k
			mu.Unlock()
		}()
	}
	wg.Wait()
	if total != n {
		t.Errorf("workers report %d issues, want %d", total, n)
	}
	for _, p := range people {
		if is, ob := seed.issues(p.digest.ID), seed.outbox(p.user.ID); len(is) != 1 || len(ob) != 1 || is[0].ItemCount != 3 {
			t.Fatalf("digest %d: %d issues %+v, %d emails", p.digest.ID, len(is), is, len(ob))
		}
	}
	var unassigned int64
	if err := st1.DB.Model(&store.DigestItem{}).Where("issue_id IS NULL").Count(&unassigned).Error; err != nil || unassigned != 0 {
		t.Fatalf("%d items not in an issue (%v)", unassigned, err)
	}
}

// TestLostLeaseAssemblesNothing: a worker whose lease ran out while it was
// stalled (another worker took the digest over and issued the slot) writes
// nothing when it wakes up: no second issue, no second email.
func TestLostLeaseAssemblesNothing(t *testing.T) {
	e := newEnv(t, utc("2026-05-04T06:00:00Z"))
	p := e.newPerson("a@example.com", "Morning", "daily", "UTC", 3)
	p.queueFeeds(e, 3)
	now := utc("2026-05-04T07:00:00Z")
	e.clk.Set(now)
	stalled, err := e.st.ClaimDueDigests(e.ctx, "stalled", time.Minute, now, 10)
	if err != nil || len(stalled) != 1 {
		t.Fatalf("claim: %v %d", err, len(stalled))
	}
	plan := digest.PlanSlot(stalled[0], mustSchedule(t, "daily", "UTC"), now)
	e.clk.Set(now.Add(2 * time.Minute)) // the lease ran out
	if n := e.assemble(); n != 1 {
		t.Fatalf("takeover issued %d", n)
	}
	p.queueFeeds(e, 1) // something new waits when the stalled worker wakes
	res, err := e.st.AssembleDigestIssues(e.ctx, "stalled", []store.SlotPlan{plan}, billing.DigestCharge)
	if err != nil {
		t.Fatal(err)
	}
	if res.Skipped != 1 || res.Issued != 0 || len(e.outbox(p.user.ID)) != 1 || e.pending(p.digest.ID) != 1 {
		t.Fatalf("stalled worker wrote: %+v, %d emails", res, len(e.outbox(p.user.ID)))
	}
}

// TestSlotIssuedOnceEver: the unique (digest, slot) key keeps a slot from
// being issued twice even when a digest comes due for a slot already issued
// (its next_slot_at was set back by hand); the items wait for the next slot.
func TestSlotIssuedOnceEver(t *testing.T) {
	e := newEnv(t, utc("2026-05-04T06:00:00Z"))
	p := e.newPerson("a@example.com", "Morning", "daily", "UTC", 2)
	p.queueFeeds(e, 2)
	e.clk.Set(utc("2026-05-04T07:00:00Z"))
	e.assemble()
	p.queueFeeds(e, 2)
	if err := e.st.DB.Model(&store.Digest{}).Where("id = ?", p.digest.ID).Update("next_slot_at", utc("2026-05-04T07:00:00Z")).Error; err != nil {
		t.Fatal(err)
	}
	if n := e.assemble(); n != 0 {
		t.Fatalf("slot issued twice (%d)", n)
	}
	if is := e.issues(p.digest.ID); len(is) != 1 || e.pending(p.digest.ID) != 2 {
		t.Fatalf("issues %+v, pending %d", is, e.pending(p.digest.ID))
	}
	e.clk.Set(utc("2026-05-05T07:00:00Z"))
	if n := e.assemble(); n != 1 {
		t.Fatal("next slot not issued")
	}
}

func mustSchedule(t *testing.T, spec, zone string) *digest.Schedule {
	t.Helper()
	s, err := digest.ParseSchedule(spec, zone)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
