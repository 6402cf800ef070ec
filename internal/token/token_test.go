package token

import (
	"bytes"
	"encoding/base64"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

var (
	testSecret  = []byte("0123456789abcdef0123456789abcdef")
	otherSecret = []byte("fedcba9876543210fedcba9876543210")
	t0          = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
)

func mustSigner(t testing.TB, secret []byte) *Signer {
	t.Helper()
	s, err := NewSigner(secret)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestNewSigner(t *testing.T) {
	for _, n := range []int{0, 1, 15} {
		if _, err := NewSigner(make([]byte, n)); !errors.Is(err, ErrShortSecret) {
			t.Errorf("NewSigner(%d bytes) err = %v, want ErrShortSecret", n, err)
		}
	}
	secret := append([]byte(nil), testSecret...)
	s := mustSigner(t, secret)
	tok := s.Sign(Confirm, 1, time.Time{})
	secret[0] ^= 1 // the signer keeps its own copy
	if _, err := s.Verify(tok, Confirm, t0); err != nil {
		t.Errorf("signer affected by caller's later change to the secret: %v", err)
	}
}

func TestRoundTrip(t *testing.T) {
	s := mustSigner(t, testSecret)
	purposes := []string{Confirm, Unsubscribe, Account, DigestUnsubscribe, WebSub, "custom-purpose", ""}
	subjects := []int64{0, 1, -1, 12345, math.MaxInt64, math.MinInt64}
	expiries := []time.Time{{}, t0.Add(time.Second), t0.Add(30 * 24 * time.Hour), time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)}
	for _, p := range purposes {
		for _, sub := range subjects {
			for _, exp := range expiries {
				tok := s.Sign(p, sub, exp)
				if strings.ContainsAny(tok, "+/=") {
					t.Errorf("token %q is not URL-safe unpadded base64", tok)
				}
				got, err := s.Verify(tok, p, t0)
				if err != nil || got != sub {
					t.Errorf("Verify(Sign(%q, %d, %v)) = %d, %v", p, sub, exp, got, err)
				}
			}
		}
	}
}

func TestCompact(t *testing.T) {
	s := mustSigner(t, testSecret)
	if tok := s.Sign(Unsubscribe, 12345, time.Time{}); len(tok) != 30 {
		t.Errorf("unsubscribe token %q has %d characters, want 30", tok, len(tok))
	}
	if tok := s.Sign(Confirm, 12345, t0.Add(7*24*time.Hour)); len(tok) > 40 {
		t.Errorf("confirm token with expiry %q has %d characters, want ≤ 40", tok, len(tok))
	}
}

// flip returns tok with byte i of its decoded form changed.
func flip(t *testing.T, tok string, i int) string {
	t.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		t.Fatal(err)
	}
	if i < 0 {
		i += len(raw)
	}
	raw[i] ^= 0x01
	return base64.RawURLEncoding.EncodeToString(raw)
}

