package poller

import (
	"errors"
	"strings"

	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/newitems"
	"github.com/feedmail/feedmail/internal/store"
)

// Report says what one poll did, for `feedmail poll`, logs and hooks. It is
// JSON-encoded as is.
type Report struct {
	FeedID  int64  `json:"feed_id"`
	Trigger string `json:"trigger,omitempty"` // why it was polled: "due", "manual", "ping", "websub", …
	URL     string `json:"url"`
	// FinalURL is the URL of the last hop when redirects were followed.
	FinalURL  string     `json:"final_url,omitempty"`
	Redirects []Redirect `json:"redirects,omitempty"`
	// MovedTo is the feed's new URL after a permanent redirect to a feed.
	MovedTo string `json:"moved_to,omitempty"`
	// MergedInto is the feed this one was merged into (its URL moved to a
	// feed that already existed).
	MergedInto  int64      `json:"merged_into,omitempty"`
	Status      int        `json:"status"`
	Outcome     string     `json:"outcome"`
	Conditional bool       `json:"conditional"`
	Sent        Validators `json:"validators_sent"`
	Received    Validators `json:"validators_received"`
	Bytes       int64      `json:"bytes"`
	ElapsedMS   int64      `json:"elapsed_ms"`
	Title       string     `json:"title,omitempty"`
	// NewItems are the items seen for the first time and delivered.
	NewItems []ReportItem `json:"new_items"`
	// Ignored are the items seen for the first time and not delivered, with
	// the rule that ignored them.
	Ignored     []ReportItem `json:"ignored_items"`
	Emails      int64        `json:"emails_queued"`
	DigestItems int64        `json:"digest_items_queued"`
	// Edited counts the known items that came back changed and were
	// updated (edited posts).
	Edited     int64  `json:"edited_items,omitempty"`
	Notices    int    `json:"notices_queued,omitempty"`
	NextPollAt string `json:"next_poll_at,omitempty"` // RFC 3339
	Reason     string `json:"reason"`
	State      string `json:"state"`
	// HubURL and SelfURL are the WebSub links the document declares.
	HubURL  string `json:"hub,omitempty"`
	SelfURL string `json:"self,omitempty"`
	// Error is what went wrong: the fetch or parse failure, a host back-off
	// that kept the poll from happening, a lost lease.
	Error string `json:"error,omitempty"`
	// Warning is what was wrong with a document that still parsed: cut
	// short (Outcome "partial": only its complete items were read), or
	// holding item markup the parser found no item in.
	Warning string `json:"warning,omitempty"`
	// Polled is false when no request was made (host backed off, shutdown).
	Polled bool `json:"polled"`
}

// Validators are an ETag and a Last-Modified value, as sent or received.
type Validators struct {
	ETag         string `json:"etag"`
	LastModified string `json:"last_modified"`
}

// Redirect is one redirect followed.
type Redirect struct {
	Status int    `json:"status"`
	From   string `json:"from"`
	To     string `json:"to"`
}

// ReportItem is an item in a Report.
type ReportItem struct {
	Title string `json:"title"`
	Link  string `json:"link,omitempty"`
	Rule  string `json:"rule,omitempty"`
}

// outcomeName is the poll_log and metrics name of a kind.
func outcomeName(k OutcomeKind) string {
	switch k {
	case OK:
		return "ok"
	case Unchanged:
		return "unchanged"
	case NotModified:
		return "not_modified"
	case HTTPError:
		return "http_error"
	case Refused:
		return "refused"
	}
	return "failure"
}

// outcomePartial is the outcome name of a 200 whose document was cut short
// and whose complete items were read: a success.
const outcomePartial = "partial"

// warningLogLine is the poll_log reason of a poll that parsed with a
// warning: the warning first (as an error's line starts with the error),
// then the schedule's reason.
func warningLogLine(warning string, partial bool, reason string) string {
	head := "warning: "
	if partial {
		head = "partial: "
	}
	return head + warning + "; " + reason
}

// parseFailureText describes a body that did not parse as a feed.
func parseFailureText(err error) string {
	switch {
	case errors.Is(err, newitems.ErrNotAFeed):
		return "not a feed"
	case errors.Is(err, newitems.ErrInvalidFeed):
		return "feed parse error"
	}
	return "undecodable feed"
}

// pollOneLine folds an error message onto one line, cut at 500 characters.
func pollOneLine(s string) string {
	s = strings.Join(strings.Fields(strings.ToValidUTF8(s, "\uFFFD")), " ")
	if r := []rune(s); len(r) > 500 {
		s = string(r[:500]) + "…"
	}
	return s
}

// newReport starts the Report of a poll of f that got resp: what was sent
// and received; the outcome is filled in once the poll is classified.
func newReport(f *store.Feed, resp *fetcher.Response, trigger string) *Report {
	rep := &Report{
		FeedID: f.ID, Trigger: trigger, URL: f.URL, Status: resp.Status, Conditional: resp.Conditional,
		Sent:     Validators{ETag: resp.SentETag, LastModified: resp.SentLastModified},
		Received: Validators{ETag: resp.ETag, LastModified: resp.LastModified},
		Bytes:    resp.WireBytes, ElapsedMS: resp.Elapsed.Milliseconds(), Polled: true,
		NewItems: []ReportItem{}, Ignored: []ReportItem{},
	}
	if resp.FinalURL != f.URL {
		rep.FinalURL = resp.FinalURL
	}
	for _, h := range resp.Redirects {
		rep.Redirects = append(rep.Redirects, Redirect{Status: h.Status, From: h.From, To: h.To})
	}
	return rep
}
