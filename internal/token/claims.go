package token

import (
	"fmt"
	"time"
)

// Claims are what a verified token says.
type Claims struct {
	Subject int64
	// Expires is the token's expiry (zero: never).
	Expires time.Time
	// Issued is when the token was made, in whole seconds; zero for a token
	// made by Sign, which does not record it.
	Issued time.Time
}

// SignIssued is Sign for a token that also records when it was issued
// (kept in whole seconds, rounded down), so a verifier can refuse links
// made before some moment ("sign out everywhere") or ask for a recent one.
// The token is a few bytes longer than Sign's.
func (s *Signer) SignIssued(purpose string, subject int64, issued, expires time.Time) string {
	if issued.IsZero() || issued.Unix() < 1 {
		issued = time.Unix(1, 0)
	}
	return encoding.EncodeToString(s.signRaw(purpose, subject, expires, issued))
}

// VerifyClaims checks tok like Verify and returns all it says: subject,
// expiry and, for a token made by SignIssued, its issue time.
func (s *Signer) VerifyClaims(tok, purpose string, now time.Time) (Claims, error) {
	if tok == "" {
		return Claims{}, fmt.Errorf("%w: empty", ErrMalformed)
	}
	if len(tok) > MaxLen {
		return Claims{}, fmt.Errorf("%w: %d characters", ErrMalformed, len(tok))
	}
	raw, err := encoding.DecodeString(tok)
	if err != nil {
		return Claims{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if encoding.EncodeToString(raw) != tok {
		return Claims{}, fmt.Errorf("%w: not in canonical form", ErrMalformed)
	}
	return s.verifyRaw(raw, purpose, now)
}
