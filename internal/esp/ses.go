package esp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/feedmail/feedmail/internal/bounce"
)

// SES is one Amazon SES notification (the JSON an SNS topic carries as
// its Message, or an SNS email subscription as the body): a bounce, a
// complaint, a delivery delay (event publishing), or something feedmail
// does not act on (a delivery, a send, an open).
type SES struct {
	// NotificationType is set by SES's notifications, EventType by event
	// publishing (configuration sets); the same words otherwise.
	NotificationType string `json:"notificationType"`
	EventType        string `json:"eventType"`
	Bounce           *struct {
		BounceType        string         `json:"bounceType"`
		BounceSubType     string         `json:"bounceSubType"`
		BouncedRecipients []sesRecipient `json:"bouncedRecipients"`
	} `json:"bounce"`
	Complaint *struct {
		ComplainedRecipients  []sesRecipient `json:"complainedRecipients"`
		ComplaintFeedbackType string         `json:"complaintFeedbackType"`
		ComplaintSubType      string         `json:"complaintSubType"`
	} `json:"complaint"`
	DeliveryDelay *struct {
		DelayType         string         `json:"delayType"`
		DelayedRecipients []sesRecipient `json:"delayedRecipients"`
	} `json:"deliveryDelay"`
	Mail struct {
		// Source is the envelope sender the email was sent with
		// (bounces+TOKEN@… with a bounce address).
		Source      string   `json:"source"`
		Destination []string `json:"destination"`
		Headers     []struct {
			Name  string `json:"name"`
			Value string `json:"value"`
		} `json:"headers"`
		CommonHeaders struct {
			MessageID string `json:"messageId"`
		} `json:"commonHeaders"`
	} `json:"mail"`
}

type sesRecipient struct {
	EmailAddress   string `json:"emailAddress"`
	Action         string `json:"action"`
	Status         string `json:"status"`
	DiagnosticCode string `json:"diagnosticCode"`
}

// DecodeSES reads SES's JSON from b: the first JSON object in it, so text
// before (a forwarding note) or after (an SNS email footer) is ignored.
// It is ErrMalformed unless the object has a notification or event type.
func DecodeSES(b []byte) (*SES, error) {
	i := bytes.IndexByte(b, '{')
	if i < 0 {
		return nil, fmt.Errorf("%w: no JSON object", ErrMalformed)
	}
	var n SES
	if err := json.NewDecoder(bytes.NewReader(b[i:])).Decode(&n); err != nil {
		return nil, fmt.Errorf("%w: SES JSON: %v", ErrMalformed, err)
	}
	if n.Type() == "" {
		return nil, fmt.Errorf("%w: SES JSON without notificationType or eventType", ErrMalformed)
	}
	return &n, nil
}

// ParseSES decodes SES's JSON and returns its notices.
func ParseSES(b []byte, opt Options) (Batch, error) {
	n, err := DecodeSES(b)
	if err != nil {
		return Batch{}, err
	}
	return n.Batch(opt), nil
}

// Type is the notification or event type ("Bounce", "Complaint", ...).
func (n *SES) Type() string {
	if n.NotificationType != "" {
		return n.NotificationType
	}
	return n.EventType
}

// MessageIDs are the Message-IDs of the email: the common header's, then
// every Message-ID header SES kept.
func (n *SES) MessageIDs() []string {
	ids := addID(nil, n.Mail.CommonHeaders.MessageID)
	for _, h := range n.Mail.Headers {
		if strings.EqualFold(h.Name, "Message-ID") {
			ids = addID(ids, h.Value)
		}
	}
	return ids
}

// Source is the envelope sender of the email.
func (n *SES) Source() string { return n.Mail.Source }

// Batch returns one notice per bounced, complained-about or delayed
// recipient; any other type is ignored.
func (n *SES) Batch(opt Options) Batch {
	ids := n.MessageIDs()
	texts := []string{n.Mail.Source}
	for _, h := range n.Mail.Headers {
		if strings.EqualFold(h.Name, "Return-Path") || strings.EqualFold(h.Name, "List-Unsubscribe") {
			texts = append(texts, h.Value)
		}
	}
	toks := opt.tokens(nil, texts...)
	var b Batch
	add := func(kind Kind, event string, rcpt sesRecipient, f bounce.Failure) {
		if len(b.Notices) >= MaxEvents {
			return
		}
		b.Notices = append(b.Notices, Notice{Kind: kind, Failure: f, Recipient: rcpt.EmailAddress,
			MessageIDs: ids, Tokens: toks, Event: event})
	}
	failure := func(r sesRecipient, hint bounce.Reason, delayed bool) bounce.Failure {
		text := oneLine(r.DiagnosticCode)
		return bounce.Failure{Status: statusIn(r.Status, text), Code: replyCode(text), Text: text, Hint: hint, Delayed: delayed, Final: !delayed}
	}
	switch t := n.Type(); {
	case strings.EqualFold(t, "Bounce") && n.Bounce != nil:
		hint := sesBounceHint(n.Bounce.BounceType, n.Bounce.BounceSubType)
		event := "Bounce " + n.Bounce.BounceType + "/" + n.Bounce.BounceSubType
		for _, r := range n.Bounce.BouncedRecipients {
			add(KindBounce, event, r, failure(r, hint, false))
		}
	case strings.EqualFold(t, "Complaint") && n.Complaint != nil:
		event := strings.TrimSpace("Complaint " + n.Complaint.ComplaintFeedbackType + " " + n.Complaint.ComplaintSubType)
		for _, r := range n.Complaint.ComplainedRecipients {
			add(KindComplaint, event, r, bounce.Failure{})
		}
	case strings.EqualFold(t, "DeliveryDelay") && n.DeliveryDelay != nil:
		hint := sesDelayHint(n.DeliveryDelay.DelayType)
		for _, r := range n.DeliveryDelay.DelayedRecipients {
			add(KindBounce, "DeliveryDelay "+n.DeliveryDelay.DelayType, r, failure(r, hint, true))
		}
	}
	if len(b.Notices) == 0 {
		b.Ignored = 1
	}
	return b
}

// sesBounceHint maps SES's bounce type and subtype onto the vocabulary.
// A permanent bounce SES could not place is still a dead address in its
// words ("remove the recipient's address"); a transient one is not.
func sesBounceHint(typ, sub string) bounce.Reason {
	switch strings.ToLower(typ) {
	case "permanent":
		switch strings.ToLower(sub) {
		case "noemail":
			return bounce.UnknownUser
		default: // General, Suppressed, OnAccountSuppressionList
			return bounce.NotAccepting
		}
	case "transient":
		switch strings.ToLower(sub) {
		case "mailboxfull":
			return bounce.MailboxFull
		case "messagetoolarge":
			return bounce.TooLarge
		case "contentrejected", "attachmentrejected":
			return bounce.Policy
		default: // General
			return bounce.Temporary
		}
	}
	return bounce.Undetermined
}

// sesDelayHint maps an SES delivery delay's type onto the vocabulary.
func sesDelayHint(typ string) bounce.Reason {
	switch strings.ToLower(typ) {
	case "mailboxfull":
		return bounce.MailboxFull
	case "spamdetected":
		return bounce.Policy
	case "ipfailure":
		return bounce.Blocked
	case "sendingdeferral":
		return bounce.RateLimited
	case "undetermined":
		return bounce.Undetermined
	}
	return bounce.Temporary // InternalFailure, General, RecipientServerError, TransientCommunicationFailure, ...
}
