package newitems

import (
	"fmt"
	"reflect"
	"testing"
	"time"
)

func TestSelect(t *testing.T) {
	now := time.Date(2025, 6, 15, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) Item { return Item{Identity: d.String(), Published: now.Add(-d)} }
	undated := Item{Identity: "undated"}
	const day = 24 * time.Hour

	// nine returns nine items dated 1…9 hours ago: with one more item the
	// feed has ten dated items, and that one is the 10th newest.
	nine := func() []Item {
		var items []Item
		for i := 1; i <= 9; i++ {
			items = append(items, at(time.Duration(i)*time.Hour))
		}
		return items
	}

	tests := []struct {
		name       string
		item       Item
		others     []Item // the rest of the poll, besides item
		newestSeen time.Time
		want       Rule
	}{
		{"fresh item", at(time.Hour), nil, time.Time{}, ""},
		{"undated item is never ignored", undated, nine(), now, ""},
		{"undated item with old newest seen", undated, nil, now.Add(100 * day), ""},

		// One year is exactly 365 × 24 h; only strictly older is ignored.
		{"exactly 365 days old", at(365 * day), nil, time.Time{}, ""},
		{"365 days and 1 ns old", at(365*day + time.Nanosecond), nil, time.Time{}, RuleOlderThanYear},
		{"365 days minus 1 s old", at(365*day - time.Second), nil, time.Time{}, ""},
		{"366 days old (a leap year is more than one year)", at(366 * day), nil, time.Time{}, RuleOlderThanYear},
		{"dated in the future", at(-30 * day), nil, now, ""},

		// The 10th newest dated item of the poll.
		{"fewer than 10 dated items: rule off", at(300 * day), nine()[:8], time.Time{}, ""},
		{"9 dated + undated ones: rule off", at(300 * day), append(nine()[:8], undated, undated, undated), time.Time{}, ""},
		{"item is the 10th newest: not older", at(10 * time.Hour), nine(), time.Time{}, ""},
		{"item equal to the 10th newest", at(9 * time.Hour), append(nine(), at(20*time.Hour)), time.Time{}, ""},
		{"item 1 ns older than the 10th newest", at(9*time.Hour + time.Nanosecond), append(nine(), at(9*time.Hour)), time.Time{}, RuleOlderThanTenth},
		{"11th of 11", at(11 * time.Hour), append(nine(), at(10*time.Hour)), time.Time{}, RuleOlderThanTenth},
		{"item among the 10 newest", at(30 * time.Minute), append(nine(), at(10*time.Hour)), time.Time{}, ""},

		// More than 7 days older than the newest item seen before.
		{"no newest seen: rule off", at(200 * day), nil, time.Time{}, ""},
		{"exactly 7 days older than newest seen", at(10 * day), nil, now.Add(-3 * day), ""},
		{"7 days and 1 ns older", at(10*day + time.Nanosecond), nil, now.Add(-3 * day), RuleOlderThanNewestSeen},
		{"6 days older", at(9 * day), nil, now.Add(-3 * day), ""},
		{"newer than newest seen", at(time.Hour), nil, now.Add(-3 * day), ""},

		// Order of rules when several apply.
		{"year wins over 10th newest and newest seen", at(400 * day), nine(), now, RuleOlderThanYear},
		{"10th newest wins over newest seen", at(30 * day), append(nine(), at(10*time.Hour)), now, RuleOlderThanTenth},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			all := append([]Item{tt.item}, tt.others...)
			got := Select([]Item{tt.item}, all, tt.newestSeen, now)
			if len(got) != 1 {
				t.Fatalf("%d verdicts", len(got))
			}
			if got[0].Ignored != tt.want || !reflect.DeepEqual(got[0].Item, tt.item) || got[0].Deliver() != (tt.want == "") {
				t.Errorf("verdict %+v, want rule %q", got[0], tt.want)
			}
		})
	}
}

// TestSelectTenthCountsAllItems checks that the 10th-newest rule looks at
// every item of the poll, not just the candidates, and that verdicts keep the
// candidates' order.
func TestSelectTenthCountsAllItems(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var all []Item
	for i := range 15 {
		all = append(all, Item{Identity: fmt.Sprint(i), Published: now.Add(-time.Duration(i) * time.Hour)})
	}
	candidates := []Item{all[12], all[0], all[9], all[10]}
	got := Select(candidates, all, time.Time{}, now)
	want := []Rule{RuleOlderThanTenth, "", "", RuleOlderThanTenth}
	for i := range want {
		if got[i].Item.Identity != candidates[i].Identity || got[i].Ignored != want[i] {
			t.Errorf("verdict %d = %+v, want %q for %s", i, got[i], want[i], candidates[i].Identity)
		}
	}
	if len(Select(nil, all, time.Time{}, now)) != 0 {
		t.Error("verdicts for no candidates")
	}
}

// TestSelectPure checks that Select does not reorder or modify its inputs.
func TestSelectPure(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var all []Item
	for i := range 12 {
		all = append(all, Item{Identity: fmt.Sprint(i), Published: now.Add(-time.Duration(i*7) % 12 * time.Hour)})
	}
	before := append([]Item(nil), all...)
	Select(all, all, now, now)
	for i := range all {
		if !reflect.DeepEqual(all[i], before[i]) {
			t.Fatalf("Select changed its input at %d", i)
		}
	}
}
