package billing

import (
	"reflect"
	"testing"
)

func ceil5(n int) int { return (n + 4) / 5 }

func TestInstantBill(t *testing.T) {
	tests := []struct {
		name   string
		f      FeedPayer
		reader int64
		want   Bill
	}{
		{"reader's feed", FeedPayer{Feed: 7}, 1, Bill{Reader: 1}},
		{"reader's feed in a burst", FeedPayer{Feed: 7}, 0, Bill{Reader: 0}},
		{"owner pays", FeedPayer{Feed: 7, Owner: 3}, 1, Bill{Owners: []OwnerLine{{3, 7, 1}}}},
		{"owner pays in a burst too", FeedPayer{Feed: 7, Owner: 3}, 0, Bill{Owners: []OwnerLine{{3, 7, 1}}}},
		{"owner lapsed, reader did nothing", FeedPayer{Feed: 7, Owner: 3, Lapsed: true}, 1, Bill{Owners: []OwnerLine{{3, 7, 1}}}},
		{"owner lapsed, reader pays", FeedPayer{Feed: 7, Owner: 3, Lapsed: true, Chose: true}, 1, Bill{Reader: 1}},
		{"choice without a lapse is moot", FeedPayer{Feed: 7, Owner: 3, Chose: true}, 1, Bill{Owners: []OwnerLine{{3, 7, 1}}}},
	}
	for _, tt := range tests {
		if got := InstantBill(tt.f, tt.reader); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: InstantBill = %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

func TestDigestBill(t *testing.T) {
	tests := []struct {
		name  string
		feeds int
		owned []FeedPayer
		want  Bill
	}{
		{"empty issue", 0, nil, Bill{}},
		{"reader's feeds only", 6, nil, Bill{Reader: 2}},
		{"owner-paid only", 1, []FeedPayer{{Feed: 7, Owner: 3}}, Bill{Owners: []OwnerLine{{3, 7, 1}}}},
		{"two owners only", 2, []FeedPayer{{Feed: 7, Owner: 3}, {Feed: 8, Owner: 4}},
			Bill{Owners: []OwnerLine{{3, 7, 1}, {4, 8, 1}}}},
		{"mixed: 6 feeds, one owner-paid", 6, []FeedPayer{{Feed: 7, Owner: 3}}, Bill{Reader: 1, Owners: []OwnerLine{{3, 7, 1}}}},
		{"mixed: reader chose to pay", 6, []FeedPayer{{Feed: 7, Owner: 3, Lapsed: true, Chose: true}}, Bill{Reader: 2}},
	}
	for _, tt := range tests {
		if got := DigestBill(tt.feeds, tt.owned, ceil5); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: DigestBill = %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

func TestKeyOwnerCharge(t *testing.T) {
	if got, want := KeyOwnerCharge("digest:12", 7), "charge:digest:12:feed:7"; got != want {
		t.Errorf("KeyOwnerCharge = %q, want %q", got, want)
	}
}
