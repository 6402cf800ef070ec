package mailer

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/wneessen/go-mail"
)

// Complaint routing. Every email carries a Feedback-ID in the format
// mailbox providers' postmaster tools aggregate complaints by
// ("a:b:c:SenderId"): "<feed id>:<owner id>:<kind>:feedmail", the feed an
// instant email is of (0 for digests and notices, which are of none or of
// many), the user id of the feed's verified publisher when the feed is
// owner-paid (else 0), and the outbox kind. Only row ids and a kind: no
// address, title or URL. With a bounce address every email also carries
// RFC 9477's CFBL-Address: its own return address (the one in its
// envelope), so a complaint report names the email even when the
// original it returns is cut. DKIMSignedHeaders covers both, as RFC 9477
// requires.

// Header names of complaint routing.
const (
	headerFeedbackID  = mail.Header("Feedback-ID")
	headerCFBLAddress = mail.Header("CFBL-Address")
	// FeedbackSenderID is the last field of every Feedback-ID.
	FeedbackSenderID = "feedmail"
)

// FeedbackID returns the Feedback-ID of an email of kind (an outbox kind)
// about feed (0: none or many), paid for by the feed's owner (0: none).
// Characters a field may not carry (":" and anything but letters, digits
// and "-") become "-".
func FeedbackID(feed, owner int64, kind string) string {
	k := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '-'
	}, kind)
	if k == "" {
		k = "email"
	}
	return strconv.FormatInt(max(feed, 0), 10) + ":" + strconv.FormatInt(max(owner, 0), 10) + ":" + k + ":" + FeedbackSenderID
}

// SetFeedbackHeaders adds Feedback-ID and, when returnAddr is set (a
// bounce address is configured), CFBL-Address with ARF reports. The error
// says the return address cannot go into a header.
func SetFeedbackHeaders(m *mail.Msg, feedbackID, returnAddr string) error {
	m.SetGenHeaderPreformatted(headerFeedbackID, feedbackID)
	if returnAddr == "" {
		return nil
	}
	if !msgIDRe.MatchString(returnAddr) {
		return fmt.Errorf("CFBL-Address: %q is no plain address", returnAddr)
	}
	m.SetGenHeaderPreformatted(headerCFBLAddress, returnAddr+"; report=arf")
	return nil
}
