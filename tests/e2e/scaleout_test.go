package e2e

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/feedmail/feedmail/digest"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/farm"
	"github.com/feedmail/feedmail/internal/testkit/smtptest"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
	"github.com/feedmail/feedmail/internal/token"
	"github.com/feedmail/feedmail/mailer"

	"gorm.io/gorm"
)

// TestScaleOutKill9 runs three `feedmail serve` processes with every role on
// one Postgres schema, against 2,000 feeds on a farm of four loopback hosts
// and 500 people (three in four instant, one in four with an "@every 20s"
// digest), publishes posts over about two minutes, and kill -9s one process
// in the middle. At the end:
//
//   - every expected email arrived exactly once (counted by Message-ID at
//     the sink): one per post per instant subscriber, one per digest issue,
//     and every post in exactly one digest of each digest subscriber;
//   - no feed was fetched twice within its interval: every fetch after a
//     feed's first is accounted for by a ping of ours, or by an earlier
//     fetch whose poll was never recorded (the killed process fetched it
//     and died before writing; the feed came back when its lease ran
//     out) — see checkFetches;
//   - every digest issue belongs to one slot of the schedule, one issue
//     per (digest, slot), none empty;
//   - the processes shared the work.
//
// Choices:
//
//   - Polling soon enough to see posts within minutes: the farm answers
//     "Cache-Control: max-age=3600", so after its first poll a feed is
//     next due in an hour; the test makes each feed that got a post due
//     at once with store.PingFeed — the conditional UPDATE behind the
//     /ping route (made due now unless a poll holds the feed's lease, at
//     most once per minGap, here 0). Calling it rather than GET /ping
//     because /ping allows one ping every 2 s per client address after a
//     burst of 30, and every ping here comes from 127.0.0.1. A ping that
//     finds a poll in progress is repeated until it lands, as a publisher
//     whose ping came too early would.
//   - Leases: the binary has no setting for lease lengths (poller 2 min,
//     outbox 5 min, digests 2 min). So that the test takes minutes, not
//     ten, it expires the killed process's leases right after the kill
//     with SQL — exactly the rows whose lease_owner is that process's, set
//     as they would be when the lease time has passed (due now, lease
//     over). FEEDMAIL_E2E_REAL_LEASES=1 waits for the real expiry instead
//     (about 3.5 minutes in all when the dead process held only feeds,
//     whose lease is 2 minutes; up to 5 more when it held outbox rows, whose
//     lease is 5). An environment
//     variable such as FEEDMAIL_LEASE_SCALE, or FEEDMAIL_POLL_LEASE /
//     FEEDMAIL_OUTBOX_LEASE / FEEDMAIL_DIGEST_LEASE read in
//     cmd/feedmail/role_*.go, would let the test use short real leases.
//   - Duplicates: the mailer records each accepted email as its "250 OK"
//     comes (group commits; at most outbox.DefaultMaxUnmarked waiting plus
//     one per SMTP connection), so a process killed between the 250 and
//     that record has those few rows sent again by another process after
//     the lease: the design's one allowed duplicate. The test allows
//     a duplicate only for an outbox row the killed process held when it
//     died, and reports how many there were.
func TestScaleOutKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three feedmail processes for a few minutes")
	}
	dsn := storetest.FreshDSN(t, storetest.PostgresURL(t))
	w := newScaleOut(t, dsn, scaleOutSize{feeds: 2000, users: 500, hosts: 4, procs: 3, rounds: 12,
		perRound: 100, every: 8 * time.Second})
	realLeases := os.Getenv("FEEDMAIL_E2E_REAL_LEASES") == "1"
	if realLeases {
		w.settleWithin += 6 * time.Minute
	}
	w.faultRound = 6
	w.midRun = func(round int) {
		if round == w.faultRound {
			w.kill(realLeases)
		}
	}
	// The one duplicate the design allows: a row the dead process held
	// (it may have been accepted by the server just before the kill).
	w.explain = func(row *store.OutboxRow, _ []sinkMail) bool { return row != nil && w.heldOutbox[row.ID] }
	w.run()
	w.checkTakeoverLogged()
}

// checkTakeoverLogged: the leases the killed process held were taken over
// by the others, and the logs say so, naming it.
func (w *scaleOut) checkTakeoverLogged() {
	if w.killed == nil || w.heldFeeds+len(w.heldOutbox)+w.heldDigest == 0 {
		return
	}
	var seen []string
	for _, p := range w.procs {
		if p == w.killed {
			continue
		}
		lines, _ := p.Log.Grep("leases taken over", 20)
		for _, l := range lines {
			if strings.Contains(l, w.killed.ownerPrefix()) {
				seen = append(seen, p.name+": "+l)
			}
		}
	}
	if len(seen) == 0 {
		w.t.Errorf("no surviving process logged taking over the leases of %s (%s…)", w.killed.name, w.killed.ownerPrefix())
	}
	w.t.Logf("takeovers logged: %s", strings.Join(seen, "\n"))
}

// scaleOutSize shapes a run.
type scaleOutSize struct {
	feeds, users, hosts int
	procs               int           // feedmail processes
	rounds              int           // publishing rounds
	perRound            int           // feeds that get a post each round
	every               time.Duration // between rounds
}

