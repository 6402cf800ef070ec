// Package poller fetches feeds politely and decides when each one is fetched
// next: the HTTP fetch, the interval algorithm, error penalties, per-host
// politeness, the WebSub subscriber and pings. It does not parse items
// (package newitems) or send mail (package mailer).
//
// # The scheduling core
//
// Schedule is a pure function of a feed's History, the Result of the poll
// that just ended, the current time and a random number for jitter. It
// returns a Decision: the next poll time, the interval, a human-readable
// reason for the public status page, the feed's state and its new error
// streak. Freshness and ParseRetryAfter read the caching headers it uses, and
// HostLimiter enforces the per-host limits next to it.
//
// After a success (200 with a new or the same body, 304):
//
//   - an active WebSub subscription → a backup poll weekly;
//   - Cache-Control max-age (minus Age), else Expires − Date → that interval,
//     capped at 24 h;
//   - otherwise 5 min when the feed answered in under 1 s (exactly 1 s is
//     slow) and has an ETag or Last-Modified, 15 min when only one of those
//     holds, 1 h when neither;
//   - never below the floor: 5 min for a fast feed with a validator,
//     15 min otherwise.
//
// After an error: 404 → 24 h; 403 and 5xx → 4 h; 429, and 503 with a
// Retry-After, → what Retry-After says (4 h for a 429 without one) and the
// whole host backs off; other statuses and transport or parse failures →
// 1 h, 2 h, 4 h, 8 h, 16 h, 24 h, 24 h … with the streak; 410 → "gone";
// any error once the streak is 90 days old → "blacklisted". The next success
// ends the streak (so a 403 penalty is lifted by it).
//
// For every outcome: a feed quiet for over a month (365.25/12 days) waits at
// least 12 h per year of quiet, continuously; the operator's per-host
// minimum applies; and the next poll gets a random extra of up to 10 % of
// the interval, never less than the interval.
//
// # Choices where DESIGN.md is silent
//
//   - max-age=0, or an Age as old as max-age, means "fresh for 0" and the
//     floor decides. no-cache, no-store, must-revalidate and Pragma are
//     ignored: they govern storing and reusing responses, not how often to
//     ask, and many servers send them on everything. An unparsable max-age is
//     ignored (Expires may then apply); of several max-age directives the
//     first decides. Age is subtracted from Expires − Date as well as from
//     max-age (RFC 9111 §4.2.3). An Expires that is invalid, not after Date,
//     or comes with nothing else gives no freshness and the default applies.
//   - Header parsing is lenient: names in any case, quoted values, ';' as a
//     separator, repeated Cache-Control lines, dates in any case, with extra
//     spaces, or with a numeric zone.
//   - The 24 h cap on the inactivity floor is reached at two years of quiet
//     and held beyond, so that every feed is still looked at daily.
//   - Elapsed exactly 0 counts as fast (a fake clock in tests); a negative
//     Elapsed means unmeasured and counts as slow.
//   - Errors never earn the 5 min floor: a Retry-After shorter than 15 min
//     is raised to 15 min. Retry-After is capped at 7 days; as an HTTP date it
//     is measured against the response's Date header when valid (immune to
//     clock skew), else against now. A Retry-After on any other error status
//     is honoured when it asks for more than the penalty.
//   - A 429 backs the host off for Retry-After (4 h without one, at least
//     1 min); a 503 does so only with a valid Retry-After, which usually
//     means the whole site is in maintenance. A 503 without it is a plain 5xx.
//   - With WebSub active, an error also waits at least the weekly backup
//     interval: the hub still delivers, so hammering the backup is useless.
//   - 410 wins over blacklisting. Exactly 90 days (90 × 24 h) since the
//     streak began blacklists.
//   - A gone or blacklisted Decision still carries a NextPoll (24 h for 410,
//     the penalty otherwise) so that a caller that forgets to check State
//     does not poll in a loop; State is authoritative.
//   - The operator's per-host minimum is capped at 365.25 days; negative is
//     ignored.
//   - A jitter outside [0, 1) (or NaN) is clamped into it.
//   - The zero OutcomeKind is invalid and scheduled like a Failure.
//   - Reasons: a success names the deciding rule only ("inactive for
//     6 months: at least 6 h"); an error names the error first and appends
//     each floor that lengthened it after "; ". Durations are words ("24 h",
//     "15 min", "90 s"); a Retry-After given in seconds is shown in seconds.
//     Failure descriptions are put on one line and cut at 120 characters.
//   - HostLimiter: waiters are served in arrival order, host names are
//     case-insensitive and ignore a trailing dot, Acquire fails at once on an
//     ended context and does not wait out back-offs (the caller checks
//     BackedOff and reschedules), and a back-off is only ever lengthened.
//   - HostLimiter is per process; on Postgres a claim takes each feed through
//     a lease on its host (store.ClaimDueFeeds), so one process at a time polls a host
//     and the limit of 2 in flight is what a publisher sees however many
//     processes run. A host another process holds is passed over, not
//     waited for: its feeds stay due and are polled by the holder, or by
//     anyone once the holder's pass ends or its lease runs out.
package poller
