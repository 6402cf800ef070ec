package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// TestAPITokens: last use is written at most once per interval, a token
// is revoked only by its owner (or the operator, user 0) and keeps its
// first revocation time, and deleting the account erases its tokens.
func TestAPITokens(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
	st := storetest.Open(t, storetest.Options{Clock: clk})
	ctx := context.Background()
	a, _, _ := st.EnsureUser(ctx, "a@example.org")
	b, _, _ := st.EnsureUser(ctx, "b@example.org")
	tok, err := st.CreateAPIToken(ctx, a.ID, "script", "0123456789abcdef", []byte("hash"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateAPIToken(ctx, b.ID, "dup", "0123456789abcdef", []byte("h2")); err == nil {
		t.Errorf("a second token with the same key was stored")
	}
	start := clk.Now()
	for i, s := range []struct {
		at    time.Duration
		wrote bool
	}{{0, true}, {30 * time.Second, false}, {59 * time.Second, false}, {time.Minute, true}, {90 * time.Second, false}} {
		wrote, err := st.TouchAPIToken(ctx, tok.ID, start.Add(s.at), time.Minute)
		if err != nil || wrote != s.wrote {
			t.Errorf("touch %d at +%s: wrote %v, %v; want %v", i, s.at, wrote, err, s.wrote)
		}
	}
	if _, err := st.RevokeAPIToken(ctx, b.ID, tok.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("revoked by another account: %v, want ErrNotFound", err)
	}
	first, err := st.RevokeAPIToken(ctx, a.ID, tok.ID)
	if err != nil || first.RevokedAt == nil {
		t.Fatalf("revoke: %+v, %v", first, err)
	}
	clk.Advance(time.Hour)
	again, err := st.RevokeAPIToken(ctx, 0, tok.ID)
	if err != nil || !again.RevokedAt.Equal(*first.RevokedAt) {
		t.Errorf("revoked again: %+v, %v; want the first time kept", again, err)
	}
	if _, err := st.DeleteUser(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if ts, err := st.APITokensOfUser(ctx, a.ID); err != nil || len(ts) != 0 {
		t.Errorf("tokens after deleting the account: %v, %v", ts, err)
	}
}