const (
	soFeedsPerUser = 6
	soDigestEvery  = 20 * time.Second
	soMaxAge       = time.Hour // the farm's Cache-Control: the feeds' interval
	soFrom         = "feedmail@example.com"
)

// soFeed is one feed of the run.
type soFeed struct {
	idx     int
	farm    *farm.Feed
	row     store.Feed
	instant []int64 // subscription ids of instant subscribers
	digests []int64 // user ids of digest subscribers
}

// soPost is one published post.
type soPost struct {
	feed  int
	guid  string
	title string
	round int
	at    time.Time // published
}

// soPing is one ping that made a feed due.
type soPing struct {
	at   time.Time // just before the UPDATE
	used bool
}

// scaleOut is one run of processes, farm, sink and publishing rounds,
// shared by the scale-out/kill test and the PostgreSQL restart test.
type scaleOut struct {
	t     *testing.T
	size  scaleOutSize
	ctx   context.Context
	bin   string // the feedmail binary
	st    *store.Store
	sink  *smtptest.Server
	farms []*farm.Farm
	feeds []*soFeed
	users []store.User
	// digestOf maps a digest user to their digest id.
	digestOf map[int64]int64
	vars     map[string]string
	procs    []*fmProc
	posts    []soPost
	// installID is the database's install id, part of every Message-ID's
	// tag (read once the processes have created it; see sender).
	installID string

	mu    sync.Mutex
	pings map[int][]*soPing // by feed index
	// pingRetries counts pings refused as too soon and repeated.
	pingRetries int
	// pingErrors counts pings that failed (the database was away) and
	// were repeated.
	pingErrors int
	pingWG     sync.WaitGroup

	// midRun, if set, runs after each round's posts are published (and
	// their pings started): the fault of the test, in round faultRound.
	midRun     func(round int)
	faultRound int
	// explain says whether a duplicated email is one the design allows
	// (row is its outbox row, nil if none; copies are what arrived).
	explain func(row *store.OutboxRow, copies []sinkMail) bool
	// lostRecord, if set, says whether a row still queued at the end is
	// one whose email the server accepted (its first copy is firstIndex at
	// the sink, -1 if none) but whose "sent" record the fault lost: it is
	// leased and will be sent again at the end of its lease. The run then
	// does not wait for that lease.
	lostRecord func(row *store.OutboxRow, firstIndex int) bool
	// settleWithin bounds the wait for everything to arrive after the
	// last round.
	settleWithin time.Duration

	// arrived is when each Message-ID was first seen at the sink (a
	// watcher looks every 200 ms while posts are published and settle).
	arrivedMu sync.Mutex
	arrived   map[string]time.Time

	// The kill.
	killed     *fmProc
	heldOutbox map[int64]bool // outbox rows the killed process held
	heldFeeds  int
	heldDigest int
}

// newScaleOut seeds the database at dsn (a fresh, empty one) and starts the
// farm and the sink; run starts the processes.
func newScaleOut(t *testing.T, dsn string, size scaleOutSize) *scaleOut {
	t.Helper()
	start := time.Now()
	bin := procBinary(t)
	t.Logf("feedmail built in %s", time.Since(start).Round(time.Millisecond))
	w := &scaleOut{t: t, size: size, ctx: context.Background(), bin: bin, digestOf: map[int64]int64{},
		pings: map[int][]*soPing{}, settleWithin: 4 * time.Minute}
	w.st = storetest.OpenDSN(t, dsn, storetest.Options{MaxOpenConns: 8})
	w.sink = procSink(t)
	w.farms = procFarms(t, size.hosts)
	w.vars = map[string]string{
		"FEEDMAIL_DATABASE_URL":           dsn,
		"FEEDMAIL_SMTP_URL":               w.sink.URL(),
		"FEEDMAIL_FROM":                   soFrom,
		"FEEDMAIL_SECRET":                 soSecret,
		"FEEDMAIL_ALLOW_PRIVATE_NETWORKS": "1",
		"FEEDMAIL_ROLES":                  "web,poller,mailer,digest",
		"FEEDMAIL_LOG_LEVEL":              "info",
	}
	start = time.Now()
	w.seed()
	t.Logf("seeded %d feeds, %d people, %d digests in %s", len(w.feeds), len(w.users), len(w.digestOf), time.Since(start).Round(time.Millisecond))
	return w
}