func TestVerify(t *testing.T) {
	s := mustSigner(t, testSecret)
	other := mustSigner(t, otherSecret)
	good := s.Sign(Unsubscribe, 42, t0.Add(time.Hour))
	forever := s.Sign(Account, 7, time.Time{})
	custom := s.Sign("custom", 7, time.Time{})
	raw, _ := base64.RawURLEncoding.DecodeString(good)

	tests := []struct {
		name    string
		tok     string
		purpose string
		now     time.Time
		want    int64
		wantErr error
	}{
		{"valid", good, Unsubscribe, t0, 42, nil},
		{"valid just before expiry", good, Unsubscribe, t0.Add(time.Hour - time.Nanosecond), 42, nil},
		{"expired at expiry", good, Unsubscribe, t0.Add(time.Hour), 0, ErrExpired},
		{"expired later", good, Unsubscribe, t0.Add(48 * time.Hour), 0, ErrExpired},
		{"no expiry, far future", forever, Account, t0.AddDate(50, 0, 0), 7, nil},
		{"custom purpose", custom, "custom", t0, 7, nil},
		{"custom purpose swapped", custom, "custom2", t0, 0, ErrWrongPurpose},
		{"swapped purpose", good, Confirm, t0, 0, ErrWrongPurpose},
		{"swapped purpose, expired", good, Confirm, t0.Add(2 * time.Hour), 0, ErrWrongPurpose},
		{"digest vs unsubscribe", s.Sign(DigestUnsubscribe, 1, time.Time{}), Unsubscribe, t0, 0, ErrWrongPurpose},
		{"other secret", other.Sign(Unsubscribe, 42, t0.Add(time.Hour)), Unsubscribe, t0, 0, ErrBadSignature},
		{"tampered purpose byte", flip(t, good, 1), Unsubscribe, t0, 0, ErrBadSignature},
		{"tampered subject", flip(t, good, 2), Unsubscribe, t0, 0, ErrBadSignature},
		{"tampered expiry", flip(t, good, len(raw)-17), Unsubscribe, t0, 0, ErrBadSignature},
		{"tampered mac first", flip(t, good, len(raw)-16), Unsubscribe, t0, 0, ErrBadSignature},
		{"tampered mac last", flip(t, good, -1), Unsubscribe, t0, 0, ErrBadSignature},
		{"tampered version", flip(t, good, 0), Unsubscribe, t0, 0, ErrMalformed},
		{"truncated by one char", good[:len(good)-1], Unsubscribe, t0, 0, ErrMalformed},
		{"truncated mac", base64.RawURLEncoding.EncodeToString(raw[:len(raw)-1]), Unsubscribe, t0, 0, ErrMalformed},
		{"half", good[:len(good)/2], Unsubscribe, t0, 0, ErrMalformed},
		{"extra byte", base64.RawURLEncoding.EncodeToString(append(append([]byte(nil), raw...), 0)), Unsubscribe, t0, 0, ErrMalformed},
		{"empty", "", Unsubscribe, t0, 0, ErrMalformed},
		{"garbage", "not a token!", Unsubscribe, t0, 0, ErrMalformed},
		{"padded", good + "==", Unsubscribe, t0, 0, ErrMalformed},
		{"std alphabet", strings.NewReplacer("-", "+", "_", "/").Replace(good) + "+/", Unsubscribe, t0, 0, ErrMalformed},
		{"too long", strings.Repeat("A", MaxLen+1), Unsubscribe, t0, 0, ErrMalformed},
		{"zeros", strings.Repeat("A", 40), Unsubscribe, t0, 0, ErrMalformed},
		{"unknown purpose code", base64.RawURLEncoding.EncodeToString(append([]byte{1, 9, 2, 0}, make([]byte, 16)...)), Unsubscribe, t0, 0, ErrMalformed},
		{"spelled purpose too long", base64.RawURLEncoding.EncodeToString(append([]byte{1, 0, 200, 'x', 2, 0}, make([]byte, 16)...)), Unsubscribe, t0, 0, ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Verify(tt.tok, tt.purpose, tt.now)
			if tt.wantErr == nil {
				if err != nil || got != tt.want {
					t.Fatalf("Verify = %d, %v; want %d", got, err, tt.want)
				}
				return
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Verify err = %v, want %v", err, tt.wantErr)
			}
			if got != 0 {
				t.Errorf("subject %d returned with an error", got)
			}
		})
	}
}

// TestNonCanonicalBase64: a second spelling of the same bytes is refused, so
// a token has exactly one string form.
func TestNonCanonicalBase64(t *testing.T) {
	s := mustSigner(t, testSecret)
	tok := s.Sign(Unsubscribe, 12345, time.Time{}) // 22 bytes: last char carries 2 spare bits
	last := strings.IndexByte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", tok[len(tok)-1])
	alt := tok[:len(tok)-1] + string("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"[last|1])
	if alt == tok {
		alt = tok[:len(tok)-1] + string("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"[last&^1])
	}
	if _, err := s.Verify(alt, Unsubscribe, t0); !errors.Is(err, ErrMalformed) {
		t.Errorf("non-canonical spelling %q of %q: err = %v, want ErrMalformed", alt, tok, err)
	}
}

func TestSignExpiryEdges(t *testing.T) {
	s := mustSigner(t, testSecret)
	// Before 1970: already expired, not "never".
	old := s.Sign(Confirm, 1, time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC))
	if _, err := s.Verify(old, Confirm, t0); !errors.Is(err, ErrExpired) {
		t.Errorf("pre-1970 expiry: err = %v, want ErrExpired", err)
	}
	// Sub-second expiry rounds down.
	tok := s.Sign(Confirm, 1, t0.Add(1500*time.Millisecond))
	if _, err := s.Verify(tok, Confirm, t0.Add(time.Second)); !errors.Is(err, ErrExpired) {
		t.Errorf("expiry rounds down: err = %v, want ErrExpired", err)
	}
	if _, err := s.Verify(tok, Confirm, t0.Add(999*time.Millisecond)); err != nil {
		t.Errorf("before rounded expiry: %v", err)
	}
	// A purpose over 255 bytes is cut, consistently.
	long := strings.Repeat("p", 300)
	if _, err := s.Verify(s.Sign(long, 3, time.Time{}), long[:255], t0); err != nil {
		t.Errorf("long purpose: %v", err)
	}
}

