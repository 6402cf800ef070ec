// Package ratelimit owns the rate limits whose counters live in the
// database, so that every feedmail process sees the same counts and a
// restart forgets none: the rule of one limit (Decide, a token bucket
// written as one number, GCRA) and the Limiter that applies it to keys
// through the store. Callers name the keys and their limits (which
// client, mailbox, domain or account); this package must not know what a
// key stands for, read requests or send anything.
package ratelimit

import (
	"context"
	"fmt"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
)

// Limit is a token bucket: Burst at once, then one more every Every.
// Every of zero (or less) means no limit.
type Limit struct {
	Every time.Duration
	Burst int
}

// Off reports whether l limits nothing.
func (l Limit) Off() bool { return l.Every <= 0 }

// Decide applies l to one request at now, for a key whose stored number
// is tat (Unix milliseconds; had false: the key has none, a full bucket).
// The number is when the bucket would be full again; a request moves it
// one Every later, and is allowed while that stays within Burst Everys
// of now. It returns the number to store when allowed, and otherwise how
// long until a request would be.
func Decide(tat int64, had bool, now time.Time, l Limit) (next int64, ok bool, wait time.Duration) {
	nowMs := now.UnixMilli()
	every := max(l.Every.Milliseconds(), 1)
	base := nowMs
	if had && tat > nowMs {
		base = tat
	}
	next = base + every
	limit := nowMs + int64(max(l.Burst, 1))*every
	if next <= limit {
		return next, true, 0
	}
	return 0, false, time.Duration(next-limit) * time.Millisecond
}

// Counters is where the numbers live (package store).
type Counters interface {
	RateLimitTAT(ctx context.Context, key string) (int64, bool, error)
	SwapRateLimitTAT(ctx context.Context, key string, old int64, had bool, next int64) (bool, error)
}

// Key is one counter and its limit. Name says what is counted and for
// whom ("signup-mailbox:alice@example.com"); keys of a limit off are
// skipped.
type Key struct {
	Name  string
	Limit Limit
}

// Result says whether a request is allowed; when not, which key refused
// it and how long until it would be allowed.
type Result struct {
	OK   bool
	Key  string
	Wait time.Duration
}

// Limiter applies limits to keys in the database.
type Limiter struct {
	Counters Counters
	Clock    clock.Clock
}

// swapTries bounds the compare-and-swap retries of one take: more means
// many requests on one key at once, and the request is refused.
const swapTries = 8

// Check reports whether one request would be allowed by every key,
// taking nothing (for a limit counted only when a request ends up doing
// what it limits: Take it then).
func (lm *Limiter) Check(ctx context.Context, keys ...Key) (Result, error) {
	now := lm.Clock.Now()
	for _, k := range keys {
		if k.Limit.Off() {
			continue
		}
		tat, had, err := lm.Counters.RateLimitTAT(ctx, k.Name)
		if err != nil {
			return Result{}, err
		}
		if _, ok, wait := Decide(tat, had, now, k.Limit); !ok {
			return Result{Key: k.Name, Wait: wait}, nil
		}
	}
	return Result{OK: true}, nil
}

// Take checks every key first and, when all allow the request, takes one
// token from each: a request refused by one key costs the others nothing.
// (Two requests racing between the check and the take can still spend a
// token of a key the other then finds empty: the slack is one request.)
func (lm *Limiter) Take(ctx context.Context, keys ...Key) (Result, error) {
	if r, err := lm.Check(ctx, keys...); err != nil || !r.OK {
		return r, err
	}
	for _, k := range keys {
		if k.Limit.Off() {
			continue
		}
		r, err := lm.take(ctx, k)
		if err != nil || !r.OK {
			return r, err
		}
	}
	return Result{OK: true}, nil
}

// take takes one token from k, deciding again when another request
// changed it in between.
func (lm *Limiter) take(ctx context.Context, k Key) (Result, error) {
	for range swapTries {
		tat, had, err := lm.Counters.RateLimitTAT(ctx, k.Name)
		if err != nil {
			return Result{}, err
		}
		next, ok, wait := Decide(tat, had, lm.Clock.Now(), k.Limit)
		if !ok {
			return Result{Key: k.Name, Wait: wait}, nil
		}
		swapped, err := lm.Counters.SwapRateLimitTAT(ctx, k.Name, tat, had, next)
		if err != nil {
			return Result{}, fmt.Errorf("take %s: %w", k.Name, err)
		}
		if swapped {
			return Result{OK: true}, nil
		}
	}
	return Result{Key: k.Name, Wait: k.Limit.Every}, nil
}
