package billing

import (
	"errors"
	"math"
	"testing"
	"time"
)

func TestApply(t *testing.T) {
	tests := []struct {
		balance, amount int64
		want            int64
		wantErr         error
	}{
		{0, 500, 500, nil},
		{500, -1, 499, nil},
		{1, -1, 0, nil},
		{3, -3, 0, nil},
		{2, -3, 2, ErrInsufficient},
		{0, -1, 0, ErrInsufficient},
		{0, 0, 0, nil},
		{-5, 3, -2, nil}, // a broken balance may only improve
		{-5, -1, -5, ErrInsufficient},
		{math.MaxInt64, 1, math.MaxInt64, ErrOverflow},
		{math.MaxInt64 - 1, 1, math.MaxInt64, nil},
		{-1, math.MinInt64, -1, ErrInsufficient},
		{math.MaxInt64, math.MinInt64, math.MaxInt64, ErrInsufficient},
	}
	for _, tt := range tests {
		got, err := Apply(tt.balance, tt.amount)
		if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) || got != tt.want {
			t.Errorf("Apply(%d, %d) = %d, %v; want %d, %v", tt.balance, tt.amount, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestEntryKinds(t *testing.T) {
	want := []string{"grant", "purchase", "charge", "refund", "adjustment"}
	ks := Kinds()
	if len(ks) != len(want) {
		t.Fatalf("Kinds() = %v", ks)
	}
	for i, k := range ks {
		if string(k) != want[i] || !k.Valid() {
			t.Errorf("kind %d = %q valid=%v, want %q", i, k, k.Valid(), want[i])
		}
	}
	if EntryKind("bonus").Valid() || EntryKind("").Valid() || EntryKind("Charge").Valid() {
		t.Error("unknown kinds reported valid")
	}
}

func TestCheckEntry(t *testing.T) {
	tests := []struct {
		kind   EntryKind
		amount int64
		ok     bool
	}{
		{KindGrant, 500, true}, {KindGrant, -1, false}, {KindGrant, 0, false},
		{KindPurchase, 5000, true}, {KindPurchase, -5000, false},
		{KindCharge, -1, true}, {KindCharge, 1, false}, {KindCharge, 0, true},
		{KindRefund, 1, true}, {KindRefund, -1, false},
		{KindAdjustment, -100, true}, {KindAdjustment, 100, true}, {KindAdjustment, 0, false},
		{EntryKind("gift"), 1, false},
	}
	for _, tt := range tests {
		err := CheckEntry(tt.kind, tt.amount)
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrBadEntry)) {
			t.Errorf("CheckEntry(%q, %d) = %v, want ok=%v", tt.kind, tt.amount, err, tt.ok)
		}
	}
}

type named string

func (n named) String() string { return "named-" + string(n) }

func TestKeys(t *testing.T) {
	slot := time.Date(2025, 3, 9, 3, 0, 0, 0, time.FixedZone("EDT", -4*3600))
	tests := []struct {
		got, want string
	}{
		{Key("grant", 12, slot), "grant:12:20250309T070000Z"},
		{Key("grant", 7, slot.Add(1500*time.Millisecond)), "grant:7:20250309T070001.5Z"},
		{KeyPurchase("cs_test_a1B2"), "purchase:cs_test_a1B2"},
		{KeyPurchase("odd:id%"), "purchase:odd%3Aid%25"},
		{KeyTrial(42), "trial:42"},
		{KeyRefund(KeyOutboxCharge("item:1:2")), "refund:charge:item:1:2"},
		{Key("grant", "admin", 42, "welcome back"), "grant:admin:42:welcome back"},
		{Key("grant", named("x")), "grant:named-x"},
		{Key("grant"), "grant"},
		// Escaping keeps distinct reference lists apart.
		{Key("k", "a:b", "c"), "k:a%3Ab:c"},
		{Key("k", "a", "b:c"), "k:a:b%3Ac"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}
