package main

import (
	"encoding/json"
	"reflect"
	"strings"
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

// TestSubscribeDeliverySaidOnce: the log line of a subscription and the
// JSON the command prints name its delivery in the same words
// (subscribe.DeliveryName): "instant", or "digest" and the digest's name.
func TestSubscribeDeliverySaidOnce(t *testing.T) {
	dsn := storetest.FreshDSN(t, storetest.URL())
	cli := cliFor(dsn, map[string]string{"FEEDMAIL_ALLOW_PRIVATE_NETWORKS": "1", "FEEDMAIL_LOG_LEVEL": "info"})
	site := feedSite(t)
	if code, _, errs := cli("digest", "set", "--email", "ann@example.com", "--name", "Daily", "--schedule", "daily"); code != 0 {
		t.Fatalf("digest set: exit %d: %s", code, errs)
	}
	tests := []struct {
		args      []string
		json, log string
	}{
		{[]string{"--feed", site + "/feed", "--digest", "Daily"}, "digest Daily", `delivery="digest Daily"`},
		{[]string{"--feed", site + "/dated"}, "instant", "delivery=instant"},
		{[]string{"--feed", site + "/feed", "--confirmed"}, "instant", "delivery=instant"},
	}
	for _, tt := range tests {
		code, out, errs := cli(append([]string{"subscribe", "--email", "ann@example.com"}, tt.args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", tt.args, code, errs)
		}
		var got struct {
			Delivery string `json:"delivery"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil || got.Delivery != tt.json {
			t.Errorf("%v: JSON delivery %q (%v); want %q", tt.args, got.Delivery, err, tt.json)
		}
		var line string
		for _, l := range strings.Split(errs, "\n") {
			if strings.Contains(l, "subscription requested") {
				line = l
			}
		}
		if !strings.Contains(line, tt.log) {
			t.Errorf("%v: log line %q; want %s", tt.args, line, tt.log)
		}
	}
}

// TestSubscribeForecastFilters: the forecast printed for a subscription
// with filters counts only the posts they pass.
func TestSubscribeForecastFilters(t *testing.T) {
	dsn := storetest.FreshDSN(t, storetest.URL())
	cli := cliFor(dsn, map[string]string{"FEEDMAIL_ALLOW_PRIVATE_NETWORKS": "1"})
	site := feedSite(t)
	code, out, errs := cli("subscribe", "--email", "bob@example.com", "--feed", site+"/dated", "--include", "0, 1, 2, 3, 4")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var got struct {
		Forecast map[string]any `json:"forecast"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// Posts 0 to 4 of the 9 after the oldest (post 9), in 9 days and an
	// hour: 16.8 a month.
	if got.Forecast["instant"] != 17.0 || got.Forecast["posts_per_month"] != 16.8 {
		t.Errorf("forecast %v; want 17 credits, 16.8 posts a month", got.Forecast)
	}
}

// TestSubscribeRefusesIPDomain: subscribe and import-opml refuse an
// address at an IP address (a usage error, exit 2) and create no account.
func TestSubscribeRefusesIPDomain(t *testing.T) {
	dsn := storetest.FreshDSN(t, storetest.URL())
	cli := cliFor(dsn, map[string]string{"FEEDMAIL_ALLOW_PRIVATE_NETWORKS": "1"})
	site := feedSite(t)
	for _, args := range [][]string{
		{"subscribe", "--email", "f@[127.0.0.1]", "--feed", site + "/feed"},
		{"subscribe", "--email", "f@127.0.0.1", "--feed", site + "/feed"},
		{"import-opml", "--email", "f@[127.0.0.1]", "-"},
	} {
		code, _, errs := cli(args...)
		if code != 2 || !strings.Contains(errs, "IP address") {
			t.Errorf("feedmail %q: exit %d, stderr %q; want 2 and the reason", args, code, errs)
		}
	}
	st := storetest.OpenDSN(t, dsn, storetest.Options{})
	var n int64
	if err := st.DB.Raw(`SELECT count(*) FROM users`).Scan(&n).Error; err != nil || n != 0 {
		t.Fatalf("users: %d, %v; want none", n, err)
	}
}
