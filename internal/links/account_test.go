package links

import (
	"errors"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/token"
)

func TestCheckAccount(t *testing.T) {
	now := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	issued := func(ago, ttl time.Duration) token.Claims {
		return token.Claims{Subject: 1, Issued: now.Add(-ago), Expires: now.Add(-ago + ttl)}
	}
	legacy := func(ago time.Duration) token.Claims { // made before links carried their issue time
		return token.Claims{Subject: 1, Expires: now.Add(-ago + legacyAccountTTL)}
	}
	at := func(ago time.Duration) *time.Time { t := now.Add(-ago); return &t }
	cases := []struct {
		name      string
		c         token.Claims
		signedOut *time.Time
		fresh     bool
		err       error
	}{
		{"sign-in link just sent", issued(time.Minute, SignInTTL), nil, true, nil},
		{"15 minutes old", issued(FreshSignIn, SignInTTL), nil, true, nil},
		{"16 minutes old", issued(16*time.Minute, SignInTTL), nil, false, nil},
		{"email link, 13 days old", issued(13*24*time.Hour, AccountTTL), nil, false, nil},
		{"issued before signing out", issued(time.Hour, AccountTTL), at(time.Minute), false, ErrSignedOut},
		{"issued the second of signing out", issued(time.Minute, AccountTTL), at(time.Minute), false, ErrSignedOut},
		{"issued after signing out", issued(time.Minute, AccountTTL), at(time.Hour), true, nil},
		{"old link, 13 days old", legacy(13 * 24 * time.Hour), nil, false, nil},
		{"old link, 15 days old", legacy(15 * 24 * time.Hour), nil, false, token.ErrExpired},
		{"old link just sent is never fresh", legacy(time.Minute), nil, false, nil},
		{"old link after signing out", legacy(time.Minute), at(0), false, ErrSignedOut},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fresh, err := CheckAccount(c.c, c.signedOut, now)
			if fresh != c.fresh || !errors.Is(err, c.err) || (c.err == nil && err != nil) {
				t.Fatalf("CheckAccount = %v, %v; want %v, %v", fresh, err, c.fresh, c.err)
			}
		})
	}
	if !errors.Is(ErrSignedOut, token.ErrExpired) {
		t.Error("ErrSignedOut should read as expired, so pages offer a fresh link")
	}
}
