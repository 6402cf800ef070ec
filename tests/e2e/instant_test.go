package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	netmail "net/mail"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/newitems"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/farm"
	"github.com/feedmail/feedmail/internal/testkit/proc"
	"github.com/feedmail/feedmail/internal/testkit/smtptest"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
	"github.com/feedmail/feedmail/internal/testkit/testutil"
	"github.com/feedmail/feedmail/internal/token"
	"github.com/feedmail/feedmail/mailer"
)

// instantSecret is FEEDMAIL_SECRET of the instant end-to-end test.
const instantSecret = "e2e-instant-secret-0123456789"

// TestInstantEndToEnd runs the real binary: `feedmail serve` with every
// role as a subprocess, a feed on the farm, and mail going to an SMTP
// server over loopback (then, in a second run, to a Maildir). A person
// subscribed with --confirmed (trial credits) gets exactly one email per
// new post: of three posts published at once, the one dated 8 days before
// the newest post seen earlier is ignored by the 7-day rule (which
// `feedmail poll` reports), the other two arrive with the headers and parts
// the design asks for, and the balance drops by two.
func TestInstantEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the feedmail binary")
	}
	bin := proc.BuildT(t)
	for _, transport := range []string{"smtp", "maildir"} {
		t.Run(transport, func(t *testing.T) { runInstant(t, bin, transport) })
	}
}

// instantEnv is one installation: a database, its environment, the binary.
type instantEnv struct {
	t    *testing.T
	bin  string
	env  []string
	base string
}

// cli runs a feedmail command to completion and returns its stdout; a
// non-zero exit fails the test.
func (e *instantEnv) cli(args ...string) string {
	e.t.Helper()
	return proc.Run(e.t, e.bin, e.env, args...)
}

// serve starts `feedmail serve` and stops it (SIGTERM, then wait) at
// cleanup; its log is shown when the test fails.
func (e *instantEnv) serve() {
	e.t.Helper()
	p, err := proc.Start(e.bin, e.env, "serve")
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		if err := p.Stop(30 * time.Second); errors.Is(err, proc.ErrStopTimeout) {
			e.t.Error("feedmail serve did not stop within 30 s of SIGTERM")
		} else if err != nil {
			e.t.Errorf("feedmail serve exited with %v", err)
		}
		if e.t.Failed() {
			e.t.Logf("feedmail serve log:\n%s", p.Log.String())
		}
	})
	p.WaitHealthy(e.t, "feedmail serve", e.base, 30*time.Second)
}

