package faults

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/feedmail/feedmail/digest"
	"github.com/feedmail/feedmail/internal/config"
	"github.com/feedmail/feedmail/internal/outbox"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/farm"
	"github.com/feedmail/feedmail/internal/testkit/smtptest"
	"github.com/feedmail/feedmail/internal/testkit/testutil"
	"github.com/feedmail/feedmail/internal/web"
	"github.com/feedmail/feedmail/mailer"
)

// scrape reads the Prometheus text exposition of h's /metrics into
// series → value ("name{label="v",...}" as printed).
func scrape(t *testing.T, h http.Handler) map[string]float64 {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if w.Code != http.StatusOK {
		t.Fatalf("/metrics: %d", w.Code)
	}
	return parseExposition(t, w.Body.String())
}

func parseExposition(t *testing.T, text string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("bad exposition line %q", line)
		}
		out[line[:i]] = v
	}
	return out
}

// TestMetricsAfterActivity runs the workers of `feedmail serve` in process,
// all sharing one metrics.Metrics as serve does — the web server (with the
// WebSub routes), the poller, the digest worker and the outbox worker over
// SMTP — through a day's worth of events: first polls, a 304, a new post and
// one over a year old, a 404, a reset connection, instant emails that are
// sent, retried (450), failed (550) and held for credits (with the free
// notice), a digest issue, and a forged WebSub push. Then it scrapes
// GET /metrics and finds every series an operator needs (docs/metrics.md).
//
// The queue-depth gauge for due feeds is set by cmd/feedmail's poller role,
// not by a worker, so TestServeExportsQueueDepths checks it on a real
// `feedmail serve`.
func TestMetricsAfterActivity(t *testing.T) {
	e := newEnv(t)
	srv := web.New(web.Deps{Store: e.st, Clock: e.clk, Metrics: e.m, Tokens: e.links.Tokens,
		Config: config.Config{BaseURL: baseURL, From: from}})
	p := e.poller(nil)
	srv.MountWebSub(web.WebSubOptions{Ingest: func(ctx context.Context, id int64, body []byte, ct string) error {
		_, err := p.Ingest(ctx, id, body, ct)
		return err
	}})
	h := srv.Handler()

	good := e.fm.AddFeed(farm.Spec{Title: "Busy", ItemCount: 3, ItemInterval: time.Hour, ETag: farm.ETagStrong, LastModified: true})
	f := e.follow(good.URL(), 100, "ann@example.net", "tmp@example.net", "perm@example.net")
	e.follow(good.URL(), 0, "broke@example.net")
	dig := e.user("ann@example.net")
	sched, err := digest.ParseSchedule("@every 1h", "UTC")
	if err != nil {
		t.Fatal(err)
	}
	d, err := e.st.SetDigest(e.ctx, dig.ID, "Morning", sched)
	if err != nil {
		t.Fatal(err)
	}
	dreader := e.follow(e.fm.AddFeed(farm.Spec{Title: "Digest feed", ItemCount: 2, ETag: farm.ETagStrong}).URL(), 0)
	if _, err := e.st.Subscribe(e.ctx, dig.ID, dreader.ID, &d.ID, true); err != nil {
		t.Fatal(err)
	}
	gone := e.fm.AddFeed(farm.Spec{Status: http.StatusNotFound})
	e.follow(gone.URL(), 10, "c@example.net")
	reset := e.fm.AddFeed(farm.Spec{Hostile: farm.Reset})
	e.follow(reset.URL(), 10, "d@example.net")

	e.pass(p, 4) // first polls: 2 feeds primed, a 404, a reset
	e.clk.Advance(10 * time.Minute)
	good.Publish()
	good.Publish(farm.Item{ID: "ancient", Title: "Ancient", Link: good.URL() + "/i/ancient", Published: e.clk.Now().AddDate(-2, 0, 0)})
	e.fm.Feed(2).Publish()
	if _, err := p.PollDue(e.ctx); err != nil { // the two feeds with posts
		t.Fatal(err)
	}
	e.clk.Advance(10 * time.Minute)
	if _, err := p.PollDue(e.ctx); err != nil { // 304s
		t.Fatal(err)
	}
	e.clk.Advance(time.Hour)
	dw, err := digest.NewWorker(digest.Config{Store: e.st, Owner: "metrics-digest", Clock: e.clk, Metrics: e.m})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := dw.AssembleDue(e.ctx); err != nil || n != 1 {
		t.Fatalf("digest issues %d, %v", n, err)
	}

	sm := smtptest.StartT(t, smtptest.Options{TempFail: []string{"tmp@example.net"}, PermFail: []string{"perm@example.net"}})
	sender := mailer.Sender{Address: from}
	ob, err := outbox.NewOutbox(outbox.OutboxConfig{Store: e.st, Transport: smtpTo(t, sm, "pool=1"), Sender: sender,
		Links: e.links, Clock: e.clk, Metrics: e.m, Owner: "metrics-mailer", PollInterval: 10 * time.Millisecond,
		Renderers: map[string]outbox.Renderer{store.KindDigest: outbox.NewDigestRenderer(outbox.DigestRenderConfig{
			Store: e.st, Sender: sender, Links: e.links, Clock: e.clk})}})
	if err != nil {
		t.Fatal(err)
	}
	// Run (not SendDue) so that the worker refreshes the queue gauges as
	// it does in production; stop it once the wave has gone out.
	ctx, cancel := context.WithCancel(e.ctx)
	var wg sync.WaitGroup
	wg.Go(func() { _ = ob.Run(ctx) })
	// Wait for every outcome asserted below, not only for the accepted
	// mail: the outbox's workers run passes side by side, and stopping
	// them while a pass still settles its failures gives those rows back
	// unsettled (no "retry" counted).
	outcomes := []struct{ kind, result string }{
		{store.KindItem, "sent"}, {store.KindItem, "retry"}, {store.KindItem, "failed"}, {store.KindItem, "held"},
		{store.KindDigest, "sent"}, {store.KindNotice, "sent"},
	}
	testutil.EventuallySeen(t, 60*time.Second, func() (bool, string) {
		ok, seen := sm.Count() >= 3, fmt.Sprintf("%d accepted by the SMTP server", sm.Count())
		for _, o := range outcomes {
			n := counter(t, e.m.Emails.WithLabelValues(o.kind, o.result))
			ok = ok && n >= 1
			seen += fmt.Sprintf(", %s %s %v", o.kind, o.result, n)
		}
		return ok, seen
	}, "the outbox worker sends, retries, fails and holds the instant emails, sends the digest and the credits notice")
	cancel()
	wg.Wait()

	// A forged push to the WebSub callback.
	if ok, err := e.st.SetWebSub(e.ctx, f.ID, e.feed(f.ID).WebSub(), store.WebSubFields{Hub: "https://hub.example/",
		Topic: f.URL, State: store.WebSubStateActive, Secret: "hub-secret-1234", RenewAt: ptrTime(e.clk.Now().Add(time.Hour)),
		ExpiresAt: ptrTime(e.clk.Now().Add(24 * time.Hour))}, time.Time{}, ""); err != nil || !ok {
		t.Fatalf("set websub: %v %v", ok, err)
	}
	req := httptest.NewRequest(http.MethodPost, strings.TrimPrefix(e.links.WebSubCallback(f.ID, "hub-secret-1234"), baseURL), strings.NewReader("<rss/>"))
	req.Header.Set("X-Hub-Signature", "sha256=00")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if w.Code != http.StatusAccepted {
		t.Fatalf("forged push: %d", w.Code)
	}

	got := scrape(t, h)
	want := []struct {
		series string
		min    float64
	}{
		{`feedmail_polls_total{outcome="ok",status="200"}`, 4},
		{`feedmail_polls_total{outcome="not_modified",status="304"}`, 2},
		{`feedmail_polls_total{outcome="http_error",status="404"}`, 1},
		{`feedmail_polls_total{outcome="failure",status="0"}`, 1},
		{`feedmail_poll_fetch_failures_total{kind="connection"}`, 1},
		{`feedmail_send_failures_total{cause="reply_4xx",channel="email"}`, 1},
		{`feedmail_send_failures_total{cause="reply_5xx",channel="email"}`, 1},
		{`feedmail_database_up`, 1},
		{`feedmail_poll_duration_seconds_count`, 8},
		{`feedmail_poll_duration_seconds_bucket{le="+Inf"}`, 8},
		{`feedmail_poll_lag_seconds_count`, 1},
		{`feedmail_items_total{result="first_poll",rule=""}`, 5},
		{`feedmail_items_total{result="new",rule=""}`, 2},
		{`feedmail_items_total{result="ignored",rule="older than one year"}`, 1},
		{`feedmail_emails_total{kind="item",result="sent"}`, 1},
		{`feedmail_emails_total{kind="item",result="retry"}`, 1},
		{`feedmail_emails_total{kind="item",result="failed"}`, 1},
		{`feedmail_emails_total{kind="item",result="held"}`, 1},
		{`feedmail_emails_total{kind="digest",result="sent"}`, 1},
		{`feedmail_emails_total{kind="notice",result="sent"}`, 1},
		{`feedmail_digest_issues_total`, 1},
		{`feedmail_credits_charged_total`, 3},
		{`feedmail_websub_events_total{event="bad_signature"}`, 1},
		{`feedmail_http_requests_total{code="202",route="POST /websub/{token}"}`, 1},
		{`feedmail_queue_depth{queue="outbox"}`, 0},
		{`feedmail_queue_depth{queue="held"}`, 0},
		{`go_goroutines`, 1},
		{`process_resident_memory_bytes`, 1},
	}
	for _, w := range want {
		v, ok := got[w.series]
		switch {
		case !ok:
			t.Errorf("%s: not exported", w.series)
		case v < w.min:
			t.Errorf("%s = %v, want at least %v", w.series, v, w.min)
		}
	}
	if t.Failed() {
		var names []string
		for k := range got {
			if strings.HasPrefix(k, "feedmail_") {
				names = append(names, k+" "+strconv.FormatFloat(got[k], 'g', -1, 64))
			}
		}
		t.Logf("exported feedmail series:\n%s", strings.Join(names, "\n"))
	}
}

func ptrTime(t time.Time) *time.Time { return &t }
