package links

import (
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/token"
	"github.com/feedmail/feedmail/internal/websub"
)

func TestFill(t *testing.T) {
	cases := []struct {
		path   string
		values []string
		want   string
	}{
		{PathConfirm, []string{"T"}, "/confirm/T"},
		{PathAccountDelivery, []string{"T", "7"}, "/account/T/subscriptions/7/delivery"},
		{PathAccountDelivery, []string{"T"}, "/account/T/subscriptions/{id}/delivery"},
		{PathCredits, nil, "/credits"},
		{PathHome, nil, "/"},
	}
	for _, c := range cases {
		if got := Fill(c.path, c.values...); got != c.want {
			t.Errorf("Fill(%q, %q) = %q, want %q", c.path, c.values, got, c.want)
		}
	}
}

// TestBuiltLinksMatchRoutes checks that every builder fills a declared path.
func TestBuiltLinksMatchRoutes(t *testing.T) {
	sign, err := token.NewSigner([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	l := New("https://fm.example/", sign, "feedmail@fm.example")
	now := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	tok := func(kind string, id int64, exp time.Time) string { return sign.Sign(kind, id, exp) }
	cases := map[string]string{
		l.Confirm(3, now):             "https://fm.example/confirm/" + tok(token.Confirm, 3, now.Add(ConfirmTTL)),
		l.Unsubscribe(3):              "https://fm.example/unsubscribe/" + tok(token.Unsubscribe, 3, time.Time{}),
		l.DigestUnsubscribe(4):        "https://fm.example/unsubscribe/" + tok(token.DigestUnsubscribe, 4, time.Time{}),
		l.Account(5, now):             "https://fm.example/account/" + sign.SignIssued(token.Account, 5, now, now.Add(AccountTTL)),
		l.SignIn(5, now):              "https://fm.example/account/" + sign.SignIssued(token.Account, 5, now, now.Add(SignInTTL)),
		l.Status("https://a/b?c"):     "https://fm.example/feeds/status?url=https%3A%2F%2Fa%2Fb%3Fc",
		l.Credits():                   "https://fm.example/credits",
		l.WebSubCallback(6, "s3cret"): "https://fm.example/websub/" + tok(token.WebSub, 6, time.Time{}) + "." + websub.CallbackTag("s3cret"),
	}
	for got, want := range cases {
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}