func FuzzVerify(f *testing.F) {
	s := mustSigner(f, testSecret)
	for _, p := range []string{Confirm, Unsubscribe, Account, DigestUnsubscribe, WebSub, "x"} {
		f.Add(s.Sign(p, 42, t0.Add(time.Hour)), p, int64(42), int64(3600))
		f.Add(s.Sign(p, -1, time.Time{}), p, int64(-1), int64(0))
	}
	f.Add("", "", int64(0), int64(0))
	f.Add("AQEAAA", Confirm, int64(0), int64(-5))
	f.Add(strings.Repeat("_", 64), WebSub, int64(math.MaxInt64), int64(math.MaxInt32))
	other := mustSigner(f, otherSecret)
	f.Fuzz(func(t *testing.T, tok, purpose string, subject, expSeconds int64) {
		// Arbitrary input never panics, and success implies the token is
		// exactly what this signer makes for that subject.
		if _, err := s.Verify(tok, purpose, t0); err == nil && len(purpose) > 255 {
			t.Fatalf("verified with a purpose longer than Sign keeps")
		}
		var exp time.Time
		if expSeconds != 0 {
			exp = t0.Add(time.Duration(expSeconds%(1<<40)) * time.Second)
		}
		if len(purpose) > 255 {
			purpose = purpose[:255]
		}
		// A token from a different secret never verifies, for any purpose.
		forged := other.Sign(purpose, subject, exp)
		if _, err := s.Verify(forged, purpose, t0); !errors.Is(err, ErrBadSignature) {
			t.Fatalf("token from another secret: err = %v, want ErrBadSignature", err)
		}
		// Our own token round-trips unless expired.
		got, err := s.Verify(s.Sign(purpose, subject, exp), purpose, t0)
		expired := !exp.IsZero() && !t0.Before(time.Unix(max(exp.Unix(), 1), 0))
		switch {
		case expired && !errors.Is(err, ErrExpired):
			t.Fatalf("expired token (%v): err = %v", exp, err)
		case !expired && (err != nil || got != subject):
			t.Fatalf("round trip: %d, %v; want %d", got, err, subject)
		}
		// A fuzzed string that verifies stops verifying with its MAC flipped.
		// (Only then: a fuzzed string may itself be a valid token with one
		// bit flipped, which the flip here would restore.)
		if _, verr := s.Verify(tok, purpose, t0); verr != nil {
			return
		}
		if raw, err := base64.RawURLEncoding.DecodeString(tok); err == nil && len(raw) > 0 {
			raw[len(raw)-1] ^= 0x80
			if _, err := s.Verify(base64.RawURLEncoding.EncodeToString(raw), purpose, t0); err == nil {
				t.Fatalf("token with a flipped MAC bit verified")
			}
		}
	})
}

func TestDerive(t *testing.T) {
	s, other := mustSigner(t, testSecret), mustSigner(t, otherSecret)
	a, b := s.Derive("message-id"), s.Derive("message-id")
	if len(a) != 32 || !bytes.Equal(a, b) {
		t.Fatalf("Derive is not a stable 32-byte key: %x, %x", a, b)
	}
	if bytes.Equal(a, s.Derive("other")) || bytes.Equal(a, other.Derive("message-id")) {
		t.Errorf("derived keys must differ by label and by secret")
	}
}

func TestSignIssued(t *testing.T) {
	s := mustSigner(t, testSecret)
	other := mustSigner(t, otherSecret)
	issued := t0.Add(-90 * time.Second)
	exp := t0.Add(time.Hour)
	tok := s.SignIssued(Account, 77, issued, exp)
	c, err := s.VerifyClaims(tok, Account, t0)
	if err != nil || c.Subject != 77 || !c.Issued.Equal(issued.Truncate(time.Second)) || !c.Expires.Equal(exp.Truncate(time.Second)) {
		t.Fatalf("VerifyClaims = %+v, %v; want subject 77 issued %s expires %s", c, err, issued, exp)
	}
	if id, err := s.Verify(tok, Account, t0); err != nil || id != 77 {
		t.Fatalf("Verify of an issued token = %d, %v", id, err)
	}
	old := s.Sign(Account, 77, exp)
	if c, err := s.VerifyClaims(old, Account, t0); err != nil || !c.Issued.IsZero() {
		t.Fatalf("a token without issue time: %+v, %v", c, err)
	}
	raw, _ := encoding.DecodeString(tok)
	for name, bad := range map[string]string{
		"other secret":   other.SignIssued(Account, 77, issued, exp),
		"issue time cut": encoding.EncodeToString(append(append([]byte(nil), raw[:len(raw)-macLen-1]...), raw[len(raw)-macLen:]...)),
		"v1 byte":        encoding.EncodeToString(append([]byte{version}, raw[1:]...)),
	} {
		if _, err := s.VerifyClaims(bad, Account, t0); err == nil {
			t.Errorf("%s: verified", name)
		}
	}
	if _, err := s.VerifyClaims(tok, Account, exp); !errors.Is(err, ErrExpired) {
		t.Errorf("at expiry: %v, want ErrExpired", err)
	}
}
