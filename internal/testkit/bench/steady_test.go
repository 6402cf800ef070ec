package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/testkit/bench"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// TestSteadyTiny runs the steady scenario small on Postgres — the real
// feedmail serve and two feedfarm processes, 200 feeds due over 10 s, a
// 20 s window without warm-up, so that it sees the first polls — and
// checks that the report holds every figure, without judging them.
func TestSteadyTiny(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs feedmail serve and feedfarm")
	}
	dsn := storetest.PostgresURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rep, err := bench.RunSteady(ctx, bench.SteadyConfig{
		DatabaseURL: dsn, Feeds: 200, Hosts: 2, Cadence: 10 * time.Second, Window: 20 * time.Second,
		Warmup: -1, PublishShare: 0.1, Bare: 3 * time.Second,
	})
	if err != nil {
		t.Fatalf("steady: %v", err)
	}
	if rep.Polls <= 0 || rep.PollsDone <= 0 || rep.PollsNeeded != 20 {
		t.Errorf("polls: %d done (%.1f/s), %.1f/s needed; want some done and 20/s needed", rep.Polls, rep.PollsDone, rep.PollsNeeded)
	}
	switch {
	case rep.LagP50 == -1 && rep.LagP99 == -1:
		// Lag is observed on scheduled polls only: a loaded machine may
		// spend the whole 20 s window on the feeds' first polls.
		t.Logf("no scheduled poll in the window (%d polls, all first polls): lag not measured", rep.Polls)
	case rep.LagP50 < 0 || rep.LagP99 < rep.LagP50:
		t.Errorf("lag p50 %.3f s, p99 %.3f s", rep.LagP50, rep.LagP99)
	}
	if rep.ServeCPU <= 0 || rep.PGCPU < 0 || rep.PGBackends < 1 || rep.Trips <= 0 {
		t.Errorf("serve CPU %.3f ms/poll, Postgres %.3f ms/poll over %d backends, %.2f round trips/poll",
			rep.ServeCPU, rep.PGCPU, rep.PGBackends, rep.Trips)
	}
	if m := rep.Memory; m.SteadyBytes <= 0 || m.PeakWindowBytes <= 0 {
		t.Errorf("memory %+v", m)
	}
	if b := rep.Bare; b == nil || b.Requests != 60 || b.Statuses[200]+b.Statuses[304] != b.Requests || b.CPU < 0 {
		t.Errorf("bare loop %+v; want 60 requests, all 200 or 304", b)
	}
	var table, js bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"polls needed", "polls done", "lag p50 / p99", "poll interval p50 / p99", "feedmail CPU", "Postgres backends CPU",
		"DB round trips", "DB connections", "feedmail RSS", "emails queued / sent", "bare loop", "feedmail ÷ bare"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table has no %q:\n%s", want, table.String())
		}
	}
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back bench.SteadyReport
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || back.Polls != rep.Polls {
		t.Errorf("JSON does not read back (%v):\n%s", err, js.String())
	}
}

// TestSteadyRefusesBadConfig checks the checks made before anything starts.
func TestSteadyRefusesBadConfig(t *testing.T) {
	for _, cfg := range []bench.SteadyConfig{
		{DatabaseURL: "sqlite://./x.db"},
		{DatabaseURL: "postgres://127.0.0.1/x", Feeds: 5},
		{DatabaseURL: "postgres://127.0.0.1/x", Feeds: 20, Hosts: 30},
		{DatabaseURL: "postgres://127.0.0.1/x", PublishShare: 2},
		{DatabaseURL: "postgres://127.0.0.1/x", Pause: -time.Minute},
	} {
		if _, err := bench.RunSteady(context.Background(), cfg); !errors.Is(err, bench.ErrBadConfig) {
			t.Errorf("%+v: err %v, want ErrBadConfig", cfg, err)
		}
	}
}