func runInstant(t *testing.T, bin, transport string) {
	const (
		reader = "reader@example.net"
		trial  = 10
	)
	dsn := storetest.FreshDSN(t, storetest.URL())
	addr := proc.FreeAddr(t)
	e := &instantEnv{t: t, bin: bin, base: "http://" + addr}
	vars := map[string]string{
		"FEEDMAIL_DATABASE_URL":           dsn,
		"FEEDMAIL_LISTEN":                 addr,
		"FEEDMAIL_BASE_URL":               e.base,
		"FEEDMAIL_FROM":                   "feedmail@example.com",
		"FEEDMAIL_SECRET":                 instantSecret,
		"FEEDMAIL_ALLOW_PRIVATE_NETWORKS": "1",
		"FEEDMAIL_TRIAL_CREDITS":          fmt.Sprint(trial),
		"FEEDMAIL_ROLES":                  "web,poller,mailer,digest",
		"FEEDMAIL_LOG_LEVEL":              "debug",
	}
	var srv *smtptest.Server
	maildir := filepath.Join(t.TempDir(), "mail")
	if transport == "smtp" {
		srv = smtptest.StartT(t, smtptest.Options{})
		vars["FEEDMAIL_SMTP_URL"] = srv.URL()
	} else {
		vars["FEEDMAIL_MAILDIR"] = maildir
	}
	e.env = proc.Env(vars)

	fm := farm.New(clock.Real{})
	t.Cleanup(fm.Close)
	now := time.Now().UTC().Truncate(time.Second)
	newestSeen := now.Add(-2 * time.Hour)
	feed := fm.AddFeed(farm.Spec{Title: "End to End Blog", ETag: farm.ETagStrong, LastModified: true, Items: []farm.Item{
		{ID: "seen-2", Title: "Seen before, newest", Link: "https://blog.example.org/seen-2", Content: "<p>old news</p>", Published: newestSeen},
		{ID: "seen-1", Title: "Seen before", Link: "https://blog.example.org/seen-1", Content: "<p>older news</p>", Published: newestSeen.Add(-24 * time.Hour)},
	}})

	var sub struct {
		State        string `json:"state"`
		Subscription int64  `json:"subscription"`
		TrialCredits int64  `json:"trial_credits"`
		Balance      int64  `json:"balance"`
	}
	out := e.cli("subscribe", "--email", reader, "--feed", feed.URL(), "--confirmed")
	if err := json.Unmarshal([]byte(out), &sub); err != nil {
		t.Fatalf("subscribe output %q: %v", out, err)
	}
	if sub.State != store.SubActive || sub.Balance != trial {
		t.Fatalf("subscribe: %+v, want active with %d trial credits", sub, trial)
	}

	// serve's poller sees the feed for the first time: everything in it is
	// recorded as seen and nothing is mailed.
	e.serve()
	st := storetest.OpenDSN(t, dsn, storetest.Options{NoMigrate: true})
	ctx := context.Background()
	testutil.Eventually(t, 60*time.Second, func() bool {
		f, err := st.FeedByURL(ctx, feed.URL())
		return err == nil && f.LastPolledAt != nil && f.LeaseOwner == ""
	}, "the first poll records the feed's items as seen")

	// Three posts at once; the third is dated 8 days before the newest
	// post seen before.
	fresh := []farm.Item{
		{ID: "new-1", Title: "Fresh post one", Link: "https://blog.example.org/new-1", Published: now,
			Content: `<p>First <a href="/about">fresh</a> post.</p><script>alert("x")</script>`},
		{ID: "new-2", Title: "Fresh post two", Link: "https://blog.example.org/new-2", Published: now.Add(-10 * time.Minute),
			Content: `<p>Second fresh post.</p>`},
		{ID: "stale", Title: "Stale post", Link: "https://blog.example.org/stale", Published: newestSeen.Add(-8 * 24 * time.Hour),
			Content: `<p>Old stuff.</p>`},
	}
	feed.Publish(fresh...)
	pollOut := e.cli("poll", feed.URL())
	t.Logf("feedmail poll %s:\n%s", feed.URL(), pollOut)
	var report struct {
		NewItems []struct {
			Title string `json:"title"`
		} `json:"new_items"`
		IgnoredItems []struct {
			Title string `json:"title"`
			Rule  string `json:"rule"`
		} `json:"ignored_items"`
		EmailsQueued int `json:"emails_queued"`
	}
	if err := json.Unmarshal([]byte(pollOut), &report); err != nil {
		t.Fatalf("feedmail poll output: %v", err)
	}
	if len(report.IgnoredItems) != 1 || report.IgnoredItems[0].Title != "Stale post" ||
		report.IgnoredItems[0].Rule != string(newitems.RuleOlderThanNewestSeen) {
		t.Errorf("ignored items %+v, want the stale post by the 7-day rule", report.IgnoredItems)
	}
	if len(report.NewItems) != 2 || report.NewItems[0].Title != "Fresh post one" || report.NewItems[1].Title != "Fresh post two" ||
		report.EmailsQueued != 2 {
		t.Errorf("new items %+v, %d emails queued; want the two fresh posts and 2 emails", report.NewItems, report.EmailsQueued)
	}

	// Exactly two emails arrive, and the outbox holds nothing else.
	var raws [][]byte
	testutil.Eventually(t, 60*time.Second, func() bool {
		raws = delivered(t, srv, maildir)
		return len(raws) >= 2 && outboxSettled(t, st)
	}, "two emails delivered and the outbox settled")
	if raws = delivered(t, srv, maildir); len(raws) != 2 {
		t.Fatalf("%d emails delivered, want 2", len(raws))
	}
	var rows []store.OutboxRow
	if err := st.DB.Where("kind = ?", store.KindItem).Order("id").Find(&rows).Error; err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].State != store.OutboxSent || rows[1].State != store.OutboxSent {
		t.Fatalf("item outbox rows: %+v", rows)
	}
	subjects := map[string]bool{}
	for _, raw := range raws {
		subjects[checkInstantEmail(t, raw, reader, e.base, sub.Subscription, installID(t, st))] = true
	}
	if !subjects["Fresh post one"] || !subjects["Fresh post two"] {
		t.Errorf("subjects %v, want the two fresh posts", subjects)
	}

	var bal struct {
		Email   string `json:"email"`
		Balance int64  `json:"balance"`
	}
	if err := json.Unmarshal([]byte(e.cli("credits", "balance", "--email", reader)), &bal); err != nil {
		t.Fatal(err)
	}
	if bal.Email != reader || bal.Balance != trial-2 {
		t.Errorf("balance %+v, want %d", bal, trial-2)
	}
}

