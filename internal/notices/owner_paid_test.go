package notices

import (
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/token"
)

// TestOwnerLapse pins the keys, the deadline in the words and the buttons
// of the three owner-paid notices.
func TestOwnerLapse(t *testing.T) {
	sign, err := token.NewSigner([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	deadline := now.Add(14 * 24 * time.Hour)
	n := OwnerLapse(links.New("https://fm.example", sign, "feedmail@fm.example"), now, true)
	f := store.Feed{ID: 7, URL: "https://blog.example/feed", Title: "Blog"}
	sub := store.Subscription{ID: 11, UserID: 3, FeedID: 7}
	cases := []struct {
		name, key, wantKey, says string
		n                        store.Notice
		buttons                  []string
	}{
		{name: "reader", wantKey: "owner-lapse:7:2:11", says: "Until 16 March 2026 you keep getting it free of charge",
			buttons: []string{"Open my account"}},
		{name: "owner", wantKey: "owner-out:7:2:5", says: "until 16 March 2026; then those who did not choose",
			buttons: []string{"Buy credits", "Your account"}},
		{name: "ended", wantKey: "owner-ended:7:11:3", says: "you did not choose to pay for them yourself",
			buttons: []string{"Your account"}},
	}
	cases[0].key, cases[0].n = n.Reader(f, sub, 2, deadline)
	cases[1].key, cases[1].n = n.Owner(f, 5, 2, deadline)
	cases[2].key, cases[2].n = n.Ended(f, sub)
	for _, c := range cases {
		if c.key != c.wantKey {
			t.Errorf("%s: key %q, want %q", c.name, c.key, c.wantKey)
		}
		if !strings.Contains(c.n.Text, c.says) || !strings.Contains(c.n.Subject, "Blog") {
			t.Errorf("%s: subject %q text %q, want it to say %q", c.name, c.n.Subject, c.n.Text, c.says)
		}
		var got []string
		for _, b := range c.n.Links {
			got = append(got, b.Label)
		}
		if strings.Join(got, ",") != strings.Join(c.buttons, ",") {
			t.Errorf("%s: buttons %v, want %v", c.name, got, c.buttons)
		}
	}
}
