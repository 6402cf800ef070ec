package api

import (
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/feedmail/feedmail/internal/store"
)

// authenticated wraps h: the request must carry a working token
// ("Authorization: Bearer TOKEN"; nothing else, cookies included, is
// read) of an account that still exists, within the token's rate limit.
// h gets the account. The token's last use is recorded at most once per
// lastUseEvery.
func (s *Server) authenticated(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		plain, ok := bearer(r)
		if !ok {
			unauthorized(w, "", "send your API token as \"Authorization: Bearer TOKEN\"")
			return
		}
		t, err := checkToken(r.Context(), s.Store, plain)
		if errors.Is(err, errBadToken) {
			unauthorized(w, "invalid_token", "the token is unknown or was revoked")
			return
		}
		if err != nil {
			s.fail(w, r, "", err)
			return
		}
		now := s.Clock.Now()
		if ok, wait := s.buckets.take(t.ID, now); !ok {
			secs := max(1, int(math.Ceil(wait.Seconds())))
			w.Header().Set("Retry-After", strconv.Itoa(secs))
			writeProblem(w, problem{Status: http.StatusTooManyRequests, RetryAfter: secs,
				Detail: "this token made too many requests; retry after " + strconv.Itoa(secs) + " s"})
			return
		}
		u, err := s.Store.UserByID(r.Context(), t.UserID)
		if errors.Is(err, store.ErrNotFound) {
			unauthorized(w, "invalid_token", "the token's account no longer exists")
			return
		}
		if err != nil {
			s.fail(w, r, "", err)
			return
		}
		if t.LastUsedAt == nil || now.Sub(*t.LastUsedAt) >= lastUseEvery {
			if _, err := s.Store.TouchAPIToken(r.Context(), t.ID, now, lastUseEvery); err != nil {
				s.Log.Warn("api: could not record a token's use", "token", t.ID, "err", err)
			}
		}
		if !queryKnown(w, r, rt) {
			return
		}
		rt.h(w, r, u)
	})
}

// bearer returns the token of r's Authorization header (RFC 6750 §2.1).
func bearer(r *http.Request) (string, bool) {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

// unauthorized answers 401 with the RFC 6750 challenge.
func unauthorized(w http.ResponseWriter, code, detail string) {
	c := `Bearer realm="feedmail"`
	if code != "" {
		c += `, error="` + code + `"`
	}
	w.Header().Set("WWW-Authenticate", c)
	writeProblem(w, problem{Status: http.StatusUnauthorized, Detail: detail})
}
