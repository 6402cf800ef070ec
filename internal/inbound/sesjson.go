package inbound

import (
	"bytes"
	"strings"

	"github.com/feedmail/feedmail/internal/esp"
)

// FormatSESJSON is the Format of an Amazon SES notification that came by
// mail as JSON: an SNS email(-json) subscription, or a notification
// someone forwarded.
const FormatSESJSON = "ses-json"

// maxJSONPart bounds the text part read as JSON (SES notifications with
// their headers are a few KiB).
const maxJSONPart = 1 << 20

// decodeSESMail decodes SES's JSON, inside an SNS envelope or not; nil
// when body is neither.
func decodeSESMail(body []byte) *esp.SES {
	if bytes.Contains(body, []byte(`"TopicArn"`)) {
		if sns, err := esp.DecodeSNS(body); err == nil && sns.Type == esp.SNSNotification {
			n, _ := esp.DecodeSES([]byte(sns.Message))
			return n
		}
	}
	n, _ := esp.DecodeSES(body)
	return n
}

// classifySESJSON recognises a text part that is an SNS message carrying
// SES's JSON, or SES's JSON itself (package esp decodes both, for mail and
// for POST /webhooks/ses alike): a bounce (judged by cause like a DSN), a
// complaint, a delivery delay; any other SES notification (a delivery) is
// matched as unknown, so it is never read as plain mail. The email's
// Message-IDs and envelope sender are added to m.originals, where the
// Message-IDs and return tokens of every report are found.
//
// By mail there is no signature to check: whoever can send mail to the
// bounce address can write this JSON. That is safe for the same reason
// every report by mail is: its effect needs a return token this install
// signed or the Message-ID of an email it sent, and is had once per email
// and effect; an invented report names no email of ours and changes
// nothing.
func classifySESJSON(m *message) (Report, bool) {
	var n *esp.SES
	walk(m.root, func(e *entity) {
		if n != nil || (e.mediaType != "text/plain" && e.mediaType != "application/json") {
			return
		}
		body := e.body[:min(len(e.body), maxJSONPart)]
		if !bytes.Contains(body, []byte(`"notificationType"`)) && !bytes.Contains(body, []byte(`"eventType"`)) &&
			!bytes.Contains(body, []byte(`notificationType\"`)) && !bytes.Contains(body, []byte(`eventType\"`)) {
			return
		}
		if n = decodeSESMail(body); n == nil {
			// A mail system may have wrapped the long lines: JSON has no
			// raw line breaks inside strings, so joining them restores it.
			n = decodeSESMail([]byte(strings.NewReplacer("\r", "", "\n", "").Replace(string(body))))
		}
	})
	if n == nil {
		return Report{}, false
	}
	orig := header{}
	for _, id := range n.MessageIDs() {
		orig = append(orig, field{"Message-Id", "<" + id + ">"})
	}
	if src := n.Source(); src != "" {
		orig = append(orig, field{"Return-Path", "<" + src + ">"})
	}
	for _, h := range n.Mail.Headers {
		if strings.EqualFold(h.Name, "List-Unsubscribe") {
			orig = append(orig, field{"List-Unsubscribe", h.Value})
		}
	}
	if len(orig) > 0 {
		m.originals = append(m.originals, orig)
	}
	b := n.Batch(esp.Options{})
	if len(b.Notices) == 0 {
		rep := unknown("SES notification without effect (" + clip(n.Type(), 40) + ")")
		rep.Format = FormatSESJSON
		return rep, true
	}
	first := b.Notices[0]
	rep := Report{Recipient: first.Recipient, Format: FormatSESJSON}
	if first.Kind == esp.KindComplaint {
		rep.Kind, rep.Action = KindComplaint, "abuse"
		if n.Complaint != nil && n.Complaint.ComplaintFeedbackType != "" {
			rep.Action = n.Complaint.ComplaintFeedbackType
		}
		return rep, true
	}
	rep.Kind, rep.Status, rep.Diagnostic, rep.Action = KindBounce, first.Failure.Status, first.Failure.Text, "failed"
	if first.Failure.Delayed {
		rep.Action = "delayed"
	}
	judge(&rep, first.Failure)
	return rep, true
}
