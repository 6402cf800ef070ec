package billing

import (
	"strings"
	"testing"
	"time"
)

func TestOutboxKeys(t *testing.T) {
	cases := []struct {
		got, want string
	}{
		{KeyOutboxCharge("item:5:7"), "charge:item:5:7"},
		{KeyOutboxRefund("item:5:7"), "refund:charge:item:5:7"},
		{KeyOutboxRefund("item:5:7"), KeyRefund(KeyOutboxCharge("item:5:7"))},
		{KeyOutboxCharge("digest:12"), "charge:digest:12"},
		{KeyCreditsNotice(42, 0), "credits:42:0"},
		{KeyCreditsNotice(42, 1234), "credits:42:1234"},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
	// Distinct rows, distinct keys; a charge and its refund never collide.
	if KeyOutboxCharge("item:1:23") == KeyOutboxCharge("item:12:3") || KeyOutboxCharge("x") == KeyOutboxRefund("x") {
		t.Error("keys collide")
	}
}

func TestKeyAdminGrant(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	a, b := KeyAdminGrant(7, now), KeyAdminGrant(7, now)
	if a == b {
		t.Errorf("two grants at the same instant share key %q", a)
	}
	if !strings.HasPrefix(a, "grant:admin:7:20260301T120000Z:") || strings.Count(a, ":") != 4 {
		t.Errorf("KeyAdminGrant = %q", a)
	}
}
