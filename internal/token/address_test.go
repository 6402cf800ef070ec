package token

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestSignAddress(t *testing.T) {
	s := mustSigner(t, testSecret)
	other := mustSigner(t, otherSecret)
	tok := s.SignAddress(Return, 1234567, time.Time{})
	if !regexp.MustCompile(`^[a-z2-7]+$`).MatchString(tok) {
		t.Fatalf("address token %q is not lower-case base32", tok)
	}
	if len("bounces+"+tok) > 64 {
		t.Fatalf("local part bounces+%s is %d characters, over the 64 RFC 5321 allows", tok, len("bounces+"+tok))
	}
	exp := t0.Add(time.Hour)
	expiring := s.SignAddress(MailUnsubscribe, 9, exp)
	cases := []struct {
		name, tok, purpose string
		now                time.Time
		want               int64
		err                error
	}{
		{"as signed", tok, Return, t0, 1234567, nil},
		{"upper case on the way back", strings.ToUpper(tok), Return, t0, 1234567, nil},
		{"mixed case", strings.ToUpper(tok[:5]) + tok[5:], Return, t0, 1234567, nil},
		{"other purpose", tok, MailUnsubscribe, t0, 0, ErrWrongPurpose},
		{"other secret", other.SignAddress(Return, 1234567, time.Time{}), Return, t0, 0, ErrBadSignature},
		{"one letter changed", tok[:10] + string(rune('a'+(tok[10]-'a'+1)%26)) + tok[11:], Return, t0, 0, ErrBadSignature},
		{"url token is not an address token", s.Sign(Return, 1234567, time.Time{}), Return, t0, 0, ErrMalformed},
		{"truncated", tok[:len(tok)-3], Return, t0, 0, ErrMalformed},
		{"empty", "", Return, t0, 0, ErrMalformed},
		{"padding", tok + "=", Return, t0, 0, ErrMalformed},
		{"expiring, in time", expiring, MailUnsubscribe, t0, 9, nil},
		{"expiring, expired", expiring, MailUnsubscribe, exp, 0, ErrExpired},
		{"too long", strings.Repeat("a", MaxLen+1), Return, t0, 0, ErrMalformed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := s.VerifyAddress(c.tok, c.purpose, c.now)
			if c.err != nil {
				if !errors.Is(err, c.err) {
					t.Fatalf("VerifyAddress = %d, %v; want %v", got, err, c.err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("VerifyAddress = %d, %v; want %d", got, err, c.want)
			}
		})
	}
}
