package security

import (
	"context"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/billing"
	"github.com/feedmail/feedmail/digest"
	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/config"
	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/metrics"
	"github.com/feedmail/feedmail/internal/newitems"
	"github.com/feedmail/feedmail/internal/outbox"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/smtptest"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
	"github.com/feedmail/feedmail/internal/token"
	"github.com/feedmail/feedmail/internal/web"
	"github.com/feedmail/feedmail/mailer"
	"github.com/feedmail/feedmail/poller"
)

var t0 = time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)

const (
	baseURL       = "http://feedmail.test"
	from          = "feedmail@feedmail.test"
	webhookSecret = "whsec_security_tests"
)

// TestMain fills, from one goroutine, the cache encoding/xml fills on first
// use, and on Postgres holds one connection open so that crypto/tls's
// certificate cache keeps the server's certificate (see faults.TestMain
// for why: race detector false positives on sync.Map publication).
func TestMain(m *testing.M) {
	const rss = `<rss version="2.0"><channel><title>w</title><item><title>i</title><guid>g</guid></item></channel></rss>`
	_, _ = newitems.Parse([]byte(rss), "application/rss+xml", "https://example.net/f")
	release := storetest.HoldConnection()
	code := m.Run()
	release()
	os.Exit(code)
}

// env is one installation wired as `feedmail serve` wires it (web with the
// credits, WebSub and ping routes; poller; outbox worker with the digest
// renderer; digest worker), on a fake clock, with mail going to an
// smtptest server.
type env struct {
	t     *testing.T
	ctx   context.Context
	clk   *clock.Fake
	st    *store.Store
	m     *metrics.Metrics
	sign  *token.Signer
	links links.Links
	srv   *web.Server
	h     http.Handler
	poll  *poller.Poller
	smtp  *smtptest.Server
	ob    *outbox.Outbox
	dig   *digest.Worker
}

type envOpt struct {
	// guard keeps the private-network guard on (poller and signup).
	guard bool
}

func newEnv(t *testing.T, o envOpt) *env {
	t.Helper()
	e := &env{t: t, ctx: context.Background(), clk: clock.NewFake(t0), m: metrics.New()}
	e.st = storetest.Open(t, storetest.Options{Clock: e.clk, MaxOpenConns: 8})
	var err error
	if e.sign, err = token.NewSigner([]byte("security-tests-secret-0123456789")); err != nil {
		t.Fatal(err)
	}
	e.links = links.New(baseURL, e.sign, from)
	cfg := config.Config{BaseURL: baseURL, From: from, TrialCredits: 500, AllowPrivateNetworks: !o.guard}
	nolim := web.NoLimits()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	e.srv = web.New(web.Deps{Store: e.st, Config: cfg, Clock: e.clk, Tokens: e.sign, Metrics: e.m, Limits: &nolim, Log: log,
		Fetcher: fetcher.New(fetcher.Config{BaseURL: baseURL, AllowPrivate: !o.guard, Timeout: 5 * time.Second})})
	stripe, err := billing.NewStripe(billing.StripeConfig{SecretKey: "sk_test_security", WebhookSecret: webhookSecret,
		APIURL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	e.srv.MountCredits(web.CreditsConfig{Packs: billing.DefaultPacks(), Stripe: stripe})
	e.poll, err = poller.New(poller.Config{Store: e.st, Clock: e.clk, Owner: "security-poller", Metrics: e.m, Links: &e.links,
		Fetch: fetcher.Config{BaseURL: baseURL, AllowPrivate: !o.guard, Timeout: 5 * time.Second},
		Rand:  rand.New(rand.NewPCG(1, 2))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.poll.Close)
	e.srv.MountWebSub(web.WebSubOptions{Ingest: func(ctx context.Context, id int64, body []byte, ct string) error {
		_, err := e.poll.Ingest(ctx, id, body, ct)
		return err
	}})
	e.srv.MountPings(web.PingOptions{PollNow: func(ctx context.Context, id int64, why string) error {
		_, err := e.poll.PollFeed(ctx, id, why)
		return err
	}})
	e.h = e.srv.Handler()

	e.smtp = smtptest.StartT(t, smtptest.Options{})
	sc, err := mailer.ParseSMTPURL(e.smtp.URL() + "&pool=1")
	if err != nil {
		t.Fatal(err)
	}
	tr := mailer.NewSMTP(sc)
	t.Cleanup(func() { _ = tr.Close() })
	sender := mailer.Sender{Address: from}
	e.ob, err = outbox.NewOutbox(outbox.OutboxConfig{Store: e.st, Transport: tr, Sender: sender, Links: e.links,
		Clock: e.clk, Metrics: e.m, Owner: "security-mailer",
		Renderers: map[string]outbox.Renderer{store.KindDigest: outbox.NewDigestRenderer(outbox.DigestRenderConfig{
			Store: e.st, Sender: sender, Links: e.links, Clock: e.clk})}})
	if err != nil {
		t.Fatal(err)
	}
	if e.dig, err = digest.NewWorker(digest.Config{Store: e.st, Owner: "security-digest", Clock: e.clk, Metrics: e.m}); err != nil {
		t.Fatal(err)
	}
	return e
}

// request sends one request through the whole handler (middleware,
// cross-origin protection, routes), as from a client at 192.0.2.1.
func (e *env) request(method, target string, form url.Values, hdr map[string]string) *httptest.ResponseRecorder {
	e.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	r := httptest.NewRequest(method, target, body)
	if form != nil {
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	r.RemoteAddr = "192.0.2.1:5555"
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, r)
	return w
}

// reader makes a person with credits and a confirmed instant subscription
// to feedID, or one delivered into a digest called digestName.
func (e *env) reader(email string, feedID int64, digestName string) (*store.User, *store.Subscription) {
	e.t.Helper()
	u, _, err := e.st.EnsureUser(e.ctx, email)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, _, err := e.st.AddLedgerEntry(e.ctx, u.ID, store.LedgerGrant, 100, "security:"+email, "test"); err != nil {
		e.t.Fatal(err)
	}
	var dig *int64
	if digestName != "" {
		sched, err := digest.ParseSchedule("@every 1h", "UTC")
		if err != nil {
			e.t.Fatal(err)
		}
		d, err := e.st.SetDigest(e.ctx, u.ID, digestName, sched)
		if err != nil {
			e.t.Fatal(err)
		}
		dig = &d.ID
	}
	sub, err := e.st.Subscribe(e.ctx, u.ID, feedID, dig, true)
	if err != nil {
		e.t.Fatal(err)
	}
	return u, sub
}

// pollAll runs poller passes until nothing is due.
func (e *env) pollAll() {
	e.t.Helper()
	if _, err := e.poll.PollDue(e.ctx); err != nil {
		e.t.Fatal(err)
	}
}

// sendAll runs outbox passes until nothing is claimed.
func (e *env) sendAll() {
	e.t.Helper()
	for range 10 {
		n, err := e.ob.SendDue(e.ctx)
		if err != nil {
			e.t.Fatal(err)
		}
		if n == 0 {
			return
		}
	}
}

func (e *env) feedByURL(u string) *store.Feed {
	e.t.Helper()
	f, err := e.st.FeedByURL(e.ctx, u)
	if err != nil {
		e.t.Fatal(err)
	}
	return f
}
