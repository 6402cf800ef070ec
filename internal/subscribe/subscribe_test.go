package subscribe

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/digest"
	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
	"github.com/feedmail/feedmail/internal/token"
)

func newService(t *testing.T) *Service {
	t.Helper()
	clk := clock.NewFake(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
	st := storetest.Open(t, storetest.Options{Clock: clk})
	sign, err := token.NewSigner([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	return &Service{Store: st, Clock: clk, TrialCredits: 500,
		Links: links.New("http://feedmail.test", sign, "feedmail@feedmail.test")}
}

// noticeSubjects lists the subjects of the queued notices, oldest first.
func noticeSubjects(t *testing.T, st *store.Store) []string {
	t.Helper()
	var rows []store.OutboxRow
	if err := st.DB.Where("kind = ?", store.KindNotice).Order("id").Find(&rows).Error; err != nil {
		t.Fatal(err)
	}
	var out []string
	for i := range rows {
		n, err := store.NoticeOf(&rows[i])
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, n.Subject+" | "+n.Text)
	}
	return out
}

// TestSubscribeOptions checks what each option of a Request changes: the
// state, the trial, the email sent and its words, and an active
// subscription left alone by KeepActive.
func TestSubscribeOptions(t *testing.T) {
	daily := digest.Presets()[0]
	cases := []struct {
		name       string
		first      *Request // an earlier request by the same person
		req        Request
		wantState  string // "" when no subscription is returned
		wantTrial  int64
		wantSent   bool
		wantNotice string // a word of the last notice's subject and text, "" for none
		wantDigest string
	}{
		{name: "form, pending, confirm email with delivery",
			req:       Request{Email: "a@example.com", Feed: Found{URL: "https://blog.example/feed", Title: "Blog"}, KeepActive: true},
			wantState: store.SubPending, wantSent: true, wantNotice: "Confirm your feedmail subscription | Someone (hopefully you) asked"},
		{name: "form, preset digest created",
			req: Request{Email: "a@example.com", Feed: Found{URL: "https://blog.example/feed"}, Preset: &daily,
				Zone: "Europe/Berlin", KeepActive: true},
			wantState: store.SubPending, wantSent: true, wantNotice: "in your digest “Daily”", wantDigest: "Daily"},
		{name: "form, already active: sign-in email, nothing changed",
			first:      &Request{Email: "a@example.com", Feed: Found{URL: "https://blog.example/feed"}, Confirmed: true},
			req:        Request{Email: "a@example.com", Feed: Found{URL: "https://blog.example/feed"}, KeepActive: true},
			wantNotice: "the feed “https://blog.example/feed”"},
		{name: "operator, pending, operator's words",
			req:       Request{Email: "a@example.com", Feed: Found{URL: "https://blog.example/feed"}, ByOperator: true},
			wantState: store.SubPending, wantSent: true, wantNotice: "or the operator of this feedmail for you"},
		{name: "operator, confirmed: trial, no email",
			req:       Request{Email: "a@example.com", Feed: Found{URL: "https://blog.example/feed"}, Confirmed: true, ByOperator: true},
			wantState: store.SubActive, wantTrial: 500},
		{name: "operator, active again without KeepActive: no email, no second trial",
			first:     &Request{Email: "a@example.com", Feed: Found{URL: "https://blog.example/feed"}, Confirmed: true},
			req:       Request{Email: "a@example.com", Feed: Found{URL: "https://blog.example/feed"}, ByOperator: true},
			wantState: store.SubActive},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			svc := newService(t)
			ctx := context.Background()
			if c.first != nil {
				if _, err := svc.Subscribe(ctx, *c.first); err != nil {
					t.Fatal(err)
				}
			}
			res, err := svc.Subscribe(ctx, c.req)
			if err != nil {
				t.Fatal(err)
			}
			state := ""
			if res.Sub != nil {
				state = res.Sub.State
			}
			if state != c.wantState || res.Trial != c.wantTrial || res.ConfirmationSent != c.wantSent {
				t.Errorf("state %q trial %d sent %v, want %q %d %v", state, res.Trial, res.ConfirmationSent,
					c.wantState, c.wantTrial, c.wantSent)
			}
			if res.Already != (c.wantState == "") {
				t.Errorf("Already %v", res.Already)
			}
			ns := noticeSubjects(t, svc.Store)
			switch {
			case c.wantNotice == "" && len(ns) > 0:
				t.Errorf("notices %q, want none", ns)
			case c.wantNotice != "" && (len(ns) == 0 || !strings.Contains(ns[len(ns)-1], c.wantNotice)):
				t.Errorf("notices %q, want the last to say %q", ns, c.wantNotice)
			}
			if c.wantDigest != "" {
				if _, err := svc.Store.DigestByName(ctx, res.User.ID, c.wantDigest); err != nil {
					t.Errorf("digest %q: %v", c.wantDigest, err)
				}
			}
		})
	}
}

// TestSubscribeNoDigest checks that a missing named digest is a
// NoDigestError and creates no feed.
func TestSubscribeNoDigest(t *testing.T) {
	svc := newService(t)
	ctx := context.Background()
	_, err := svc.Subscribe(ctx, Request{Email: "a@example.com", Feed: Found{URL: "https://blog.example/feed"},
		DigestName: "Morning"})
	var nd *NoDigestError
	if !errors.As(err, &nd) || nd.Name != "Morning" || nd.Email != "a@example.com" {
		t.Fatalf("err %v, want a NoDigestError", err)
	}
	if _, err := svc.Store.FeedByURL(ctx, "https://blog.example/feed"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("feed lookup: %v, want not found", err)
	}
}

// TestConfirm checks that Confirm activates a pending subscription and
// grants the trial once.
func TestConfirm(t *testing.T) {
	svc := newService(t)
	ctx := context.Background()
	res, err := svc.Subscribe(ctx, Request{Email: "a@example.com", Feed: Found{URL: "https://blog.example/feed"}})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []int64{500, 0} {
		got, err := svc.Confirm(ctx, res.Sub, store.ConfirmedByLink)
		if err != nil || got != want {
			t.Fatalf("confirm %d: trial %d, %v; want %d", i, got, err, want)
		}
	}
	sub, err := svc.Store.SubscriptionByID(ctx, res.Sub.ID)
	if err != nil || sub.State != store.SubActive {
		t.Fatalf("subscription %+v, %v", sub, err)
	}
}
