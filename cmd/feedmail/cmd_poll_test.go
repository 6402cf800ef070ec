package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/testkit/farm"
)

// pollCLI runs the feedmail command in-process on a temporary SQLite file,
// with private networks allowed (the farm is on 127.0.0.1).
func pollCLI(t *testing.T) func(args ...string) (int, string, string) {
	t.Helper()
	env := map[string]string{
		"FEEDMAIL_DATABASE_URL":           "sqlite://" + filepath.Join(t.TempDir(), "feedmail.db"),
		"FEEDMAIL_ALLOW_PRIVATE_NETWORKS": "1",
		"FEEDMAIL_LOG_LEVEL":              "warn",
	}
	return func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(context.Background(), args, environOf(env), &out, &errb)
		return code, out.String(), errb.String()
	}
}

type pollJSON struct {
	FeedID     int64 `json:"feed_id"`
	AddedFeed  bool  `json:"added_feed"`
	Status     int   `json:"status"`
	Outcome    string
	Sent       validatorsJSON `json:"validators_sent"`
	Received   validatorsJSON `json:"validators_received"`
	Bytes      int64
	NewItems   []struct{ Title, Link, Rule string } `json:"new_items"`
	Ignored    []struct{ Title, Link, Rule string } `json:"ignored_items"`
	NextPollAt string                               `json:"next_poll_at"`
	Reason     string
	State      string
	Polled     bool
}

type validatorsJSON struct {
	ETag         string `json:"etag"`
	LastModified string `json:"last_modified"`
}

func decodeJSON[T any](t *testing.T, s string) T {
	t.Helper()
	var v T
	dec := json.NewDecoder(strings.NewReader(s))
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, s)
	}
	return v
}

func TestPollAndFeedStatusCommands(t *testing.T) {
	fm := farm.New(clock.Real{})
	t.Cleanup(fm.Close)
	now := time.Now().UTC()
	ff := fm.AddFeed(farm.Spec{ETag: farm.ETagStrong, LastModified: true, Items: []farm.Item{
		{Title: "Third", Published: now.Add(-time.Hour)},
		{Title: "Second", Published: now.Add(-48 * time.Hour)},
		{Title: "First", Published: now.Add(-72 * time.Hour)},
	}})
	cli := pollCLI(t)

	// First poll: the feed is added, everything recorded as seen.
	code, out, errs := cli("poll", ff.URL())
	if code != 0 {
		t.Fatalf("poll: exit %d, %s", code, errs)
	}
	r := decodeJSON[pollJSON](t, out)
	if !r.AddedFeed || r.Status != 200 || !r.Polled || r.Received.ETag != ff.ETag() || r.Received.LastModified != ff.LastModified() ||
		r.Sent.ETag != "" || len(r.NewItems) != 0 || len(r.Ignored) != 3 || r.Ignored[0].Rule != "first poll" || r.Bytes == 0 {
		t.Fatalf("first poll report: %+v", r)
	}
	next, err := time.Parse(time.RFC3339, r.NextPollAt)
	if err != nil || next.Before(now.Add(4*time.Minute)) {
		t.Fatalf("next_poll_at %q (%v)", r.NextPollAt, err)
	}

	// Again: a conditional request answered 304.
	code, out, _ = cli("poll", ff.URL())
	r = decodeJSON[pollJSON](t, out)
	if code != 0 || r.AddedFeed || r.Status != 304 || r.Sent.ETag != ff.ETag() || r.Sent.LastModified != ff.LastModified() {
		t.Fatalf("second poll report: %+v", r)
	}

	// Two posts: one new, one dated 8 days before the newest seen: the
	// 7-day rule ignores it.
	ff.Publish(farm.Item{Title: "Fourth", Published: time.Now().UTC()},
		farm.Item{Title: "Re-dated old post", Published: now.Add(-9 * 24 * time.Hour)})
	code, out, _ = cli("poll", ff.URL())
	r = decodeJSON[pollJSON](t, out)
	if code != 0 || r.Status != 200 || len(r.NewItems) != 1 || r.NewItems[0].Title != "Fourth" ||
		len(r.Ignored) != 1 || r.Ignored[0].Rule != "more than 7 days older than the newest item seen before" {
		t.Fatalf("third poll report: %+v", r)
	}

	code, out, errs = cli("feed", "status", ff.URL())
	if code != 0 {
		t.Fatalf("feed status: exit %d, %s", code, errs)
	}
	st := decodeJSON[struct {
		State       string
		Reason      string
		Subscribers int
		LastStatus  int `json:"last_status"`
		NextPollAt  string
		Validators  struct {
			URL          string
			ETag         string
			LastModified string `json:"last_modified"`
		} `json:"validators"`
		Items       struct{ Recorded, Ignored int64 }
		RecentPolls []struct {
			Status      int
			Conditional bool
			NewItems    int `json:"new_items"`
		} `json:"recent_polls"`
	}](t, out)
	if st.State != "active" || st.LastStatus != 200 || st.Validators.ETag != ff.ETag() || st.Validators.URL != ff.URL() ||
		st.Items.Recorded != 5 || st.Items.Ignored != 4 || len(st.RecentPolls) != 3 ||
		st.RecentPolls[0].NewItems != 1 || st.RecentPolls[1].Status != 304 || !st.RecentPolls[1].Conditional ||
		st.Subscribers != 0 || !strings.Contains(st.Reason, "nobody follows") {
		t.Fatalf("feed status: %+v", st)
	}

	code, out, errs = cli("feed", "host", "127.0.0.1", "--min-interval", "2h")
	if code != 0 || !strings.Contains(out, `"min_interval_seconds": 7200`) {
		t.Fatalf("feed host: exit %d %s %s", code, out, errs)
	}

	bad := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"poll"}, 2, "exactly one feed URL"},
		{[]string{"poll", "a", "b"}, 2, "exactly one feed URL"},
		{[]string{"poll", "ftp://example.com/feed"}, 2, "not a web address"},
		{[]string{"poll", "example.com/feed"}, 2, "not an http(s) feed URL"},
		{[]string{"feed", "status"}, 2, "exactly one feed URL"},
		{[]string{"feed", "status", "https://unknown.example/feed"}, 1, "no feed with URL"},
		{[]string{"feed", "host"}, 2, "exactly one host"},
		{[]string{"feed", "host", "example.com", "--min-interval", "-5m"}, 2, "must not be negative"},
	}
	for _, b := range bad {
		code, out, errs := cli(b.args...)
		if code != b.code || out != "" || !strings.Contains(errs, b.msg) {
			t.Errorf("%v: exit %d (want %d), stdout %q, stderr %q", b.args, code, b.code, out, errs)
		}
	}
}
