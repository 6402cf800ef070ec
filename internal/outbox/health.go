package outbox

import (
	"fmt"
	"time"

	"github.com/feedmail/feedmail/internal/bounce"
	"github.com/feedmail/feedmail/internal/store"
)

// ComplaintLine is the spam-complaint rate (complaints / emails sent) the
// big mailbox providers enforce: above 0.3 % their filters turn against a
// sender.
const ComplaintLine = 0.003

// DomainHealth is one destination domain as `feedmail mail health` prints
// it (see docs/operations.md, "Destinations and mail health").
type DomainHealth struct {
	Domain string `json:"domain"`
	Sent   int64  `json:"sent"` // emails delivered in the window
	Hard   int64  `json:"hard"` // failures that said the reader's address is dead
	Soft   int64  `json:"soft"` // mailbox full, message too large
	// SenderSide counts the refusals that were the sender's own problem,
	// by reason: blocked, authentication, policy, rate-limited, syntax
	// (every one, zeros too).
	SenderSide map[string]int64 `json:"sender_side"`
	// Other counts failures that were nobody's in particular (transient,
	// undetermined) or a reader's own filter.
	Other         int64   `json:"other"`
	Complaints    int64   `json:"complaints"`
	ComplaintRate float64 `json:"complaint_rate"` // complaints / sent; 0 when nothing was sent
	// OverComplaintLine: the rate is over ComplaintLine (or complaints
	// came with nothing sent in the window).
	OverComplaintLine bool       `json:"complaints_over_line"`
	Paused            bool       `json:"paused"` // mail to the domain waits now
	PausedUntil       *time.Time `json:"paused_until,omitempty"`
	PauseReason       string     `json:"pause_reason,omitempty"`
	PauseStreak       int        `json:"pause_streak,omitempty"`
	// Check says in sentences what to fix, most urgent first; empty when
	// nothing needs doing.
	Check []string `json:"check"`
}

// senderReasons are the sender's own reasons, in the vocabulary's order.
func senderReasons() []bounce.Reason {
	var out []bounce.Reason
	for _, r := range bounce.Reasons {
		if r.Party() == bounce.PartySender {
			out = append(out, r)
		}
	}
	return out
}

// Health returns what `feedmail mail health` prints for the store's
// counts, in their order (by volume): the complaint rate against
// ComplaintLine, whether each domain is paused at now, and the sentences
// of what to fix (a pause, complaints over the line, each sender-side
// reason's Fix).
func Health(rows []store.DomainHealth, now time.Time) []DomainHealth {
	out := make([]DomainHealth, 0, len(rows))
	for _, r := range rows {
		h := DomainHealth{Domain: r.Domain, Sent: r.Sent, Hard: r.Hard, Soft: r.Soft, Other: r.Other,
			Complaints: r.Complaints, SenderSide: map[string]int64{}, Check: []string{}}
		if r.Pause != nil && r.Pause.PausedUntil.After(now) {
			until := r.Pause.PausedUntil.UTC()
			h.Paused, h.PausedUntil, h.PauseReason, h.PauseStreak = true, &until, r.Pause.Reason, r.Pause.Failures
			h.Check = append(h.Check, fmt.Sprintf("mail to %s waits until %s: it refused our mail for the sender's own sake (%s, %s in a row); it is tried again then",
				r.Domain, until.Format(time.RFC3339), r.Pause.Reason, plural(r.Pause.Failures, "pause", "pauses")))
		}
		if r.Sent > 0 {
			h.ComplaintRate = float64(r.Complaints) / float64(r.Sent)
		}
		h.OverComplaintLine = r.Complaints > 0 && (r.Sent == 0 || h.ComplaintRate > ComplaintLine)
		if h.OverComplaintLine {
			h.Check = append(h.Check, fmt.Sprintf("%s for %s sent (%.2f %%) is over the %.1f %% the big mailbox providers enforce: mail only people who confirmed, keep unsubscribing one click away, and look at what the complained-about feeds send",
				plural(int(r.Complaints), "spam complaint", "spam complaints"), plural(int(r.Sent), "email", "emails"), 100*h.ComplaintRate, 100*ComplaintLine))
		}
		for _, reason := range senderReasons() {
			n := r.Sender[string(reason)]
			h.SenderSide[string(reason)] = n
			if n > 0 {
				h.Check = append(h.Check, fmt.Sprintf("%s refused as %s: %s", plural(int(n), "email", "emails"), reason, reason.Fix()))
			}
		}
		out = append(out, h)
	}
	return out
}

// FeedHealth is one feed as `feedmail mail health --feeds` prints it: its
// instant email sent in the window, the spam complaints about it, and the
// complaint rate against ComplaintLine.
type FeedHealth struct {
	Feed          int64   `json:"feed"`
	URL           string  `json:"url"`
	Sent          int64   `json:"sent"`
	Complaints    int64   `json:"complaints"`
	ComplaintRate float64 `json:"complaint_rate"` // complaints / sent; 0 when nothing was sent
	// OverComplaintLine: the rate is over ComplaintLine (or complaints
	// came with nothing sent in the window).
	OverComplaintLine bool `json:"complaints_over_line"`
}

// FeedsHealth returns what `feedmail mail health --feeds` prints for the
// store's per-feed counts, in their order (most complaints first).
func FeedsHealth(rows []store.FeedHealth) []FeedHealth {
	out := make([]FeedHealth, 0, len(rows))
	for _, r := range rows {
		h := FeedHealth{Feed: r.FeedID, URL: r.URL, Sent: r.Sent, Complaints: r.Complaints}
		if r.Sent > 0 {
			h.ComplaintRate = float64(r.Complaints) / float64(r.Sent)
		}
		h.OverComplaintLine = r.Complaints > 0 && (r.Sent == 0 || h.ComplaintRate > ComplaintLine)
		out = append(out, h)
	}
	return out
}

// plural is n with the word for one or for many.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
