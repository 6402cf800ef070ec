package store_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// TestPauseRuleOnce: the SQL conditions of pause.go (a pause lasts; a
// pause has ended but is not cleared yet) agree with IsPaused, in the
// database, for every shape of (paused_at, paused_until) around now.
func TestPauseRuleOnce(t *testing.T) {
	s := storetest.Open(t, storetest.Options{})
	ctx := context.Background()
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	at := now.Add(-48 * time.Hour)
	ptr := func(d time.Duration) *time.Time { v := now.Add(d); return &v }
	cases := []struct {
		name      string
		at, until *time.Time
	}{
		{"never paused", nil, nil},
		{"until only, no start", nil, ptr(time.Hour)},
		{"until resumed", &at, nil},
		{"ends later", &at, ptr(time.Hour)},
		{"ends in a second", &at, ptr(time.Second)},
		{"ends now", &at, ptr(0)},
		{"ended", &at, ptr(-time.Hour)},
	}
	ids := make(map[int64]int, len(cases))
	for i, tc := range cases {
		u, _, err := s.EnsureUser(ctx, fmt.Sprintf("rule%d@example.com", i))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.DB.Model(&store.User{}).Where("id = ?", u.ID).
			Updates(map[string]any{"paused_at": tc.at, "paused_until": tc.until}).Error; err != nil {
			t.Fatal(err)
		}
		ids[u.ID] = i
	}
	match := func(cond string) []int64 {
		var got []int64
		if err := s.DB.Raw("SELECT id FROM users u WHERE "+cond, now).Scan(&got).Error; err != nil {
			t.Fatalf("%s: %v", cond, err)
		}
		return got
	}
	paused, ended := match(store.PausedSQLForTest("u")), match(store.PauseEndedSQLForTest("u"))
	for id, i := range ids {
		tc := cases[i]
		want := store.IsPaused(tc.at, tc.until, now)
		if got := slices.Contains(paused, id); got != want {
			t.Errorf("%s: pausedSQL says %v, IsPaused %v", tc.name, got, want)
		}
		wantEnded := tc.at != nil && !want
		if got := slices.Contains(ended, id); got != wantEnded {
			t.Errorf("%s: pauseEndedSQL says %v, want %v", tc.name, got, wantEnded)
		}
	}
}

// TestPauseRuleWrittenOnce: no other file of the store spells the pause
// condition out again instead of calling pausedSQL (pause.go).
func TestPauseRuleWrittenOnce(t *testing.T) {
	rule := regexp.MustCompile(`paused_until\s*(>|IS NULL|<=)`)
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if f == "pause.go" || strings.HasSuffix(f, "_test.go") || f == "mail_destinations.go" {
			continue // mail_destinations' paused_until is a destination's, not a reader's
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if loc := rule.FindIndex(src); loc != nil {
			t.Errorf("%s spells out the pause rule (%q): use pausedSQL or pausedArg", f, src[loc[0]:loc[1]])
		}
	}
}
