package store_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// TestClaimsReportTakeovers: each kind of leased work, claimed by a holder
// that then dies, is reported taken over — once per claim, with the dead
// holder's name and how long its lease had been expired — by the next
// holder that claims it after the lease ran out; a claim of work nobody
// held, or held by a live lease, reports nothing.
func TestClaimsReportTakeovers(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name  string
		seed  func(t *testing.T, s *store.Store)
		claim func(s *store.Store, owner string, now time.Time) (int, error)
		kind  func(s *store.Store) string
	}{
		{"outbox", func(t *testing.T, s *store.Store) {
			u := newUser(t, s, "taken@example.com", 10)
			addOutbox(t, s, store.OutboxRow{Kind: store.KindItem, DedupeKey: "item:1:1", UserID: u.ID, Credits: 1,
				State: store.OutboxQueued, NextAttemptAt: t0, CreatedAt: t0})
		}, func(s *store.Store, owner string, now time.Time) (int, error) {
			rows, err := s.ClaimOutbox(context.Background(), owner, time.Minute, now, 10)
			return len(rows), err
		}, func(*store.Store) string { return store.TakeoverOutbox }},
		{"digests", func(t *testing.T, s *store.Store) {
			u := newUser(t, s, "digest@example.com", 10)
			d := store.Digest{UserID: u.ID, Name: "daily", Schedule: "@daily", Timezone: "UTC", NextSlotAt: t0, CreatedAt: t0}
			if err := s.DB.Create(&d).Error; err != nil {
				t.Fatal(err)
			}
		}, func(s *store.Store, owner string, now time.Time) (int, error) {
			ds, err := s.ClaimDueDigests(context.Background(), owner, time.Minute, now, 10)
			return len(ds), err
		}, func(*store.Store) string { return store.TakeoverDigests }},
		{"feeds", func(t *testing.T, s *store.Store) {
			seedDueFeeds(t, s, 1, t0)
		}, func(s *store.Store, owner string, now time.Time) (int, error) {
			fs, _, err := s.ClaimDueFeeds(context.Background(), owner, time.Minute, now, 10, nil, time.Time{})
			return len(fs), err
		}, func(s *store.Store) string {
			if s.Postgres() {
				return store.TakeoverHosts
			}
			return store.TakeoverFeeds
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			var got []store.Takeover
			s := storetest.Open(t, storetest.Options{OnTakeover: func(tk store.Takeover) {
				mu.Lock()
				defer mu.Unlock()
				got = append(got, tk)
			}})
			c.seed(t, s)
			reports := func() []store.Takeover {
				mu.Lock()
				defer mu.Unlock()
				return slices.Clone(got)
			}
			for _, step := range []struct {
				owner       string
				at          time.Duration
				wantClaimed int
				want        []store.Takeover
			}{
				{"dead", 0, 1, nil}, // nobody held it
				{"alive", 30 * time.Second, 0, nil},
				{"alive", 3 * time.Minute, 1, []store.Takeover{{Kind: c.kind(s), By: "alive", Count: 1, From: []string{"dead"}, Expired: 2 * time.Minute}}},
				{"alive", 5 * time.Minute, 1, []store.Takeover{{Kind: c.kind(s), By: "alive", Count: 1, From: []string{"dead"}, Expired: 2 * time.Minute}}}, // its own
			} {
				n, err := c.claim(s, step.owner, t0.Add(step.at))
				if err != nil {
					t.Fatal(err)
				}
				if n != step.wantClaimed {
					t.Fatalf("%s claiming at +%v got %d, want %d", step.owner, step.at, n, step.wantClaimed)
				}
				if r := reports(); !takeoversEqual(r, step.want) {
					t.Fatalf("after %s's claim at +%v the takeovers reported are %+v, want %+v", step.owner, step.at, r, step.want)
				}
			}
		})
	}
}

func takeoversEqual(a, b []store.Takeover) bool {
	return slices.EqualFunc(a, b, func(x, y store.Takeover) bool {
		return x.Kind == y.Kind && x.By == y.By && x.Count == y.Count && slices.Equal(x.From, y.From) && x.Expired == y.Expired
	})
}
