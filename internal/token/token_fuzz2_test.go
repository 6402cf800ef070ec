package token

import (
	"encoding/base64"
	"errors"
	"testing"
	"time"
)

// FuzzVerifyTamper checks tampering from both sides. (FuzzVerify used to
// flip the top bit of the last byte of the fuzzed string and want the
// result refused; when the fuzzer had already flipped that bit of a genuine
// token, flipping it back restored the genuine token, which rightly
// verified — input kept below as a seed: "AQFU0J3xwQbGM2nEPaQgEC0VZaljfE2n",
// found after ~1 min of fuzzing; FuzzVerify now checks only tokens that
// verify.)
//
// Properties: a genuine token with any one bit flipped (the bit is chosen
// by the fuzzer) never verifies, for any purpose; a fuzzed string that does
// verify stops verifying when any one of its bits is flipped; and a string
// that verifies is exactly the canonical encoding of its bytes (no second
// spelling of a token, e.g. with different trailing bits, is accepted).
func FuzzVerifyTamper(f *testing.F) {
	s := mustSigner(f, testSecret)
	for _, p := range []string{Confirm, Unsubscribe, Account, DigestUnsubscribe, WebSub, "custom-purpose"} {
		f.Add(s.Sign(p, 42, t0.Add(time.Hour)), p, int64(42), int64(3600), uint16(0))
		f.Add(s.Sign(p, -7, time.Time{}), p, int64(-7), int64(0), uint16(200))
	}
	// The genuine token with the top bit of its MAC's last byte flipped:
	// FuzzVerify's false positive.
	f.Add("AQFU0J3xwQbGM2nEPaQgEC0VZaljfE2n", Confirm, int64(42), int64(3527), uint16(191))
	f.Fuzz(func(t *testing.T, tok, purpose string, subject, expSeconds int64, bit uint16) {
		if len(purpose) > 255 {
			purpose = purpose[:255]
		}
		var exp time.Time
		if expSeconds != 0 {
			exp = t0.Add(time.Duration(expSeconds%(1<<40)) * time.Second)
		}
		purposes := []string{purpose, Confirm, Unsubscribe, Account, DigestUnsubscribe, WebSub}

		// A genuine token, one bit flipped.
		genuine := s.Sign(purpose, subject, exp)
		raw, err := encoding.DecodeString(genuine)
		if err != nil {
			t.Fatalf("Sign made an undecodable token %q: %v", genuine, err)
		}
		i := int(bit) % (8 * len(raw))
		raw[i/8] ^= 1 << (i % 8)
		for _, p := range purposes {
			if got, err := s.Verify(encoding.EncodeToString(raw), p, t0); err == nil {
				t.Fatalf("genuine token with bit %d flipped verified for %q as subject %d", i, p, got)
			}
		}

		// A fuzzed string that verifies is canonical and tamper-evident.
		for _, p := range purposes {
			got, err := s.Verify(tok, p, t0)
			if err != nil {
				if errors.Is(err, ErrBadSignature) || errors.Is(err, ErrMalformed) ||
					errors.Is(err, ErrWrongPurpose) || errors.Is(err, ErrExpired) {
					continue
				}
				t.Fatalf("Verify(%q, %q): error outside the package's kinds: %v", tok, p, err)
			}
			b, derr := base64.RawURLEncoding.DecodeString(tok)
			if derr != nil || base64.RawURLEncoding.EncodeToString(b) != tok {
				t.Fatalf("verified a non-canonical spelling %q (subject %d)", tok, got)
			}
			for j := range 8 * len(b) {
				c := append([]byte(nil), b...)
				c[j/8] ^= 1 << (j % 8)
				for _, q := range purposes {
					if _, err := s.Verify(base64.RawURLEncoding.EncodeToString(c), q, t0); err == nil {
						t.Fatalf("verified token %q still verifies for %q with bit %d flipped", tok, q, j)
					}
				}
			}
		}
	})
}

// TestVerifyRefusesLineBreaks: a token has exactly one string form
// (TestNonCanonicalBase64), but encoding/base64 ignores CR and LF anywhere
// in its input, even in Strict mode, so before 4a0c64a a genuine token with
// line breaks inserted verified as the same subject: not a forgery (the
// MAC is the genuine one) but a second spelling of every token, e.g. "%0A"
// in a link's path. Found by FuzzVerifyTamper (input kept in
// testdata/fuzz/FuzzVerifyTamper/599344615dbe2324).
func TestVerifyRefusesLineBreaks(t *testing.T) {
	s := mustSigner(t, testSecret)
	tok := s.Sign(Unsubscribe, 12345, time.Time{})
	for _, alt := range []string{
		tok[:5] + "\n" + tok[5:],
		tok[:5] + "\r\n" + tok[5:],
		tok + "\n",
		"\r" + tok,
	} {
		if got, err := s.Verify(alt, Unsubscribe, t0); err == nil {
			t.Errorf("%q verified (subject %d), want ErrMalformed", alt, got)
		}
	}
}
