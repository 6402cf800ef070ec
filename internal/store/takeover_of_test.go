package store

import (
	"reflect"
	"testing"
	"time"
)

// TestTakeoverOf: only other holders' expired leases are takeovers; the
// report names each previous holder once, sorted, and the longest expiry.
func TestTakeoverOf(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { u := now.Add(d); return &u }
	for _, c := range []struct {
		name string
		prev []prevLease
		want *Takeover
	}{
		{"none claimed", nil, nil},
		{"free rows", []prevLease{{}, {Owner: "", Until: at(-time.Hour)}}, nil},
		{"own expired lease", []prevLease{{Owner: "me", Until: at(-time.Minute)}}, nil},
		{"another's live lease", []prevLease{{Owner: "b", Until: at(time.Second)}}, nil},
		{"lease ending now", []prevLease{{Owner: "b", Until: at(0)}},
			&Takeover{Kind: "k", By: "me", Count: 1, From: []string{"b"}}},
		{"owner without end", []prevLease{{Owner: "b"}}, nil},
		{"two holders", []prevLease{{Owner: "z", Until: at(-time.Minute)}, {}, {Owner: "a", Until: at(-3 * time.Minute)},
			{Owner: "z", Until: at(-2 * time.Minute)}, {Owner: "me", Until: at(-time.Hour)}},
			&Takeover{Kind: "k", By: "me", Count: 3, From: []string{"a", "z"}, Expired: 3 * time.Minute}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := takeoverOf("k", "me", now, c.prev); !reflect.DeepEqual(got, c.want) {
				t.Errorf("takeoverOf = %+v, want %+v", got, c.want)
			}
		})
	}
}
