package api

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/feedmail/feedmail/internal/store"
)

// The operator's token is operatorPrefix + 32 random bytes in unpadded
// base64url. It is kept nowhere by feedmail: the operator sets its SHA-256
// (hex) as FEEDMAIL_OPERATOR_TOKEN_SHA256, so each process knows it from
// its configuration, a copy of the database holds nothing that works, and
// rotating it is a configuration change, not a row.
const operatorPrefix = "fmop_"

// NewOperatorToken returns a new operator token, seen this once, and the
// SHA-256 (hex) to configure for it.
func NewOperatorToken() (plain, sum string, err error) {
	secret := make([]byte, secretBytes)
	if _, err := rand.Read(secret); err != nil {
		return "", "", fmt.Errorf("operator token: %w", err)
	}
	plain = operatorPrefix + base64.RawURLEncoding.EncodeToString(secret)
	return plain, OperatorTokenSHA256(plain), nil
}

// OperatorTokenSHA256 returns the hex SHA-256 of plain, what
// FEEDMAIL_OPERATOR_TOKEN_SHA256 holds.
func OperatorTokenSHA256(plain string) string {
	h := sha256.Sum256([]byte(plain))
	return hex.EncodeToString(h[:])
}

// operatorOnly wraps rt's handler: only the operator token passes. No
// token, or one that is neither the operator's nor a person's, is 401; a
// person's working token is 403 (it authenticates, but a person acts for
// themselves only). With no operator token configured every request is
// refused the same way. The token is compared in constant time.
func (s *Server) operatorOnly(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		plain, ok := bearer(r)
		if !ok {
			unauthorized(w, "", "send the operator token as \"Authorization: Bearer TOKEN\"")
			return
		}
		want, _ := hex.DecodeString(s.OperatorTokenSHA256)
		got := sha256.Sum256([]byte(plain))
		if len(want) != sha256.Size || subtle.ConstantTimeCompare(want, got[:]) != 1 {
			s.notOperator(w, r, plain)
			return
		}
		if !queryKnown(w, r, rt) {
			return
		}
		rt.op(w, r)
	})
}

// notOperator answers a token that is not the operator's: 403 when it is
// a person's working token, 401 otherwise.
func (s *Server) notOperator(w http.ResponseWriter, r *http.Request, plain string) {
	_, err := checkToken(r.Context(), s.Store, plain)
	switch {
	case err == nil:
		writeProblem(w, problem{Status: http.StatusForbidden,
			Detail: "this route is the operator's: a person's API token cannot use it"})
	case errors.Is(err, errBadToken), errors.Is(err, store.ErrNotFound):
		unauthorized(w, "invalid_token", "the token is not the operator's (FEEDMAIL_OPERATOR_TOKEN_SHA256)")
	default:
		s.fail(w, r, "", err)
	}
}

// queryKnown answers a 400 problem and returns false when r has a query
// parameter rt does not take (so a typo is not silently ignored).
func queryKnown(w http.ResponseWriter, r *http.Request, rt route) bool {
	for name := range r.URL.Query() {
		if !slices.Contains(rt.query, name) {
			writeProblem(w, invalid(name, "this route takes no query parameter "+strconv.Quote(name)))
			return false
		}
	}
	return true
}
