package bench

import (
	"context"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// TestWarmStartParksTheFeeds runs the steady run's steps up to the warm
// start and checks that no feed is left due before spread makes them due:
// a pass that outlasted the poll interval used to leave feeds due when
// serve started, and serve's claims then deadlocked with spread's update
// (500,000 feeds). It also checks that every feed's items were recorded,
// and that the people's running-low lines are spread over the next week.
func TestWarmStartParksTheFeeds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs feedfarm")
	}
	dsn := storetest.PostgresURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	s := &steady{cfg: SteadyConfig{DatabaseURL: dsn, Feeds: 20, Hosts: 2, Cadence: 10 * time.Second, WarmStart: true}}
	if err := s.cfg.fill(); err != nil {
		t.Fatal(err)
	}
	defer s.close()
	for _, step := range []func(context.Context) error{s.build, s.createDB, s.startFarms, s.seed, s.warmStart} {
		if err := step(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var due, items int64
	if err := s.st.DB.WithContext(ctx).Raw("SELECT COUNT(*) FROM feeds WHERE next_poll_at < ?", time.Now().AddDate(0, 0, 1)).Scan(&due).Error; err != nil {
		t.Fatal(err)
	}
	if due != 0 {
		t.Errorf("%d feeds due within a day after the warm start; want none before spread", due)
	}
	if err := s.st.DB.WithContext(ctx).Raw("SELECT COUNT(*) FROM items").Scan(&items).Error; err != nil {
		t.Fatal(err)
	}
	if items != 20*10 {
		t.Errorf("%d items recorded by the warm start; want 200 (10 per feed)", items)
	}
	// The people's running-low lines are due over the next week, not all
	// at serve's start.
	var lines struct{ Users, Later, Hours int64 }
	if err := s.st.DB.WithContext(ctx).Raw(`SELECT COUNT(*) AS users, COUNT(*) FILTER (WHERE low_line_due > ?) AS later,
  COUNT(DISTINCT date_trunc('hour', low_line_due)) AS hours FROM users`, time.Now()).Scan(&lines).Error; err != nil {
		t.Fatal(err)
	}
	if lines.Users == 0 || lines.Later != lines.Users || lines.Hours < lines.Users/2 {
		t.Errorf("running-low lines: %d people, %d due later than now, in %d distinct hours; want all later, spread over at least %d hours",
			lines.Users, lines.Later, lines.Hours, lines.Users/2)
	}
}