// seed makes the farm feeds, the people, their digests and subscriptions.
// Feeds are not due yet: run makes them due once every process is up.
func (w *scaleOut) seed() {
	t, ctx := w.t, w.ctx
	now := time.Now().UTC()
	rows := make([]store.Feed, w.size.feeds)
	for i := range rows {
		ff := w.farms[i%len(w.farms)].AddFeed(farm.Spec{Format: farm.Format(i % 3), Title: fmt.Sprintf("Scale-out feed %d", i),
			ItemCount: 5, ETag: farm.ETagStrong, LastModified: true, Gzip: true,
			CacheControl: fmt.Sprintf("max-age=%d", int(soMaxAge/time.Second))})
		rows[i] = store.Feed{URL: ff.URL(), State: store.FeedActive, NextPollAt: now.AddDate(1, 0, 0),
			PollReason: "new feed: first poll", CreatedAt: now, UpdatedAt: now}
		f := &soFeed{idx: i, farm: ff}
		w.feeds = append(w.feeds, f)
	}
	procBulk(t, w.st, rows, 500)
	for i := range rows {
		w.feeds[i].row = rows[i]
	}
	w.users = procUsers(t, w.st, "so", w.size.users, 100_000)
	for u, usr := range w.users {
		if u%4 != 0 {
			continue
		}
		d, _, err := digest.Set(ctx, w.st, usr.ID, "Quick", fmt.Sprintf("@every %s", soDigestEvery), "UTC")
		if err != nil {
			t.Fatal(err)
		}
		w.digestOf[usr.ID] = d.ID
	}
	// Person u follows feeds k·u … k·u+5 (mod the feed count), k = feeds
	// per person: with k = 4 every feed has one or two followers.
	stride := max(1, len(w.feeds)/len(w.users))
	var subs []store.Subscription
	for u, usr := range w.users {
		for j := range soFeedsPerUser {
			f := w.feeds[(stride*u+j)%len(w.feeds)]
			s := store.Subscription{UserID: usr.ID, FeedID: f.row.ID, State: store.SubActive, CreatedAt: now, ConfirmedAt: &now}
			if d, ok := w.digestOf[usr.ID]; ok {
				s.DigestID = &d
			}
			subs = append(subs, s)
		}
	}
	procBulk(t, w.st, subs, 500)
	feedByID := map[int64]*soFeed{}
	for _, f := range w.feeds {
		feedByID[f.row.ID] = f
	}
	for _, s := range subs {
		f := feedByID[s.FeedID]
		if s.DigestID == nil {
			f.instant = append(f.instant, s.ID)
		} else {
			f.digests = append(f.digests, s.UserID)
		}
	}
	if err := w.st.DB.WithContext(ctx).Exec(`UPDATE feeds SET subscriber_count =
  (SELECT COUNT(*) FROM subscriptions s WHERE s.feed_id = feeds.id AND s.state = 'active')`).Error; err != nil {
		t.Fatal(err)
	}
	for _, f := range w.feeds {
		if len(f.instant)+len(f.digests) == 0 {
			t.Fatalf("feed %d has no follower: more people or fewer feeds", f.idx)
		}
		f.row.SubscriberCount = len(f.instant) + len(f.digests)
	}
}

// run is the whole scenario.
func (w *scaleOut) run() {
	t, ctx := w.t, w.ctx
	for i := range w.size.procs {
		w.procs = append(w.procs, startProc(t, w.bin, fmt.Sprintf("feedmail-%c", 'A'+i), w.vars))
	}
	for _, p := range w.procs {
		p.waitHealthy(60 * time.Second)
	}

	// Phase 0: every feed's first poll (records what is there, mails nothing).
	start := time.Now()
	if err := w.st.DB.WithContext(ctx).Exec("UPDATE feeds SET next_poll_at = ?", time.Now().UTC()).Error; err != nil {
		t.Fatal(err)
	}
	procEventually(t, 4*time.Minute, 100*time.Millisecond, func() bool {
		var n int64
		w.st.DB.WithContext(ctx).Model(&store.Feed{}).Where("primed_at IS NULL OR lease_owner <> ''").Count(&n)
		return n == 0
	}, "every feed's first poll is recorded")
	prime := procFetches(w.farms)
	t.Logf("phase 0: %d feeds polled for the first time in %s; fetches by process: %s",
		len(w.feeds), time.Since(start).Round(time.Millisecond), w.byProcess(prime))
	for _, f := range w.feeds {
		if n := len(prime[f.farm]); n != 1 {
			t.Errorf("feed %d fetched %d times by its first poll", f.idx, n)
		}
	}
	if w.sink.Count() != 0 {
		t.Errorf("%d emails sent by first polls, want none", w.sink.Count())
	}
	if t.Failed() {
		t.FailNow()
	}

	// Posts appear round after round; the fault comes in the middle.
	stopWatch := w.watchArrivals()
	defer stopWatch()
	start = time.Now()
	seed := uint64(time.Now().UnixNano())
	t.Logf("posts go to feeds drawn with seed %d", seed)
	rng := rand.New(rand.NewPCG(7, seed))
	tick := time.NewTicker(w.size.every)
	defer tick.Stop()
	for r := 1; r <= w.size.rounds; r++ {
		if r > 1 {
			<-tick.C // the publishing schedule, not a wait for work
		}
		w.publish(r, rng)
		if w.midRun != nil {
			w.midRun(r)
		}
	}
	w.pingWG.Wait()
	t.Logf("publishing: %d posts in %d rounds over %s (%d pings repeated as too soon, %d because the database failed)",
		len(w.posts), w.size.rounds, time.Since(start).Round(time.Millisecond), w.pingRetries, w.pingErrors)

	// Everything arrives.
	start = time.Now()
	expected := w.newExpectation()
	procSettle(t, w.settleWithin, 250*time.Millisecond, func() string { return w.settled(expected) },
		"every post polled, every email sent, every digest item issued")
	t.Logf("settled %s after the last round", time.Since(start).Round(time.Millisecond))
	stopWatch()
	w.check(expected)
}

