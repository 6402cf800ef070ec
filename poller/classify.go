package poller

import (
	"net/http"
	"strconv"
	"time"

	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/newitems"
	"github.com/feedmail/feedmail/internal/store"
)

// Answer is what one fetch of a feed produced, as Classify reads it.
type Answer struct {
	// Resp is what the fetch learned; never nil (a failed fetch still
	// reports its status, validators sent and time taken).
	Resp *fetcher.Response
	// Err is the fetch failure; nil when an HTTP answer came.
	Err error
	// Parsed is the body parsed as a feed, ParseErr why it did not parse;
	// both are nil when the body was not parsed (see needsParse).
	Parsed   *newitems.Feed
	ParseErr error
	// Delivered counts the new items of Parsed that are to be delivered.
	Delivered int
}

// Classification is what Classify concluded from one fetch: the outcome,
// the feed columns to write and when the feed is polled next.
type Classification struct {
	Result    Result   // Schedule's input
	Decision  Decision // Schedule's output, already applied to State
	LastError string   // the error line of poll_log and the Report; "" after a success
	// Warning is what was wrong with a document that still parsed (see
	// newitems.Feed.Warning), as one line; "" otherwise. It is kept in the
	// feed's last_error (a success leaves that empty otherwise), so the
	// status page shows it, and carried over by the 304s and unchanged
	// bodies that follow, which repeat the same document.
	Warning string
	// Partial: the document was cut short and only its complete items were
	// read; the poll is a success all the same.
	Partial bool
	State   store.FeedState // the feed's columns after this poll
	// MovedTo is the URL a successful poll was permanently redirected to
	// (301/308 on every hop); whether the feed moves there or is merged
	// into a feed that has it is the caller's to find out.
	MovedTo string
	// NewlyGone and NewlyBlacklisted: this poll ends the feed, and its
	// subscribers are to be told.
	NewlyGone, NewlyBlacklisted bool
	// Fold: the poll repeats the feed's newest poll_log line (see
	// repeatsLastLine).
	Fold bool
}

// Classify turns one fetch of feed f (its row before the poll) into what
// to store: the outcome kind (304, 200 with the same body, 200 that parsed
// or not, any other status, a transport failure), the validators and
// caching facts kept, the schedule (penalty, host back-off, next poll and
// its reason), and whether the feed moves or ends. hostMin is the
// operator's minimum interval for the feed's host, jitter a number in
// [0, 1). It reads no clock and no store: the caller parses the body when
// needsParse says so and counts the new items first.
func Classify(f *store.Feed, hostMin time.Duration, a Answer, now time.Time, jitter float64) Classification {
	resp := a.Resp
	c := Classification{Result: Result{Status: resp.Status, Header: resp.Header, Elapsed: resp.Elapsed}}
	c.Result.Kind, c.Result.Failure, c.LastError = answerKind(f, a)
	c.Warning, c.Partial = parseWarning(f, a, c.Result.Kind)
	c.State = feedStateAfter(f, a, c.Result.Kind, firstNonEmpty(c.LastError, c.Warning), now)
	c.Result.HasETag, c.Result.HasLastModified = c.State.ETag != "", c.State.LastModified != ""
	c.Result.NewItems = a.Parsed != nil && a.Delivered > 0
	c.Decision = Schedule(history(f, hostMin, now), c.Result, now, jitter)
	applyDecision(&c.State, c.Decision)
	if c.Result.Kind.success() && resp.PermanentURL != "" && resp.PermanentURL != f.URL {
		c.MovedTo = resp.PermanentURL
	}
	c.NewlyGone = c.State.State == StateGone && f.State != store.FeedGone
	c.NewlyBlacklisted = c.State.State == StateBlacklisted && f.State != store.FeedBlacklisted
	c.Fold = repeatsLastLine(f, c.Result.Kind, c.LastError, resp, &c.State, now)
	return c
}

// needsParse reports whether the body of a fetch is to be parsed: a 2xx
// whose body differs from the one last stored (a feed never primed is
// always parsed).
func needsParse(f *store.Feed, resp *fetcher.Response, ferr error) bool {
	return ferr == nil && resp.Status >= 200 && resp.Status <= 299 && !sameBody(f, resp)
}

// sameBody reports whether a 2xx answer repeats the body of the feed's last
// successful parse.
func sameBody(f *store.Feed, resp *fetcher.Response) bool {
	return f.PrimedAt != nil && f.BodyHash != "" && resp.BodyHash == f.BodyHash
}

// answerKind classifies an answer, with the short failure text Schedule
// puts in the reason and the error line kept in poll_log.
func answerKind(f *store.Feed, a Answer) (kind OutcomeKind, failure, lastError string) {
	resp := a.Resp
	switch {
	case fetcher.KindOf(a.Err) == fetcher.KindPrivateAddress:
		return Refused, fetcher.Describe(a.Err).Reason, pollOneLine(a.Err.Error())
	case a.Err != nil:
		return Failure, fetcher.Describe(a.Err).Reason, pollOneLine(a.Err.Error())
	case resp.Status == http.StatusNotModified:
		return NotModified, "", ""
	case resp.Status >= 200 && resp.Status <= 299:
		if sameBody(f, resp) {
			return Unchanged, "", ""
		}
		if a.ParseErr != nil {
			return Failure, parseFailureText(a.ParseErr), pollOneLine(a.ParseErr.Error())
		}
		return OK, "", ""
	}
	return HTTPError, "", strconv.Itoa(resp.Status) + " " + http.StatusText(resp.Status)
}

