package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/proof"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/farm"
	"github.com/feedmail/feedmail/internal/testkit/testutil"
)

// TestSignupBaseline signs up through the web form as a person does,
// confirms with the emailed link, and the feed publishes a post one second
// later: the post must reach the person exactly once, and nothing the feed
// held at signup may. The signup's own fetch is the baseline (the feed was
// never polled before), so it does not matter which process polls first:
// `feedmail poll` (a poller of its own) or the poller role's pass. The
// same with a digest. "found before confirmation" publishes the post while
// the confirmation email is on its way and a poll records it then: it is
// the person's too, routed to them when they confirm.
func TestSignupBaseline(t *testing.T) {
	cases := []struct {
		name     string
		delivery string // the form's delivery field
		pollBy   string // "cli": a poller of another process; "role": the stack's poller pass
		early    bool   // publish and poll before confirming
	}{
		{"instant, feedmail poll first", "instant", "cli", false},
		{"instant, poller role first", "instant", "role", false},
		{"instant, found before confirmation", "instant", "cli", true},
		{"daily digest, feedmail poll first", "daily", "cli", false},
		{"daily digest, poller role first", "daily", "role", false},
		{"daily digest, found before confirmation", "daily", "cli", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newStack(t)
			ctx := context.Background()
			const reader = "reader@example.net"
			old := s.clk.Now().Add(-48 * time.Hour)
			feed := s.farm.AddFeed(farm.Spec{Title: "Baseline Blog", ETag: farm.ETagStrong, Items: []farm.Item{
				{ID: "old-1", Title: "Old post one", Link: "https://blog.example.org/old-1", Content: "<p>old</p>", Published: old},
				{ID: "old-2", Title: "Old post two", Link: "https://blog.example.org/old-2", Content: "<p>older</p>", Published: old.Add(-time.Hour)},
			}})

			postForm(t, s.base+"/subscriptions", url.Values{"email": {reader}, "url": {feed.URL()},
				"delivery": {tc.delivery}, "zone": {"UTC"}})
			confirmMail := s.deliver(ctx, 1)
			text, _ := testutil.MailParts(t, confirmMail.Raw)
			confirmURL := linkIn(t, text, s.base, "/confirm/")

			other := newPoller(t, s.clk, s.st, s.links, "e2e-cli")
			pollOnce := func() {
				t.Helper()
				f, err := s.st.FeedByURL(ctx, feed.URL())
				if err != nil {
					t.Fatal(err)
				}
				if tc.pollBy == "cli" {
					if _, err := other.PollFeed(ctx, f.ID, "cli"); err != nil {
						t.Fatal(err)
					}
					return
				}
				if !f.NextPollAt.After(s.clk.Now()) {
					if n, err := s.poller.PollDue(ctx); err != nil || n != 1 {
						t.Fatalf("poller pass: %d polled, %v; want the feed polled", n, err)
					}
				} else if _, err := s.poller.PollFeed(ctx, f.ID, "due"); err != nil {
					t.Fatal(err)
				}
			}
			publish := func() {
				s.clk.Advance(time.Second)
				feed.Publish(farm.Item{ID: "fresh", Title: "Fresh post after signup", Link: "https://blog.example.org/fresh",
					Content: "<p>brand new</p>", Published: s.clk.Now()})
			}

			if tc.early {
				publish()
				s.clk.Advance(time.Minute)
				pollOnce()
			}
			s.clk.Advance(time.Second)
			postForm(t, confirmURL, url.Values{})
			if !tc.early {
				publish()
				pollOnce()
			}

			var got []string
			if tc.delivery == "instant" {
				msg := s.deliver(ctx, 2)
				got = []string{msg.Header.Get("Subject")}
			} else {
				f, err := s.st.FeedByURL(ctx, feed.URL())
				if err != nil {
					t.Fatal(err)
				}
				var subs []store.Subscription
				err = s.st.DB.Where("feed_id = ?", f.ID).Find(&subs).Error
				if err != nil || len(subs) != 1 || subs[0].DigestID == nil {
					t.Fatalf("subscriptions of the feed: %+v, %v; want one digest subscription", subs, err)
				}
				dg, err := s.st.DigestByID(ctx, *subs[0].DigestID)
				if err != nil {
					t.Fatal(err)
				}
				s.clk.Set(dg.NextSlotAt)
				if n, err := s.digest.AssembleDue(ctx); err != nil || n != 1 {
					t.Fatalf("digest assembly: %d issues, %v; want 1", n, err)
				}
				msg := s.deliver(ctx, 2)
				text, _ := testutil.MailParts(t, msg.Raw)
				got = []string{text}
			}
			// Nothing else is on its way.
			s.clk.Advance(time.Hour)
			if _, err := s.outbox.SendDue(ctx); err != nil {
				t.Fatal(err)
			}
			if n := s.smtp.Count(); n != 2 {
				t.Fatalf("%d emails at the SMTP server, want 2 (confirmation, then the post)", n)
			}
			body := strings.Join(got, "\n")
			if !strings.Contains(body, "Fresh post after signup") {
				t.Errorf("the email after confirmation does not carry the new post:\n%s", body)
			}
			if strings.Contains(body, "Old post") {
				t.Errorf("a post the feed held at signup was mailed:\n%s", body)
			}
		})
	}
}

