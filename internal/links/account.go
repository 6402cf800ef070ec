package links

import (
	"fmt"
	"time"

	"github.com/feedmail/feedmail/internal/token"
)

// ErrSignedOut is CheckAccount's error for a link issued before the
// person's last "sign out everywhere".
var ErrSignedOut = fmt.Errorf("%w: signed out everywhere since it was issued", token.ErrExpired)

// AccountIssued is when the account link with claims c was issued: its
// recorded issue time, or for a link made before links recorded it, the
// earliest it can have been (its expiry less the old 60 days).
func AccountIssued(c token.Claims) time.Time {
	if !c.Issued.IsZero() || c.Expires.IsZero() {
		return c.Issued
	}
	return c.Expires.Add(-legacyAccountTTL)
}

// CheckAccount applies the rules of an account link, verified (claims c),
// for a person last signed out everywhere at signedOut (nil: never), at
// now: a link issued at or before signedOut is ErrSignedOut (wrapping
// token.ErrExpired, so pages offer a fresh link), and an old link without
// an issue time works no longer than AccountTTL from its earliest issue.
// It returns whether the link is fresh enough to make an API token.
func CheckAccount(c token.Claims, signedOut *time.Time, now time.Time) (fresh bool, err error) {
	issued := AccountIssued(c)
	if signedOut != nil && !issued.After(*signedOut) {
		return false, ErrSignedOut
	}
	if c.Issued.IsZero() && !now.Before(issued.Add(AccountTTL)) {
		return false, fmt.Errorf("%w: an account link from before links recorded their issue time", token.ErrExpired)
	}
	return !c.Issued.IsZero() && now.Sub(issued) <= FreshSignIn, nil
}