// parseWarning is the warning a poll of kind leaves on feed f: that of the
// document parsed now, or after a 304 or an unchanged body (the same
// document) the one the last successful poll left, if it left one. partial
// reports a document cut short (newitems.WarnTruncated) parsed now.
func parseWarning(f *store.Feed, a Answer, kind OutcomeKind) (warning string, partial bool) {
	switch kind {
	case OK:
		if a.Parsed != nil && a.Parsed.Warning != nil {
			w := a.Parsed.Warning
			return pollOneLine(w.Text), w.Kind == newitems.WarnTruncated
		}
	case Unchanged, NotModified:
		if f.ConsecutiveErrors == 0 {
			return f.LastError, false
		}
	}
	return "", false
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// feedStateAfter is the feed's columns after a poll of kind, before the
// schedule is applied. Validators are kept per final URL: taken from every
// 200 that is a feed and from every 304 that carries new ones, so an HTML
// error page answered with 200 is fetched in full until a feed comes back.
// A first successful parse sets last_new_item_at to the newest item date
// (not later than now), so a feed quiet for years is polled like one.
func feedStateAfter(f *store.Feed, a Answer, kind OutcomeKind, lastError string, now time.Time) store.FeedState {
	resp := a.Resp
	at := &now // one time for every column this poll stamps
	st := store.FeedState{
		ValidatorURL: f.ValidatorURL, ETag: f.ETag, LastModified: f.LastModified, BodyHash: f.BodyHash,
		LastPolledAt: at, LastStatus: resp.Status, LastError: lastError,
		LastElapsedMS: int(resp.Elapsed.Milliseconds()), LastSuccessAt: f.LastSuccessAt, PrimedAt: f.PrimedAt,
		LastNewItemAt: f.LastNewItemAt, NewestItemDate: f.NewestItemDate,
	}
	switch kind {
	case OK, Unchanged:
		st.ValidatorURL, st.ETag, st.LastModified, st.BodyHash = resp.FinalURL, resp.ETag, resp.LastModified, resp.BodyHash
	case NotModified:
		if resp.ETag != "" || resp.LastModified != "" {
			st.ValidatorURL = resp.FinalURL
		}
		if resp.ETag != "" {
			st.ETag = resp.ETag
		}
		if resp.LastModified != "" {
			st.LastModified = resp.LastModified
		}
	}
	if kind.success() {
		st.LastSuccessAt = at
	}
	if a.Parsed == nil {
		return st
	}
	st.Title, st.SiteURL = a.Parsed.Title, a.Parsed.SiteURL
	newest := newestItemDate(a.Parsed.Items, now)
	if f.PrimedAt == nil {
		st.PrimedAt = at
		if f.LastNewItemAt == nil && newest != nil && !newest.After(now) {
			st.LastNewItemAt = newest
		}
	} else if a.Delivered > 0 {
		st.LastNewItemAt = at
	}
	if newest != nil && (st.NewestItemDate == nil || newest.After(*st.NewestItemDate)) {
		st.NewestItemDate = newest
	}
	return st
}

// history is what Schedule needs to know of f before this poll.
func history(f *store.Feed, hostMin time.Duration, now time.Time) History {
	h := History{
		ConsecutiveErrors: f.ConsecutiveErrors, FirstSeenAt: f.CreatedAt,
		WebSubActive: store.WebSubActive(f, now), HostMinInterval: hostMin, FirstPoll: f.LastPolledAt == nil,
	}
	if f.ErrorsSince != nil {
		h.ErrorsSince = *f.ErrorsSince
	}
	if f.LastNewItemAt != nil {
		h.LastNewItemAt = *f.LastNewItemAt
	}
	return h
}

// applyDecision writes Schedule's decision into st.
func applyDecision(st *store.FeedState, dec Decision) {
	st.State, st.NextPollAt, st.PollReason = dec.State, dec.NextPoll, dec.Reason
	st.ConsecutiveErrors = dec.ConsecutiveErrors
	if !dec.ErrorsSince.IsZero() {
		es := dec.ErrorsSince
		st.ErrorsSince = &es
	}
}

// LogRunMax is the longest a run of identical polls goes without a new
// poll_log line: with the poll log kept 7 days (package retention) every
// feed polled in the last day keeps a line to show.
const LogRunMax = 24 * time.Hour

// repeatsLastLine reports whether this poll repeats the feed's newest
// poll_log line, so that it is counted (store.PollRecord.Fold) instead of
// logged: a 304 after a 304, neither with an error, without redirects
// (so the URL stays) or a change of state, while that line is a poll's and
// less than LogRunMax old. Such a poll also changes no column but those
// store.PollRecord.Fold allows: a 304 leaves the body, its hash, the items'
// dates and the title alone, and with no error before or now the error
// streak is empty on both sides (checked too, as Fold promises it).
func repeatsLastLine(f *store.Feed, kind OutcomeKind, lastError string, resp *fetcher.Response, st *store.FeedState, now time.Time) bool {
	return kind == NotModified && lastError == "" && f.LastStatus == http.StatusNotModified && f.LastError == "" &&
		len(resp.Redirects) == 0 && st.State == f.State && st.URL == "" &&
		f.ConsecutiveErrors == 0 && f.ErrorsSince == nil && st.ConsecutiveErrors == 0 && st.ErrorsSince == nil &&
		f.LoggedAt != nil && now.Sub(*f.LoggedAt) < LogRunMax
}
