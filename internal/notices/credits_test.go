package notices

import (
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/token"
)

// TestCreditNotices pins the subject, the sentences and the buttons of
// the running-low warning and the receipt.
func TestCreditNotices(t *testing.T) {
	sign, err := token.NewSigner([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	l := links.New("https://fm.example", sign, "feedmail@fm.example")
	now := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	rc := Receipt{Credits: 5000, PriceCents: 500, Currency: "usd", BalanceAfter: 5012, Reference: "cs_test_42", PaidAt: now}
	cases := []struct {
		name, subject string
		n             store.Notice
		says          []string
		buttons       []string
	}{
		{name: "running low", subject: "Your feedmail credits are running low", n: RunningLow(l, now, 5, 7, 14, true),
			says:    []string{"You have 7 credits left.", "that lasts about 7 days.", "Add credits now", "only reminder"},
			buttons: []string{"Buy credits", "Your account"}},
		{name: "running low, payments off", subject: "Your feedmail credits are running low", n: RunningLow(l, now, 5, 7, 14, false),
			says: []string{"ask the person who runs it to add some"}, buttons: []string{"Your account"}},
		{name: "running low, no line", subject: "Your feedmail credits are running low", n: RunningLow(l, now, 5, 7, 0, true),
			says: []string{"that lasts not long."}, buttons: []string{"Buy credits", "Your account"}},
		{name: "receipt", subject: "Your feedmail receipt: 5,000 credits", n: PurchaseReceipt(l, now, 5, rc),
			says: []string{"Pack: 5,000 credits for $5.00\n", "Credits added: 5,000 credits\n", "Amount paid: $5.00\n",
				"Balance after: 5,012 credits\n", "Date: 2 March 2026 09:00 UTC\n", "Reference: cs_test_42\n\n"},
			buttons: []string{"Your account"}},
	}
	for _, c := range cases {
		if c.n.Subject != c.subject {
			t.Errorf("%s: subject %q, want %q", c.name, c.n.Subject, c.subject)
		}
		for _, s := range c.says {
			if !strings.Contains(c.n.Text, s) {
				t.Errorf("%s: text %q does not say %q", c.name, c.n.Text, s)
			}
		}
		var got []string
		for _, b := range c.n.Links {
			if !strings.HasPrefix(b.URL, "https://fm.example/") {
				t.Errorf("%s: button %q goes to %q", c.name, b.Label, b.URL)
			}
			got = append(got, b.Label)
		}
		if strings.Join(got, ",") != strings.Join(c.buttons, ",") {
			t.Errorf("%s: buttons %q, want %q", c.name, got, c.buttons)
		}
	}
	if buy := cases[0].n.Links[0].URL; !strings.HasPrefix(buy, "https://fm.example/credits?token=") {
		t.Errorf("Buy credits goes to %q, want the credits page with the account's token", buy)
	}
	if n := PurchaseReceipt(links.Links{}, now, 5, rc); len(n.Links) != 0 {
		t.Errorf("receipt without links has buttons %v", n.Links)
	}
}
