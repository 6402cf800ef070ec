// Package proof owns the signup form's proof of work: a challenge the
// server signs when it renders the form, and the check of what the form
// sends back. A browser's script finds a number whose hash with the
// challenge starts with Bits zero bits (a fraction of a second for a
// person, a real cost for a script sending thousands); without the
// script, a form sent at least MinWait after it was rendered passes too,
// so a person with scripts off is never stuck. It is pure: the caller
// gives the key, the clock's time and randomness, and records single use
// (the challenge's Nonce) where processes share it.
//
// A challenge is "<issued Unix ms>.<random nonce>.<MAC>", the MAC an
// HMAC-SHA-256 (16 bytes, base64url) of the other two under a key
// derived from the link secret. The work is on the MAC alone, so it fits
// one SHA-256 block: SHA-256(MAC + ":" + answer), answer in decimal.
package proof

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"io"
	"math/bits"
	"strconv"
	"strings"
	"time"
)

// KeyLabel names the key a token.Signer derives for challenges.
const KeyLabel = "signup-proof"

// Options say how hard and how long a challenge is good for.
type Options struct {
	// Bits is how many leading zero bits the hash must have (0: the
	// proof is off).
	Bits int
	// MinWait is how long after rendering a form without an answer passes.
	MinWait time.Duration
	// MaxAge is how long a challenge is good for.
	MaxAge time.Duration
}

// Default: about 2^17 hashes, a few tenths of a second in a browser; five
// seconds without scripts (typing an address takes longer); two hours to
// fill the form in.
func Default() Options {
	return Options{Bits: 17, MinWait: 5 * time.Second, MaxAge: 2 * time.Hour}
}

// Errors of Check.
var (
	ErrMissing = errors.New("proof: no challenge")
	ErrInvalid = errors.New("proof: challenge not signed by this server")
	ErrExpired = errors.New("proof: challenge expired")
	ErrTooSoon = errors.New("proof: no answer, and sent too soon after the form was shown")
)

var b64 = base64.RawURLEncoding

// Issue returns a new challenge issued at now, signed with key, with 12
// bytes of rnd as its nonce.
func Issue(key []byte, now time.Time, rnd io.Reader) (string, error) {
	var nonce [12]byte
	if _, err := io.ReadFull(rnd, nonce[:]); err != nil {
		return "", err
	}
	body := strconv.FormatInt(now.UnixMilli(), 10) + "." + b64.EncodeToString(nonce[:])
	return body + "." + mac(key, body), nil
}

func mac(key []byte, body string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("feedmail/proof/v1\x00"))
	m.Write([]byte(body))
	return b64.EncodeToString(m.Sum(nil)[:16])
}

// Check returns the challenge's nonce (its MAC: record it to refuse a
// second use) when challenge is one of key's, younger than MaxAge, and
// either answer solves it or MinWait has passed since it was issued.
func Check(key []byte, challenge, answer string, now time.Time, o Options) (string, error) {
	if challenge == "" {
		return "", ErrMissing
	}
	parts := strings.Split(challenge, ".")
	if len(challenge) > 100 || len(parts) != 3 {
		return "", ErrInvalid
	}
	body := parts[0] + "." + parts[1]
	if !hmac.Equal([]byte(parts[2]), []byte(mac(key, body))) {
		return "", ErrInvalid
	}
	ms, err := strconv.ParseInt(parts[0], 10, 64)
	if err != nil {
		return "", ErrInvalid
	}
	age := now.Sub(time.UnixMilli(ms))
	if age >= o.MaxAge || age < -time.Minute {
		return "", ErrExpired
	}
	if Solves(challenge, answer, o.Bits) || age >= o.MinWait {
		return parts[2], nil
	}
	return "", ErrTooSoon
}

// Solves reports whether answer (decimal, at most 15 digits) is a proof
// of n bits for challenge.
func Solves(challenge, answer string, n int) bool {
	if answer == "" || len(answer) > 15 || strings.Trim(answer, "0123456789") != "" {
		return false
	}
	mac := challenge[strings.LastIndexByte(challenge, '.')+1:]
	sum := sha256.Sum256([]byte(mac + ":" + answer))
	return leadingZeros(sum[:]) >= n
}

func leadingZeros(b []byte) int {
	n := 0
	for _, c := range b {
		if c != 0 {
			return n + bits.LeadingZeros8(c)
		}
		n += 8
	}
	return n
}

// Solve finds the smallest answer to challenge for n bits, as the page's
// script does (for tests and clients that do the work themselves).
func Solve(challenge string, n int) string {
	for i := 0; ; i++ {
		if a := strconv.Itoa(i); Solves(challenge, a, n) {
			return a
		}
	}
}