// watchArrivals records when Message-IDs first reach the sink, every
// 200 ms, until the returned stop is called (idempotent).
func (w *scaleOut) watchArrivals() (stop func()) {
	w.arrived = map[string]time.Time{}
	done := make(chan struct{})
	var wg sync.WaitGroup
	look := func() {
		now := time.Now()
		msgs := w.sink.Messages()
		w.arrivedMu.Lock()
		defer w.arrivedMu.Unlock()
		for _, m := range msgs {
			if m.Header == nil {
				continue
			}
			if id := m.Header.Get("Message-Id"); id != "" {
				if _, ok := w.arrived[id]; !ok {
					w.arrived[id] = now
				}
			}
		}
	}
	wg.Go(func() {
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				look()
				return
			case <-tick.C:
				look()
			}
		}
	})
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			wg.Wait()
		})
	}
}

// latencies logs how long instant emails took from publish to the sink
// (to the watcher's 200 ms), overall and for the posts of rounds in
// [from, to].
func (w *scaleOut) latencies(itemGUID map[int64]string, label string, from, to int) {
	post := map[string]soPost{}
	for _, p := range w.posts {
		post[p.guid] = p
	}
	var ds []time.Duration
	w.arrivedMu.Lock()
	for id, at := range w.arrived {
		var sub, item int64
		if _, err := fmt.Sscanf(id, "<item-%d-%d.", &sub, &item); err != nil {
			continue
		}
		p, ok := post[itemGUID[item]]
		if !ok || p.round < from || p.round > to {
			continue
		}
		ds = append(ds, at.Sub(p.at))
	}
	w.arrivedMu.Unlock()
	if len(ds) == 0 {
		return
	}
	slices.Sort(ds)
	q := func(f float64) time.Duration {
		return ds[min(len(ds)-1, int(f*float64(len(ds))))].Round(100 * time.Millisecond)
	}
	w.t.Logf("publish → email at the sink, %s: median %s, 95th percentile %s, slowest %s (%d emails)",
		label, q(0.5), q(0.95), ds[len(ds)-1].Round(100*time.Millisecond), len(ds))
}

// byProcess counts fetches per process (the User-Agent names its base URL).
func (w *scaleOut) byProcess(log fetchLog) string {
	counts := map[string]int{}
	for _, recs := range log {
		for _, r := range recs {
			counts[w.procOf(r.UserAgent)]++
		}
	}
	var parts []string
	for _, p := range w.procs {
		parts = append(parts, fmt.Sprintf("%s %d", p.name, counts[p.name]))
	}
	if n := counts["?"]; n > 0 {
		parts = append(parts, fmt.Sprintf("unknown %d", n))
	}
	return strings.Join(parts, ", ")
}

func (w *scaleOut) procOf(ua string) string {
	for _, p := range w.procs {
		if strings.Contains(ua, "+"+p.base+"/bot") {
			return p.name
		}
	}
	return "?"
}

// publish adds one post to perRound distinct random feeds and pings them.
func (w *scaleOut) publish(round int, rng *rand.Rand) {
	idx := rng.Perm(len(w.feeds))[:w.size.perRound]
	now := time.Now().UTC().Truncate(time.Second)
	var pinged []*soFeed
	for _, i := range idx {
		f := w.feeds[i]
		guid := fmt.Sprintf("so-r%02d-f%04d", round, i)
		title := fmt.Sprintf("Scale-out post %s", guid)
		f.farm.Publish(farm.Item{ID: guid, Title: title, Link: f.farm.URL() + "/i/" + guid,
			Content: "<p>Post " + guid + " on the farm.</p>", Published: now})
		w.posts = append(w.posts, soPost{feed: i, guid: guid, title: title, round: round, at: time.Now()})
		pinged = append(pinged, f)
	}
	// One goroutine per ping: a ping repeated while a poll holds its feed
	// (for a whole lease after a fault) must not hold up the others.
	for _, f := range pinged {
		w.pingWG.Go(func() { w.ping(f) })
	}
}

// ping makes f due now as /ping would, repeating while a poll holds it.
func (w *scaleOut) ping(f *soFeed) {
	deadline := time.Now().Add(10 * time.Minute) // past any lease
	for {
		at := time.Now()
		res, err := w.st.PingFeed(w.ctx, &f.row, at, 0)
		if err != nil {
			// The database may be restarting: a publisher would ping again.
			w.mu.Lock()
			w.pingErrors++
			w.mu.Unlock()
			if time.Now().After(deadline) {
				w.t.Errorf("ping feed %d: %v", f.idx, err)
				return
			}
			time.Sleep(250 * time.Millisecond) // retry pacing
			continue
		}
		switch res {
		case store.PingScheduled, store.PingQueued:
			// Queued: a poll that starts after the ping follows the one in
			// progress.
			w.mu.Lock()
			w.pings[f.idx] = append(w.pings[f.idx], &soPing{at: at})
			w.mu.Unlock()
			return
		case store.PingTooSoon:
			w.mu.Lock()
			w.pingRetries++
			w.mu.Unlock()
			if time.Now().After(deadline) {
				w.t.Errorf("feed %d: pinged for 10 minutes, always %s", f.idx, res)
				return
			}
			time.Sleep(250 * time.Millisecond) // a publisher pinging again: retry pacing, not a wait for work
		default:
			w.t.Errorf("ping feed %d: %s", f.idx, res)
			return
		}
	}
}

