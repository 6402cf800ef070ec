package faults

import (
	"context"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/metrics"
	"github.com/feedmail/feedmail/internal/outbox"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/farm"
	"github.com/feedmail/feedmail/internal/testkit/smtptest"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
	"github.com/feedmail/feedmail/internal/token"
	"github.com/feedmail/feedmail/mailer"
	"github.com/feedmail/feedmail/poller"
)

// t0 is where every fake clock of the matrix starts (a Monday).
var t0 = time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)

const (
	baseURL = "https://feedmail.example"
	from    = "feedmail@feedmail.example"
	// fetchTimeout replaces the 30 s limit so the hanging and trickling
	// rows end quickly; every other limit is the production default.
	fetchTimeout = 2 * time.Second
)

// env is one installation: a store on a fake clock, a feed farm on the same
// clock, metrics and signed links.
type env struct {
	t     *testing.T
	ctx   context.Context
	clk   *clock.Fake
	st    *store.Store
	fm    *farm.Farm
	m     *metrics.Metrics
	links links.Links
}

func newEnv(t *testing.T) *env {
	t.Helper()
	clk := clock.NewFake(t0)
	fm := farm.New(clk)
	t.Cleanup(fm.Close)
	signer, err := token.NewSigner([]byte("faults-test-secret-0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, ctx: context.Background(), clk: clk, fm: fm, m: metrics.New(),
		st:    storetest.Open(t, storetest.Options{Clock: clk, MaxOpenConns: 8}),
		links: links.New(baseURL, signer, from)}
}

// poller is the production poller with the guard off (the farm is on
// 127.0.0.1), a short fetch timeout and a fixed jitter seed.
func (e *env) poller(mod func(*poller.Config)) *poller.Poller {
	e.t.Helper()
	cfg := poller.Config{Store: e.st, Clock: e.clk, Owner: "faults-poller", Metrics: e.m, Links: &e.links,
		Fetch: fetcher.Config{BaseURL: baseURL, AllowPrivate: true, Timeout: fetchTimeout},
		Rand:  rand.New(rand.NewPCG(7, 11))}
	if mod != nil {
		mod(&cfg)
	}
	p, err := poller.New(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(p.Close)
	return p
}

// pass runs one PollDue and wants exactly want feeds claimed.
func (e *env) pass(p *poller.Poller, want int) {
	e.t.Helper()
	n, err := p.PollDue(e.ctx)
	if err != nil || n != want {
		e.t.Fatalf("PollDue: %d feeds, %v; want %d", n, err, want)
	}
}

// follow makes the feed of url with one confirmed instant subscriber per
// address, each with credits.
func (e *env) follow(url string, credits int64, emails ...string) *store.Feed {
	e.t.Helper()
	f, _, err := e.st.EnsureFeed(e.ctx, url)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, addr := range emails {
		u, _, err := e.st.EnsureUser(e.ctx, addr)
		if err != nil {
			e.t.Fatal(err)
		}
		if credits > 0 {
			if _, _, err := e.st.AddLedgerEntry(e.ctx, u.ID, store.LedgerGrant, credits, "faults:"+addr, "test credits"); err != nil {
				e.t.Fatal(err)
			}
		}
		if _, err := e.st.Subscribe(e.ctx, u.ID, f.ID, nil, true); err != nil {
			e.t.Fatal(err)
		}
	}
	return e.feed(f.ID)
}

func (e *env) feed(id int64) *store.Feed {
	e.t.Helper()
	f, err := e.st.FeedByID(e.ctx, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return f
}

func (e *env) user(email string) *store.User {
	e.t.Helper()
	u, err := e.st.UserByEmail(e.ctx, email)
	if err != nil {
		e.t.Fatal(err)
	}
	return u
}

// lastPoll is the feed's newest poll_log row.
func (e *env) lastPoll(feedID int64) store.PollLog {
	e.t.Helper()
	ps, err := e.st.RecentPolls(e.ctx, feedID, 1)
	if err != nil || len(ps) != 1 {
		e.t.Fatalf("recent polls: %v, %v", ps, err)
	}
	return ps[0]
}

// items maps identity → title of the feed's recorded items.
func (e *env) items(feedID int64) map[string]string {
	e.t.Helper()
	var rows []store.Item
	if err := e.st.DB.Where("feed_id = ?", feedID).Find(&rows).Error; err != nil {
		e.t.Fatal(err)
	}
	out := make(map[string]string, len(rows))
	for _, r := range rows {
		out[r.Identity] = r.Title
	}
	return out
}

// outbox returns every outbox row, by id.
func (e *env) outbox() map[int64]store.OutboxRow {
	e.t.Helper()
	var rows []store.OutboxRow
	if err := e.st.DB.Order("id").Find(&rows).Error; err != nil {
		e.t.Fatal(err)
	}
	out := make(map[int64]store.OutboxRow, len(rows))
	for _, r := range rows {
		out[r.ID] = r
	}
	return out
}

// outboxIn counts outbox rows in state.
func (e *env) outboxIn(state string) int {
	n := 0
	for _, r := range e.outbox() {
		if r.State == state {
			n++
		}
	}
	return n
}

// keepsAll fails the test unless every item and outbox row of before is
// still there (items by identity; outbox rows by id, kind, item, recipient).
func (e *env) keepsAll(feedID int64, items map[string]string, rows map[int64]store.OutboxRow) {
	e.t.Helper()
	nowItems := e.items(feedID)
	for id := range items {
		if _, ok := nowItems[id]; !ok {
			e.t.Errorf("item %s lost", id)
		}
	}
	nowRows := e.outbox()
	for id, r := range rows {
		n, ok := nowRows[id]
		if !ok {
			e.t.Errorf("outbox row %d lost", id)
			continue
		}
		if n.Kind != r.Kind || n.Address != r.Address || deref(n.ItemID) != deref(r.ItemID) || n.DedupeKey != r.DedupeKey {
			e.t.Errorf("outbox row %d changed: %+v → %+v", id, r, n)
		}
	}
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// outboxWorker is the production outbox worker on tr.
func (e *env) outboxWorker(tr mailer.Transport) *outbox.Outbox {
	e.t.Helper()
	o, err := outbox.NewOutbox(outbox.OutboxConfig{Store: e.st, Transport: tr, Sender: mailer.Sender{Address: from},
		Links: e.links, Clock: e.clk, Metrics: e.m, Owner: "faults-mailer", Lease: 5 * time.Minute})
	if err != nil {
		e.t.Fatal(err)
	}
	return o
}

// send runs one outbox pass.
func (e *env) send(o *outbox.Outbox) int {
	e.t.Helper()
	n, err := o.SendDue(e.ctx)
	if err != nil {
		e.t.Fatalf("SendDue: %v", err)
	}
	return n
}

// smtpTo is the production SMTP transport to srv with extra URL parameters.
func smtpTo(t *testing.T, srv *smtptest.Server, params string) *mailer.SMTPTransport {
	t.Helper()
	u := srv.URL()
	if params != "" {
		u += "&" + params
	}
	cfg, err := mailer.ParseSMTPURL(u)
	if err != nil {
		t.Fatal(err)
	}
	tr := mailer.NewSMTP(cfg)
	t.Cleanup(func() { _ = tr.Close() })
	return tr
}

// messageIDs counts accepted messages per Message-ID over servers.
func messageIDs(servers ...*smtptest.Server) map[string]int {
	out := map[string]int{}
	for _, s := range servers {
		for _, m := range s.Messages() {
			out[m.Header.Get("Message-Id")]++
		}
	}
	return out
}

// counter reads a counter of a vector.
func counter(t *testing.T, c interface {
	Write(*dto.Metric) error
}) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// keys returns the sorted keys of m, for messages.
func keys[V any](m map[int64]V) []int64 {
	out := make([]int64, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(a, b int) bool { return out[a] < out[b] })
	return out
}