// postForm posts a urlencoded form as a browser would (no redirects
// followed) and fails the test unless the answer is 2xx or 303.
func postForm(t *testing.T, target string, form url.Values) {
	t.Helper()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if strings.HasSuffix(target, "/subscriptions") {
		form = withProof(t, c, strings.TrimSuffix(target, "/subscriptions")+"/", form)
	}
	resp, err := c.PostForm(target, form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 && resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("POST %s: %d\n%s", target, resp.StatusCode, truncate(string(b), 2000))
	}
}

var (
	challengeRE = regexp.MustCompile(`name="proof_challenge" value="([^"]+)"`)
	proofBitsRE = regexp.MustCompile(`data-proof-bits="([0-9]+)"`)
)

// withProof is form with the proof of work of the signup page at page
// solved, as the page's script would (the form as it is when the page
// asks for none).
func withProof(t *testing.T, c *http.Client, page string, form url.Values) url.Values {
	t.Helper()
	resp, err := c.Get(page)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	ch, bits := challengeRE.FindSubmatch(b), proofBitsRE.FindSubmatch(b)
	if ch == nil || bits == nil {
		return form
	}
	n, _ := strconv.Atoi(string(bits[1]))
	out := url.Values{}
	for k, v := range form {
		out[k] = v
	}
	out.Set("proof_challenge", string(ch[1]))
	out.Set("proof", proof.Solve(string(ch[1]), n))
	return out
}

// truncate shortens s to n bytes for a failure message.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + fmt.Sprintf("… (%d bytes)", len(s))
}

// TestSignupSendsNewestPost: with "send me the newest post now" (the form's
// default), confirming sends the feed's newest post at once, as one email
// charged 1 credit, for instant and digest delivery alike; without it,
// nothing until a new post.
func TestSignupSendsNewestPost(t *testing.T) {
	for _, tc := range []struct {
		name, delivery string
		newest         bool
	}{
		{"instant", "instant", true},
		{"daily digest", "daily", true},
		{"unticked", "instant", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStack(t)
			ctx := context.Background()
			old := s.clk.Now().Add(-48 * time.Hour)
			feed := s.farm.AddFeed(farm.Spec{Title: "Newest Blog", Items: []farm.Item{
				{ID: "n-2", Title: "The newest post", Link: "https://blog.example.org/n-2", Content: "<p>new</p>", Published: old},
				{ID: "n-1", Title: "An older post", Link: "https://blog.example.org/n-1", Content: "<p>old</p>", Published: old.Add(-24 * time.Hour)},
			}})
			form := url.Values{"email": {"fresh@example.net"}, "url": {feed.URL()}, "delivery": {tc.delivery}, "zone": {"UTC"}}
			if tc.newest {
				form.Set("newest", "1")
			}
			postForm(t, s.base+"/subscriptions", form)
			text, _ := testutil.MailParts(t, s.deliver(ctx, 1).Raw)
			s.clk.Advance(time.Minute)
			postForm(t, linkIn(t, text, s.base, "/confirm/"), url.Values{})
			if _, err := s.outbox.SendDue(ctx); err != nil {
				t.Fatal(err)
			}
			if !tc.newest {
				if n := s.smtp.Count(); n != 1 {
					t.Fatalf("%d emails without asking for the newest post, want only the confirmation", n)
				}
				return
			}
			msg := s.deliver(ctx, 2)
			if subj := msg.Header.Get("Subject"); !strings.Contains(subj, "The newest post") {
				t.Fatalf("the email after confirming is %q, want the newest post", subj)
			}
			u, err := s.st.UserByEmail(ctx, "fresh@example.net")
			if err != nil {
				t.Fatal(err)
			}
			if u.Balance != 499 {
				t.Errorf("balance %d, want the 500 trial credits less 1", u.Balance)
			}
			s.clk.Advance(time.Hour)
			if _, err := s.outbox.SendDue(ctx); err != nil {
				t.Fatal(err)
			}
			if n := s.smtp.Count(); n != 2 {
				t.Errorf("%d emails, want the confirmation and the newest post only", n)
			}
		})
	}
}