// kill kill -9s a process that holds leases — the one with the most feed
// leases once some process is polling (the first to wake after a round's
// pings claims most of its feeds), else the last — records what it held,
// and expires its leases (unless realLeases).
func (w *scaleOut) kill(realLeases bool) {
	t, ctx := w.t, w.ctx
	w.waitBusy("%")
	victim := w.procs[len(w.procs)-1]
	best := int64(0)
	for _, p := range w.procs {
		if f, o, _ := w.holding(p.ownerPrefix() + "%"); 1000*f+o > best {
			victim, best = p, 1000*f+o
		}
	}
	prefix := victim.ownerPrefix() + "%"
	victim.kill9()
	w.killed = victim
	// What the dead process held, as the database says after its death.
	var outboxIDs []int64
	w.st.DB.WithContext(ctx).Model(&store.OutboxRow{}).Where("lease_owner LIKE ? AND state = ?", prefix, store.OutboxQueued).
		Where("lease_until > ?", time.Now().UTC()).Pluck("id", &outboxIDs)
	w.heldOutbox = map[int64]bool{}
	for _, id := range outboxIDs {
		w.heldOutbox[id] = true
	}
	f, _, d := w.holding(prefix)
	w.heldFeeds, w.heldDigest = int(f), int(d)
	t.Logf("kill -9 %s (pid %d): it held %d feed and host leases, %d outbox rows, %d digest leases; %d emails at the sink",
		victim.name, victim.Pid(), w.heldFeeds, len(w.heldOutbox), w.heldDigest, w.sink.Count())
	if realLeases {
		t.Logf("waiting for the leases to run out (FEEDMAIL_E2E_REAL_LEASES=1)")
		return
	}
	// The leases run out now: what the claims would find once lease_until
	// has passed (claims look at next_poll_at / next_attempt_at /
	// lease_until; the holder's name stays, as it does after a real expiry).
	now := time.Now().UTC()
	var expired int64
	for _, q := range []string{
		`UPDATE feeds SET next_poll_at = ?, lease_until = ? WHERE lease_owner LIKE ? AND lease_until > ?`,
		`UPDATE hosts SET lease_until = ? WHERE lease_owner LIKE ? AND lease_until > ?`,
		`UPDATE outbox SET next_attempt_at = ?, lease_until = ? WHERE lease_owner LIKE ? AND state = 'queued' AND lease_until > ?`,
		`UPDATE digests SET lease_until = ? WHERE lease_owner LIKE ? AND lease_until > ?`,
	} {
		args := []any{now, now, prefix, now}
		if strings.HasPrefix(q, "UPDATE digests") || strings.HasPrefix(q, "UPDATE hosts") {
			args = []any{now, prefix, now}
		}
		res := w.st.DB.WithContext(ctx).Exec(q, args...)
		if res.Error != nil {
			t.Fatalf("expire the dead process's leases: %v", res.Error)
		}
		expired += res.RowsAffected
	}
	t.Logf("expired the %d leases it still held", expired)
}

// holding counts the unexpired leases whose owner is LIKE prefix.
func (w *scaleOut) holding(prefix string) (feeds, outbox, digests int64) {
	ctx, now := w.ctx, time.Now().UTC()
	// Pollers hold feeds through their hosts' leases (store.ClaimDueFeeds);
	// `feedmail poll` and revivals lease single feeds.
	var hosts int64
	w.st.DB.WithContext(ctx).Model(&store.Host{}).Where("lease_owner LIKE ? AND lease_until > ?", prefix, now).Count(&hosts)
	w.st.DB.WithContext(ctx).Model(&store.Feed{}).Where("lease_owner LIKE ? AND lease_until > ?", prefix, now).Count(&feeds)
	feeds += hosts
	w.st.DB.WithContext(ctx).Model(&store.OutboxRow{}).Where("lease_owner LIKE ? AND state = ? AND lease_until > ?", prefix, store.OutboxQueued, now).Count(&outbox)
	w.st.DB.WithContext(ctx).Model(&store.Digest{}).Where("lease_owner LIKE ? AND lease_until > ?", prefix, now).Count(&digests)
	return
}

// waitBusy waits (briefly) until the owners LIKE prefix are polling — they
// hold feed or host leases — or at least hold some lease, so that a fault now
// leaves work in flight. It gives up after 20 s: a fault at a quiet moment
// still tests something.
func (w *scaleOut) waitBusy(prefix string) {
	start := time.Now()
	for {
		f, o, d := w.holding(prefix)
		waited := time.Since(start)
		if f > 0 || (o+d > 0 && waited > 10*time.Second) || waited > 20*time.Second {
			w.t.Logf("in flight before the fault: %d feed and host leases, %d outbox rows, %d digest leases", f, o, d)
			return
		}
		time.Sleep(5 * time.Millisecond) // polling a condition with a deadline
	}
}

// expectation is what must arrive: the Message-ID of every instant email
// (w.sender().ItemMessageID), filled in by settled once the posts are
// recorded as items (they get their ids when polled).
type expectation struct {
	instant map[string]bool // Message-IDs
	posts   map[string]soPost
}

