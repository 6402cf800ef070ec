package api

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/feedmail/feedmail/internal/store"
)

// A token is "fm_" + key + "_" + secret: key is 8 random bytes in hex
// (public, it finds the row), secret 32 random bytes in unpadded base64url.
// The store keeps the key and the SHA-256 of the whole token: 256 random
// bits need no slow hash, and a stolen table gives no token.
const (
	tokenPrefix = "fm_"
	keyBytes    = 8
	secretBytes = 32
	// MaxTokenName is the longest token name accepted, in characters.
	MaxTokenName = 60
)

// errBadToken: the text is not a token of ours, or no longer works.
var errBadToken = errors.New("not a valid API token")

// ErrBadTokenName: a token name that is too long or has control characters.
var ErrBadTokenName = errors.New("invalid token name")

// IssueToken makes a new token for userID named name (trimmed; may be
// empty) and returns it, the only time it is ever seen, with its stored
// row.
func IssueToken(ctx context.Context, st *store.Store, userID int64, name string) (string, *store.APIToken, error) {
	name = strings.Join(strings.Fields(name), " ")
	if utf8.RuneCountInString(name) > MaxTokenName || strings.ContainsFunc(name, unicode.IsControl) {
		return "", nil, fmt.Errorf("%w: at most %d characters, no control characters", ErrBadTokenName, MaxTokenName)
	}
	key := make([]byte, keyBytes)
	secret := make([]byte, secretBytes)
	if _, err := rand.Read(key); err != nil {
		return "", nil, fmt.Errorf("token key: %w", err)
	}
	if _, err := rand.Read(secret); err != nil {
		return "", nil, fmt.Errorf("token secret: %w", err)
	}
	k := hex.EncodeToString(key)
	plain := tokenPrefix + k + "_" + base64.RawURLEncoding.EncodeToString(secret)
	t, err := st.CreateAPIToken(ctx, userID, name, k, tokenHash(plain))
	if err != nil {
		return "", nil, err
	}
	return plain, t, nil
}

// tokenHash is what the store keeps of a token.
func tokenHash(plain string) []byte {
	h := sha256.Sum256([]byte(plain))
	return h[:]
}

// tokenKey returns the key part of plain, or errBadToken when plain does
// not have the token's shape.
func tokenKey(plain string) (string, error) {
	rest, ok := strings.CutPrefix(plain, tokenPrefix)
	if !ok {
		return "", errBadToken
	}
	k, secret, ok := strings.Cut(rest, "_")
	if !ok || len(k) != 2*keyBytes || base64.RawURLEncoding.EncodedLen(secretBytes) != len(secret) {
		return "", errBadToken
	}
	if _, err := hex.DecodeString(k); err != nil {
		return "", errBadToken
	}
	return k, nil
}

// checkToken returns the stored token plain is, when it works: found by
// its key, not revoked, and its hash equal to the stored one (compared in
// constant time). Anything else is errBadToken.
func checkToken(ctx context.Context, st *store.Store, plain string) (*store.APIToken, error) {
	k, err := tokenKey(plain)
	if err != nil {
		return nil, err
	}
	t, err := st.APITokenByKey(ctx, k)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errBadToken
	}
	if err != nil {
		return nil, err
	}
	if subtle.ConstantTimeCompare(t.TokenHash, tokenHash(plain)) != 1 || t.RevokedAt != nil {
		return nil, errBadToken
	}
	return t, nil
}