// TestSteadyWarmStart runs the steady scenario small with the warm start:
// the first round is a batch pass before serve starts, so that serve's
// first polls of the window must find the state a first poll leaves — the
// farm's validators (a 304 unless the feed published since) and every
// item known (a publish is one new item, not the whole feed again) — and
// no first poll at all.
func TestSteadyWarmStart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs feedmail serve and feedfarm")
	}
	dsn := storetest.PostgresURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// The cadence is below the poller's floor: after the warm start each
	// feed is due once within the first 10 s, then not for 5 min, so the
	// 20 s window holds serve's first poll of each feed. A feed publishes
	// every 100 s (10 % of 100 per 10 s on each farm), so at most once
	// between its warm-start poll and serve's even on a slow machine, and
	// most of serve's polls are 304s.
	rep, err := bench.RunSteady(ctx, bench.SteadyConfig{
		DatabaseURL: dsn, Feeds: 200, Hosts: 2, Cadence: 10 * time.Second, Window: 20 * time.Second,
		Warmup: -1, PublishShare: 0.1, Bare: 2 * time.Second, WarmStart: true,
	})
	if err != nil {
		t.Fatalf("steady: %v", err)
	}
	if !rep.WarmStart {
		t.Error("the report does not say that the warm start was used")
	}
	if rep.Polls <= 0 || rep.Polls > 200 {
		t.Fatalf("%d polls in the window; want 1…200 (each feed at most once)", rep.Polls)
	}
	if rep.NotModified+rep.OK != rep.Polls || rep.NotModified <= rep.OK {
		t.Errorf("%d polls: %d × 304, %d × 200 with new items; want only those, most of them 304", rep.Polls, rep.NotModified, rep.OK)
	}
	if rep.FirstItems != 0 {
		t.Errorf("%d items recorded by first polls in the window; want none after the warm start", rep.FirstItems)
	}
	if rep.OK == 0 {
		t.Errorf("no poll answered 200 in the window: nothing shows that a publish is one new item")
	}
	if rep.NewItems != rep.OK {
		t.Errorf("%d new items from %d polls answered 200; want one new item per publishing feed", rep.NewItems, rep.OK)
	}
	// The farms saw each feed twice: the warm start's poll, then serve's
	// within the first cadence after serve started.
	if rep.IntervalP50 <= 0 || rep.IntervalP99 < rep.IntervalP50 || rep.IntervalP99 > 300 {
		t.Errorf("poll interval p50 %.1f s, p99 %.1f s as the farms saw it; want 0 < p50 ≤ p99 < 5 min", rep.IntervalP50, rep.IntervalP99)
	}
	var table bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	t.Logf("report:\n%s", table.String())
	if !strings.Contains(table.String(), "WARM START") || !strings.Contains(strings.Join(rep.Notes, "\n"), "warm start") {
		t.Errorf("the report does not say that the warm start was used:\n%s", table.String())
	}
}

// TestSteadyColdFirstRound runs a cold start small on Postgres — 200 feeds
// all due at once as after an import, a short warm-up — and checks that
// the warm-up followed serve's first round: every feed polled once, the
// round's time and rate in the report, steady no earlier than the round's
// end, and the window two cadences after it.
func TestSteadyColdFirstRound(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs feedmail serve and feedfarm")
	}
	dsn := storetest.PostgresURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rep, err := bench.RunSteady(ctx, bench.SteadyConfig{
		DatabaseURL: dsn, Feeds: 200, Hosts: 2, Cadence: 5 * time.Second, Window: 2 * time.Second,
		Warmup: 2 * time.Second, PublishShare: 0.1, Bare: time.Second,
	})
	if err != nil {
		t.Fatalf("steady: %v", err)
	}
	if rep.FirstRoundS <= 0 || rep.FirstRoundRate <= 0 || math.Abs(rep.FirstRoundRate*rep.FirstRoundS-200) > 1 {
		t.Fatalf("first round %.1f s at %.1f feeds/s; want both set and 200 feeds in all", rep.FirstRoundS, rep.FirstRoundRate)
	}
	if rep.SteadyAfterS < rep.FirstRoundS {
		t.Errorf("steady after %.1f s, before the first round ended (%.1f s)", rep.SteadyAfterS, rep.FirstRoundS)
	}
	var table bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"first round", "steady after"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table has no %q:\n%s", want, table.String())
		}
	}
}