func (w *scaleOut) newExpectation() *expectation {
	e := &expectation{instant: map[string]bool{}, posts: map[string]soPost{}}
	for _, p := range w.posts {
		e.posts[p.guid] = p
	}
	return e
}

// settled reports whether every post was recorded, every email sent and
// every digest item issued; it fills e.instant on the way.
func (w *scaleOut) settled(e *expectation) string {
	ctx := w.ctx
	var items []store.Item
	if err := w.st.DB.WithContext(ctx).Where("guid LIKE 'so-%'").Find(&items).Error; err != nil {
		return "items unreadable: " + err.Error()
	}
	if len(items) < len(w.posts) {
		return fmt.Sprintf("%d of %d posts polled; not yet: %s", len(items), len(w.posts), w.unpolled(items))
	}
	feedByID := map[int64]*soFeed{}
	for _, f := range w.feeds {
		feedByID[f.row.ID] = f
	}
	s := w.sender()
	for _, it := range items {
		for _, sub := range feedByID[it.FeedID].instant {
			e.instant[s.ItemMessageID(sub, it.ID)] = true
		}
	}
	// One snapshot: an assembly committing between two queries would turn
	// pending digest items into a queued email unseen.
	var pending int64
	var waiting []store.OutboxRow
	err := w.st.DB.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Model(&store.DigestItem{}).Where("issue_id IS NULL").Count(&pending).Error; err != nil {
			return err
		}
		return tx.Where("state IN ?", []string{store.OutboxQueued, store.OutboxHeld}).Find(&waiting).Error
	}, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		return "outbox unreadable: " + err.Error()
	}
	if pending > 0 {
		return fmt.Sprintf("all %d posts polled; %d digest items not yet in an issue", len(items), pending)
	}
	first := w.firstIndex()
	for _, r := range waiting {
		idx, ok := first[w.messageIDOf(r)]
		if !ok {
			idx = -1
		}
		if w.lostRecord == nil || !w.lostRecord(&r, idx) {
			return fmt.Sprintf("all posts polled and issued; outbox row %d (%s) still %s: attempts %d, next attempt %s, lease %q until %v, last error %q",
				r.ID, r.Kind, r.State, r.Attempts, r.NextAttemptAt.Format(time.RFC3339), r.LeaseOwner, r.LeaseUntil, r.LastError)
		}
	}
	got := map[string]bool{}
	for _, m := range w.sink.Messages() {
		if m.Header != nil {
			got[m.Header.Get("Message-Id")] = true
		}
	}
	missing := 0
	for id := range e.instant {
		if !got[id] {
			missing++
		}
	}
	if missing > 0 {
		return fmt.Sprintf("all posts polled and issued, no row waiting; %d of %d instant emails not at the sink", missing, len(e.instant))
	}
	return ""
}

// unpolled names up to five posts not yet stored as items, with their
// feed's schedule and lease, to say why a settle wait failed.
func (w *scaleOut) unpolled(items []store.Item) string {
	have := map[string]bool{}
	for _, it := range items {
		have[it.GUID] = true
	}
	var out []string
	for _, p := range w.posts {
		if have[p.guid] || len(out) == 5 {
			continue
		}
		var f store.Feed
		if err := w.st.DB.WithContext(w.ctx).First(&f, w.feeds[p.feed].row.ID).Error; err != nil {
			out = append(out, p.guid+" (feed unreadable: "+err.Error()+")")
			continue
		}
		out = append(out, fmt.Sprintf("%s (feed %d: next poll %s, lease %q until %v, pinged %d times)",
			p.guid, f.ID, f.NextPollAt.Format(time.RFC3339), f.LeaseOwner, f.LeaseUntil, w.pingCount(p.feed)))
	}
	return strings.Join(out, "; ")
}

// pingCount is how many pings of feed idx were scheduled or queued.
func (w *scaleOut) pingCount(idx int) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.pings[idx])
}

// firstIndex maps each Message-ID at the sink to the position of its first
// copy.
func (w *scaleOut) firstIndex() map[string]int {
	out := map[string]int{}
	for i, m := range w.sink.Messages() {
		if m.Header == nil {
			continue
		}
		if id := m.Header.Get("Message-Id"); id != "" {
			if _, ok := out[id]; !ok {
				out[id] = i
			}
		}
	}
	return out
}

// messageIDOf is the Message-ID of an outbox row's email ("" for kinds
// this test does not send).
func (w *scaleOut) messageIDOf(r store.OutboxRow) string {
	switch {
	case r.Kind == store.KindItem && r.SubscriptionID != nil && r.ItemID != nil:
		return w.sender().ItemMessageID(*r.SubscriptionID, *r.ItemID)
	case r.Kind == store.KindDigest && r.IssueID != nil:
		return w.sender().MessageID("digest." + strconv.FormatInt(*r.IssueID, 10))
	}
	return ""
}

// soSecret is FEEDMAIL_SECRET of the scale-out processes.
const soSecret = "e2e-scale-out-secret-0123456789"

