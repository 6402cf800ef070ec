package mailer

import (
	"strings"
	"testing"

	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/notices"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/token"
)

// TestCreditNoticesRender: the running-low warning and the receipt are
// notices like the others: text and HTML parts, the notice's From and no
// list headers, each line of the receipt on its own line in both parts.
func TestCreditNoticesRender(t *testing.T) {
	signer, err := token.NewSigner([]byte("compose-credits-secret-0123456789"))
	if err != nil {
		t.Fatal(err)
	}
	l := links.New("https://feedmail.example.com", signer, "feedmail@example.com")
	receipt := notices.PurchaseReceipt(l, testDate, 5, notices.Receipt{Credits: 5000, PriceCents: 500, Currency: "eur",
		BalanceAfter: 5003, Reference: "cs_test_<1>", PaidAt: testDate})
	low := notices.RunningLow(l, testDate, 5, 9, 14, true)
	cases := []struct {
		n        store.Notice
		subject  string
		text     string
		html     []string
		linkText []string
	}{
		{receipt, "Your feedmail receipt: 5,000 credits", receipt.Text,
			[]string{"Amount paid: €5.00<br>Balance after: 5,003 credits<br>", "Reference: cs_test_&lt;1&gt;</p>"},
			[]string{"Your account:\nhttps://feedmail.example.com/account/"}},
		{low, "Your feedmail credits are running low", low.Text,
			[]string{"You have 9 credits left.", `href="https://feedmail.example.com/credits?token=`},
			[]string{"Buy credits:\nhttps://feedmail.example.com/credits?token=", "Your account:\n"}},
	}
	for _, c := range cases {
		var ls []Link
		n := c.n
		for _, b := range n.Links {
			ls = append(ls, Link{Label: b.Label, URL: b.URL})
		}
		m, err := testSender().Notice(NoticeEmail{To: "buyer@example.org", Subject: n.Subject, Text: n.Text, Links: ls, Date: testDate})
		if err != nil {
			t.Fatal(err)
		}
		p := renderParse(t, m)
		if p.get("Subject") != c.subject || p.get("From") != `"feedmail" <feedmail@mail.example.com>` || p.header.Get("List-Id") != "" {
			t.Errorf("%s: headers Subject %q From %q List-Id %q", c.subject, p.get("Subject"), p.get("From"), p.header.Get("List-Id"))
		}
		text := strings.ReplaceAll(p.text, "\r\n", "\n")
		if !strings.HasPrefix(text, c.text+"\n") {
			t.Errorf("%s: text part:\n%s", c.subject, text)
		}
		for _, s := range c.linkText {
			if !strings.Contains(text, s) {
				t.Errorf("%s: text part lacks %q:\n%s", c.subject, s, text)
			}
		}
		for _, s := range c.html {
			if !strings.Contains(p.html, s) {
				t.Errorf("%s: HTML part lacks %q:\n%s", c.subject, s, p.html)
			}
		}
	}
}