// delivered returns the raw messages delivered so far.
func delivered(t *testing.T, srv *smtptest.Server, maildir string) [][]byte {
	t.Helper()
	var out [][]byte
	if srv != nil {
		for _, m := range srv.Messages() {
			out = append(out, m.Raw)
		}
		return out
	}
	files, err := os.ReadDir(filepath.Join(maildir, "new"))
	if err != nil {
		return nil
	}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(maildir, "new", f.Name()))
		if err == nil {
			out = append(out, b)
		}
	}
	return out
}

// outboxSettled reports that no email waits to be sent or retried.
func outboxSettled(t *testing.T, st *store.Store) bool {
	t.Helper()
	var n int64
	if err := st.DB.Model(&store.OutboxRow{}).Where("state IN ?", []string{store.OutboxQueued, store.OutboxHeld}).Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n == 0
}

// checkInstantEmail checks the headers and parts of one instant email and
// returns its subject.
func checkInstantEmail(t *testing.T, raw []byte, to, base string, subID int64, install string) string {
	t.Helper()
	msg, err := netmail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("unreadable message: %v", err)
	}
	h := msg.Header
	subject, err := new(mime.WordDecoder).DecodeHeader(h.Get("Subject"))
	if err != nil {
		t.Errorf("Subject %q: %v", h.Get("Subject"), err)
	}
	from, err := netmail.ParseAddress(h.Get("From"))
	if err != nil || from.Address != "feedmail@example.com" || from.Name != "End to End Blog via feedmail" {
		t.Errorf("From = %q (%v)", h.Get("From"), err)
	}
	if got, err := netmail.ParseAddress(h.Get("To")); err != nil || got.Address != to {
		t.Errorf("To = %q", h.Get("To"))
	}
	if _, err := h.Date(); err != nil {
		t.Errorf("Date: %v", err)
	}
	// The Message-ID names the subscription and item, with this install's
	// tag (from FEEDMAIL_SECRET and the database's install id).
	var item int64
	id := h.Get("Message-Id")
	if _, err := fmt.Sscanf(id, fmt.Sprintf("<item-%d-%%d.", subID), &item); err != nil {
		t.Errorf("Message-ID = %q, want <item-%d-<item>.<tag>@example.com>", id, subID)
	} else if signer, err := token.NewSigner([]byte(instantSecret)); err != nil {
		t.Fatal(err)
	} else if want := (mailer.Sender{Address: "feedmail@example.com",
		IDKey: mailer.MessageIDKey(signer.Derive(mailer.MessageIDKeyLabel), install)}).ItemMessageID(subID, item); id != want {
		t.Errorf("Message-ID = %q, want %q", id, want)
	}
	if id := h.Get("List-Id"); !strings.Contains(id, "End to End Blog") || !strings.Contains(id, ".example.com>") {
		t.Errorf("List-Id = %q", id)
	}
	lu := h.Get("List-Unsubscribe")
	if !strings.HasPrefix(lu, "<"+base+"/unsubscribe/") || strings.Contains(lu, "mailto:") {
		t.Errorf("List-Unsubscribe = %q, want the one-click URL alone", lu)
	}
	if got := h.Get("List-Unsubscribe-Post"); got != "List-Unsubscribe=One-Click" {
		t.Errorf("List-Unsubscribe-Post = %q", got)
	}
	mt, params, err := mime.ParseMediaType(h.Get("Content-Type"))
	if err != nil || mt != "multipart/alternative" {
		t.Fatalf("Content-Type = %q (%v)", h.Get("Content-Type"), err)
	}
	mr := multipart.NewReader(msg.Body, params["boundary"])
	var types []string
	var html string
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("parts: %v", err)
		}
		pt, _, _ := mime.ParseMediaType(p.Header.Get("Content-Type"))
		types = append(types, pt)
		body, _ := io.ReadAll(p) // multipart.Reader decodes quoted-printable
		if pt == "text/html" {
			html = string(body)
		}
	}
	if strings.Join(types, ",") != "text/plain,text/html" {
		t.Errorf("parts %v, want text/plain then text/html", types)
	}
	if strings.Contains(html, "<script") || strings.Contains(html, "alert(") {
		t.Error("the feed's script reached the HTML part")
	}
	if !strings.Contains(html, base+"/account/") || !strings.Contains(html, base+"/unsubscribe/") {
		t.Error("the HTML part lacks the manage and unsubscribe links")
	}
	if subject == "Fresh post one" && !strings.Contains(html, "https://blog.example.org/about") {
		t.Error("a relative link in the post was not made absolute")
	}
	return subject
}

// installID is the install id feedmail keeps in the database st opens.
func installID(t *testing.T, st *store.Store) string {
	t.Helper()
	id, err := st.Setting(context.Background(), "install_id")
	if err != nil {
		t.Fatalf("install id: %v", err)
	}
	return id
}