// sender makes the Message-IDs the scale-out processes give their
// emails: FEEDMAIL_FROM's domain, the key derived from soSecret and the
// database's install id (which the first process created).
func (w *scaleOut) sender() mailer.Sender {
	if w.installID == "" {
		id, err := w.st.Setting(w.ctx, "install_id")
		if err != nil {
			w.t.Fatalf("install id: %v", err)
		}
		w.installID = id
	}
	signer, err := token.NewSigner([]byte(soSecret))
	if err != nil {
		w.t.Fatal(err)
	}
	return mailer.Sender{Address: soFrom, IDKey: mailer.MessageIDKey(signer.Derive(mailer.MessageIDKeyLabel), w.installID)}
}

// check runs every assertion on the final state and logs the numbers.
func (w *scaleOut) check(e *expectation) {
	t, ctx := w.t, w.ctx
	mails := sinkMails(t, w.sink)
	byID := map[string][]sinkMail{}
	for _, m := range mails {
		byID[m.messageID] = append(byID[m.messageID], m)
	}

	// Outbox rows by Message-ID, to tell which duplicates the kill explains.
	var rows []store.OutboxRow
	if err := w.st.DB.WithContext(ctx).Find(&rows).Error; err != nil {
		t.Fatal(err)
	}
	rowOf := map[string]store.OutboxRow{}
	first := w.firstIndex()
	unrecorded := 0
	for _, r := range rows {
		id := w.messageIDOf(r)
		if id != "" {
			rowOf[id] = r
		}
		if r.State == store.OutboxSent {
			continue
		}
		idx, ok := first[id]
		if !ok {
			idx = -1
		}
		if r.State == store.OutboxQueued && w.lostRecord != nil && w.lostRecord(&r, idx) {
			unrecorded++
			continue
		}
		t.Errorf("outbox row %d (%s to %s) ended %s: %s", r.ID, r.Kind, r.Address, r.State, r.LastError)
	}
	if unrecorded > 0 {
		t.Logf("%d emails were accepted by the SMTP server but their \"sent\" record was lost in the fault: "+
			"they are still leased and will go out a second time when the lease ends (the design's allowed duplicate)", unrecorded)
	}
	dupes := func(ids map[string]bool) (delivered, duplicated, explained int, missing []string) {
		for id := range ids {
			n := len(byID[id])
			if n == 0 {
				missing = append(missing, id)
				continue
			}
			delivered++
			if n > 1 {
				duplicated += n - 1
				var row *store.OutboxRow
				if r, ok := rowOf[id]; ok {
					row = &r
				}
				if w.explain != nil && w.explain(row, byID[id]) {
					explained += n - 1
				} else {
					t.Errorf("%s arrived %d times", id, n)
				}
			}
		}
		sort.Strings(missing)
		return
	}

	// Instant emails.
	var items []store.Item
	if err := w.st.DB.WithContext(ctx).Where("guid LIKE 'so-%'").Find(&items).Error; err != nil {
		t.Fatal(err)
	}
	itemGUID := map[int64]string{}
	for _, it := range items {
		itemGUID[it.ID] = it.GUID
	}
	w.latencies(itemGUID, "all rounds", 1, w.size.rounds)
	if w.faultRound > 0 {
		w.latencies(itemGUID, fmt.Sprintf("round %d (just before the fault)", w.faultRound), w.faultRound, w.faultRound)
		w.latencies(itemGUID, "rounds after the fault", w.faultRound+1, w.size.rounds)
	}
	d, dup, expl, missing := dupes(e.instant)
	t.Logf("instant emails: expected %d, delivered %d, duplicated %d (of which %d allowed: in flight at the fault), missing %d",
		len(e.instant), d, dup, expl, len(missing))
	if len(missing) > 0 {
		t.Errorf("%d instant emails missing, e.g. %v", len(missing), missing[:min(5, len(missing))])
	}

	// Digest issues: one per (digest, slot), on the schedule's grid, never
	// empty, each delivered once.
	var issues []store.DigestIssue
	if err := w.st.DB.WithContext(ctx).Order("digest_id, slot_at").Find(&issues).Error; err != nil {
		t.Fatal(err)
	}
	issueIDs := map[string]bool{}
	s := w.sender()
	slots := map[[2]int64]bool{}
	perDigest := map[int64]int{}
	for _, is := range issues {
		issueIDs[s.MessageID("digest."+strconv.FormatInt(is.ID, 10))] = true
		key := [2]int64{is.DigestID, is.SlotAt.Unix()}
		if slots[key] {
			t.Errorf("digest %d has two issues for slot %s", is.DigestID, is.SlotAt)
		}
		slots[key] = true
		perDigest[is.DigestID]++
		if is.SlotAt.UnixNano()%int64(soDigestEvery) != 0 {
			t.Errorf("issue %d has slot %s, not on the @every %s grid", is.ID, is.SlotAt, soDigestEvery)
		}
		if is.ItemCount == 0 {
			t.Errorf("issue %d (digest %d) is empty", is.ID, is.DigestID)
		}
	}
	d2, dup2, expl2, missing2 := dupes(issueIDs)
	maxPer := 0
	for _, n := range perDigest {
		maxPer = max(maxPer, n)
	}
	t.Logf("digest emails: %d issues for %d digests (at most %d per digest), delivered %d, duplicated %d (of which %d allowed), missing %d",
		len(issues), len(perDigest), maxPer, d2, dup2, expl2, len(missing2))
	if len(missing2) > 0 {
		t.Errorf("%d digest issues not delivered, e.g. %v", len(missing2), missing2[:min(5, len(missing2))])
	}
	// Every post reaches each digest subscriber of its feed in exactly one
	// digest email.
	digestMail := map[string][]sinkMail{} // by recipient
	for _, m := range mails {
		if strings.HasPrefix(m.messageID, "<digest.") {
			digestMail[m.to] = append(digestMail[m.to], m)
		}
	}
	userEmail := map[int64]string{}
	for _, u := range w.users {
		userEmail[u.ID] = strings.ToLower(u.Email)
	}
	digestExpected, digestOK := 0, 0
	for _, p := range w.posts {
		for _, uid := range w.feeds[p.feed].digests {
			digestExpected++
			seen := map[string]bool{} // a duplicated issue counts once
			for _, m := range digestMail[userEmail[uid]] {
				if strings.Contains(m.text, p.title) {
					seen[m.messageID] = true
				}
			}
			switch len(seen) {
			case 1:
				digestOK++
			case 0:
				t.Errorf("post %s is in no digest of %s", p.guid, userEmail[uid])
			default:
				t.Errorf("post %s is in %d digests of %s", p.guid, len(seen), userEmail[uid])
			}
		}
	}
	t.Logf("digest items: %d post × digest-subscriber pairs expected, %d in exactly one digest email", digestExpected, digestOK)
	if unexpected := len(mails) - d - dup - d2 - dup2; unexpected != 0 {
		t.Errorf("%d emails at the sink that nobody expected", unexpected)
	}

	// Politeness: every fetch after the first is explained.
	w.checkFetches()
}

