package websub

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"strings"
)

// SignatureHeader is the header a hub signs content distribution with when
// the subscription was made with a secret: "X-Hub-Signature: method=hex".
const SignatureHeader = "X-Hub-Signature"

// Errors of VerifySignature. Test with errors.Is. A handler answers a
// distribution that fails any of them with 2xx and drops the content (WebSub
// §8: the subscriber "MUST locally ignore" it but should not reveal why);
// websub.rocks 301 and 302.
var (
	// ErrNoSignature: the subscription has a secret but the request is unsigned.
	ErrNoSignature = errors.New("websub: missing X-Hub-Signature")
	// ErrUnknownMethod: the method is not sha1, sha256, sha384 or sha512.
	ErrUnknownMethod = errors.New("websub: unknown signature method")
	// ErrMalformedSignature: no "method=", bad hex, or the wrong length for the method.
	ErrMalformedSignature = errors.New("websub: malformed signature")
	// ErrSignatureMismatch: well-formed, but not the HMAC of the body under the secret.
	ErrSignatureMismatch = errors.New("websub: signature does not match")
	// ErrNoSecret: VerifySignature was called without a secret (a caller bug:
	// a subscription without a secret has nothing to check).
	ErrNoSecret = errors.New("websub: no secret to verify with")
)

func signatureHash(method string) func() hash.Hash {
	switch method {
	case "sha1":
		return sha1.New
	case "sha256":
		return sha256.New
	case "sha384":
		return sha512.New384
	case "sha512":
		return sha512.New
	}
	return nil
}

// VerifySignature checks header (the X-Hub-Signature value, "method=hex")
// against the HMAC of body under secret. Methods are the four WebSub names
// (sha1, sha256, sha384, sha512; case-insensitive); the hex digest may be in
// either case. The comparison is constant-time (hmac.Equal). nil means the
// body is authentic.
func VerifySignature(secret []byte, header string, body []byte) error {
	if len(secret) == 0 {
		return ErrNoSecret
	}
	header = strings.TrimSpace(header)
	if header == "" {
		return ErrNoSignature
	}
	method, sig, ok := strings.Cut(header, "=")
	if !ok {
		return fmt.Errorf("%w: want method=hex, got %q", ErrMalformedSignature, truncate(header, 80))
	}
	method = strings.ToLower(strings.TrimSpace(method))
	newHash := signatureHash(method)
	if newHash == nil {
		return fmt.Errorf("%w: %q", ErrUnknownMethod, truncate(method, 40))
	}
	got, err := hex.DecodeString(strings.TrimSpace(sig))
	if err != nil {
		return fmt.Errorf("%w: %v", ErrMalformedSignature, err)
	}
	m := hmac.New(newHash, secret)
	m.Write(body)
	want := m.Sum(nil)
	if len(got) != len(want) {
		return fmt.Errorf("%w: %d bytes for %s, want %d", ErrMalformedSignature, len(got), method, len(want))
	}
	if !hmac.Equal(got, want) {
		return ErrSignatureMismatch
	}
	return nil
}

// Sign returns the X-Hub-Signature value a hub would send for body under
// secret with method (sha1, sha256, sha384 or sha512), or ErrUnknownMethod.
// It exists for tests of handlers and for a local test hub.
func Sign(secret []byte, method string, body []byte) (string, error) {
	method = strings.ToLower(method)
	newHash := signatureHash(method)
	if newHash == nil {
		return "", fmt.Errorf("%w: %q", ErrUnknownMethod, method)
	}
	m := hmac.New(newHash, secret)
	m.Write(body)
	return method + "=" + hex.EncodeToString(m.Sum(nil)), nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
