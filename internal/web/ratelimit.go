package web

import (
	"context"
	"math"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/feedmail/feedmail/internal/mailaddr"
	"github.com/feedmail/feedmail/internal/proof"
	"github.com/feedmail/feedmail/internal/ratelimit"
	"github.com/feedmail/feedmail/internal/subscribe"
)

// Limit is a token bucket: Burst requests at once, then one more every Every.
// Every of zero means no limit.
type Limit = ratelimit.Limit

// Limits are the rate limits on the forms that make feedmail send email or
// fetch feeds it does not know. Their counters live in the database
// (package ratelimit), shared by every process and kept across restarts;
// only the ping endpoints keep theirs in memory (PingOptions).
type Limits struct {
	SignupPerIP Limit // POST /subscriptions, per client IP
	// SignupPerMailbox and SignupPerDomain count confirmation emails (only
	// attempts that send one): per canonical mailbox (mailaddr.Mailbox:
	// +tags, Gmail's dots and googlemail.com are one mailbox) and per
	// destination domain.
	SignupPerMailbox Limit
	SignupPerDomain  Limit
	SignInPerIP      Limit // POST /signin, per client IP
	SignInPerAddress Limit // POST /signin, per email address
	// FetchPerAccount and FetchPerIP are the budget of feeds feedmail does
	// not know that may be fetched to check them, shared by the signup
	// form, the account's OPML upload and the API (the operator's
	// commands are not limited).
	FetchPerAccount Limit
	FetchPerIP      Limit
	// Proof is the signup form's proof of work (Bits 0: off).
	Proof proof.Options
}

// DefaultLimits are generous for people and tight for scripts: a mailbox
// gets at most 5 confirmation emails at once and then one every 10
// minutes, a domain 200 and then 4 a minute; 3 sign-in links at once,
// then one every 15 minutes; an account and a client may have 300 new
// feeds checked in an hour (one OPML list of the web's largest size).
func DefaultLimits() Limits {
	return Limits{
		SignupPerIP:      Limit{Every: 30 * time.Second, Burst: 20},
		SignupPerMailbox: Limit{Every: 10 * time.Minute, Burst: 5},
		SignupPerDomain:  Limit{Every: 15 * time.Second, Burst: 200},
		SignInPerIP:      Limit{Every: time.Minute, Burst: 10},
		SignInPerAddress: Limit{Every: 15 * time.Minute, Burst: 3},
		FetchPerAccount:  Limit{Every: 12 * time.Second, Burst: 300},
		FetchPerIP:       Limit{Every: 12 * time.Second, Burst: 300},
		Proof:            proof.Default(),
	}
}

// NoLimits turns rate limiting and the proof of work off (tests, benchmarks).
func NoLimits() Limits { return Limits{} }

// Rate-limit keys: what is counted, then for whom.
func key(kind, who string, l Limit) ratelimit.Key {
	return ratelimit.Key{Name: kind + ":" + who, Limit: l}
}

// mailKeys are the keys a confirmation email to addr counts against.
func (s *Server) mailKeys(addr string) []ratelimit.Key {
	return []ratelimit.Key{key("signup-mailbox", mailaddr.Mailbox(addr), s.lim.SignupPerMailbox),
		key("signup-domain", mailaddr.Domain(addr), s.lim.SignupPerDomain)}
}

// limited takes one request from keys; when refused (or the database
// failed) it answers the request itself and returns true.
func (s *Server) limited(w http.ResponseWriter, r *http.Request, keys ...ratelimit.Key) bool {
	res, err := s.limiter.Take(r.Context(), keys...)
	switch {
	case err != nil:
		s.serverError(w, r, err)
		return true
	case !res.OK:
		s.Log.Info("rate limited", "key", res.Key, "wait", res.Wait)
		s.tooMany(w, r, res.Wait)
		return true
	}
	return false
}

// fetchBudget is the budget of new feeds the request may have fetched:
// the client's, and account's too when accountID is not 0.
func (s *Server) fetchBudget(r *http.Request, accountID int64) subscribe.Budget {
	keys := []ratelimit.Key{key("fetch-ip", clientIP(r), s.lim.FetchPerIP)}
	if accountID != 0 {
		keys = append(keys, key("fetch-account", strconv.FormatInt(accountID, 10), s.lim.FetchPerAccount))
	}
	return budget{lm: s.limiter, keys: keys}
}

// budget is a subscribe.Budget over keys.
type budget struct {
	lm   *ratelimit.Limiter
	keys []ratelimit.Key
}

func (b budget) Take(ctx context.Context) (ratelimit.Result, error) { return b.lm.Take(ctx, b.keys...) }

// clientIP is the TCP peer's address (see the package comment on proxies).
// IPv6 clients are bucketed by their /64, which one subscriber usually has.
func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return host
	}
	if ip.To4() == nil {
		return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
	}
	return ip.String()
}

// tooMany answers 429 with a friendly page and Retry-After.
func (s *Server) tooMany(w http.ResponseWriter, r *http.Request, wait time.Duration) {
	secs := int(math.Ceil(wait.Seconds()))
	if secs < 1 {
		secs = 1
	}
	w.Header().Set("Retry-After", itoa(secs))
	s.render(w, r, http.StatusTooManyRequests, "ratelimited", "Slow down a little", struct{ Wait string }{durWords(time.Duration(secs) * time.Second)})
}