// checkFetches checks the farm log: after a feed's first fetch, each fetch
// must be explained by its interval (an hour here), by a ping of ours made
// between the two fetches, or by an earlier fetch of the feed whose poll
// was never recorded (its process died, or its database went away,
// before the write): then the feed's lease runs out and it is polled
// again, as the design wants ("a crash means the feed is polled again").
// Unrecorded polls are counted per feed as fetches seen by the farm minus
// the polls its row counts (log_seq: every recorded poll, logged or folded).
func (w *scaleOut) checkFetches() {
	t, ctx := w.t, w.ctx
	log := procFetches(w.farms)
	var counts []struct {
		FeedID int64
		N      int
	}
	if err := w.st.DB.WithContext(ctx).Raw("SELECT id AS feed_id, log_seq AS n FROM feeds").Scan(&counts).Error; err != nil {
		t.Fatal(err)
	}
	recorded := map[int64]int{}
	for _, c := range counts {
		recorded[c.FeedID] = c.N
	}
	total, worst, repolled, byKilled, violations, lostTotal := 0, 0, 0, 0, 0, 0
	hist := map[int]int{}
	for _, f := range w.feeds {
		recs := log[f.farm]
		total += len(recs)
		worst = max(worst, len(recs))
		hist[len(recs)]++
		lost := len(recs) - recorded[f.row.ID]
		if lost < 0 {
			t.Errorf("feed %d: %d polls recorded but the farm saw %d fetches", f.idx, recorded[f.row.ID], len(recs))
		}
		lostTotal += max(lost, 0)
		pings := w.pings[f.idx]
		sort.Slice(pings, func(a, b int) bool { return pings[a].at.Before(pings[b].at) })
		for k := 1; k < len(recs); k++ {
			a, b := recs[k-1], recs[k]
			if b.Time.Sub(a.Time) >= soMaxAge {
				continue
			}
			ok := false
			for _, p := range pings {
				// A ping between the two fetches (1 s of slack: the poll
				// before it may finish while the ping's UPDATE runs).
				if !p.used && p.at.After(a.Time.Add(-time.Second)) && !p.at.After(b.Time) {
					p.used, ok = true, true
					break
				}
			}
			switch {
			case ok:
			case lost > 0:
				lost--
				repolled++
				if w.killed != nil && w.procOf(a.UserAgent) == w.killed.name {
					byKilled++
				}
			default:
				violations++
				if violations <= 10 {
					t.Errorf("feed %d fetched at %s and again at %s (%s after) with no ping between: %s then %s",
						f.idx, a.Time.Format("15:04:05.000"), b.Time.Format("15:04:05.000"), b.Time.Sub(a.Time).Round(time.Millisecond),
						w.procOf(a.UserAgent), w.procOf(b.UserAgent))
				}
			}
		}
	}
	var ns []int
	for n := range hist {
		ns = append(ns, n)
	}
	slices.Sort(ns)
	var parts []string
	for _, n := range ns {
		parts = append(parts, fmt.Sprintf("%d feeds × %d", hist[n], n))
	}
	nPings := 0
	for _, ps := range w.pings {
		nPings += len(ps)
	}
	t.Logf("fetches: %d for %d feeds (%.2f per feed, at most %d; %s); %d pings; %d fetches whose poll was never recorded, %d re-polls after them (%d of the killed process's); %d fetches unexplained; by process: %s",
		total, len(w.feeds), float64(total)/float64(len(w.feeds)), worst, strings.Join(parts, ", "), nPings,
		lostTotal, repolled, byKilled, violations, w.byProcess(log))
	if violations > 10 {
		t.Errorf("... %d unexplained fetches in all", violations)
	}
}
