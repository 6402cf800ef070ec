package main

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// TestSubscribePrintsForecast: the JSON carries the cost forecast of the
// feed as fetched, or says there is not enough history.
func TestSubscribePrintsForecast(t *testing.T) {
	dsn := storetest.FreshDSN(t, storetest.URL())
	cli := cliFor(dsn, map[string]string{"FEEDMAIL_ALLOW_PRIVATE_NETWORKS": "1"})
	site := feedSite(t)
	tests := []struct {
		feed string
		want map[string]any
	}{
		// 9 posts after the oldest in 9 days and an hour: 30.3 a month;
		// each daily issue has one. (Twice-daily depends on the hour the
		// test runs: the real clock; checked below.)
		{"/dated", map[string]any{"posts_per_month": 30.3, "instant": 30.0, "daily": 30.0, "weekly": 4.0}},
		{"/feed", map[string]any{"not_enough_history": true, "reason": "fewer than 3 of its posts are dated"}},
	}
	for _, tt := range tests {
		code, out, errs := cli("subscribe", "--email", "ann@example.com", "--feed", site+tt.feed)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", tt.feed, code, errs)
		}
		var got struct {
			Forecast map[string]any `json:"forecast"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%s: %v\n%s", tt.feed, err, out)
		}
		if tw, ok := got.Forecast["twice-daily"].(float64); ok && tw >= 29 && tw <= 31 {
			delete(got.Forecast, "twice-daily")
		}
		if !reflect.DeepEqual(got.Forecast, tt.want) {
			t.Errorf("%s: forecast %v; want %v", tt.feed, got.Forecast, tt.want)
		}
	}
}
