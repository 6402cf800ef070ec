package proof

import (
	"bytes"
	"crypto/rand"
	"errors"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)

func TestCheck(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	o := Options{Bits: 12, MinWait: 5 * time.Second, MaxAge: time.Hour}
	ch, err := Issue(key, t0, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	good := Solve(ch, o.Bits)
	bad := "x"
	for i := 0; ; i++ { // an answer that does not solve it
		if a := strings.Repeat("9", 1) + string(rune('0'+i%10)); !Solves(ch, a, o.Bits) {
			bad = a
			break
		}
	}
	other, _ := Issue([]byte("another key, also 32 bytes long!"), t0, rand.Reader)
	cases := []struct {
		name, ch, answer string
		at               time.Duration
		err              error
	}{
		{"solved at once", ch, good, 0, nil},
		{"solved, late", ch, good, 59 * time.Minute, nil},
		{"no answer, too soon", ch, "", time.Second, ErrTooSoon},
		{"wrong answer, too soon", ch, bad, time.Second, ErrTooSoon},
		{"no answer, after the wait (no script)", ch, "", 5 * time.Second, nil},
		{"expired", ch, good, time.Hour, ErrExpired},
		{"from the future", ch, good, -2 * time.Minute, ErrExpired},
		{"missing", "", good, 0, ErrMissing},
		{"another key's", other, Solve(other, o.Bits), 0, ErrInvalid},
		{"edited time", "2" + ch[1:], good, 0, ErrInvalid},
		{"garbage", "a.b", "", 0, ErrInvalid},
		{"answer not a number", ch, good + "x", time.Second, ErrTooSoon},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			nonce, err := Check(key, c.ch, c.answer, t0.Add(c.at), o)
			if !errors.Is(err, c.err) {
				t.Fatalf("Check = %q, %v; want %v", nonce, err, c.err)
			}
			if c.err == nil && (nonce == "" || !strings.HasSuffix(ch, "."+nonce)) {
				t.Fatalf("nonce %q is not the challenge's MAC", nonce)
			}
		})
	}
}

func TestIssueUnique(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	a, _ := Issue(key, t0, rand.Reader)
	b, _ := Issue(key, t0, rand.Reader)
	if a == b {
		t.Fatal("two challenges at one instant are the same")
	}
	if _, err := Issue(key, t0, bytes.NewReader(nil)); err == nil {
		t.Fatal("Issue without randomness succeeded")
	}
}

// TestSolvesVector pins the hash the page's script computes: the same
// challenge and answer must pass in Go and in the browser.
func TestSolvesVector(t *testing.T) {
	ch := "1.AAAAAAAAAAAAAAAA.abc"
	a := Solve(ch, 8)
	if !Solves(ch, a, 8) || Solves(ch, a, 30) {
		t.Fatalf("Solve(8) = %s, which does not check out", a)
	}
}
