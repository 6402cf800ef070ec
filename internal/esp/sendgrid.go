package esp

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/feedmail/feedmail/internal/bounce"
)

// WebhookTolerance is how old a signed timestamp of SendGrid or Mailgun
// may be (and FutureSkew how far ahead): both sign each delivery when
// they send it. A replay inside the window has no second effect (each
// effect is recorded once per email), and Mailgun tokens are also
// remembered for the window (Seen).
const WebhookTolerance = 10 * time.Minute

// The headers of SendGrid's Signed Event Webhook.
const (
	SendGridSignatureHeader = "X-Twilio-Email-Event-Webhook-Signature"
	SendGridTimestampHeader = "X-Twilio-Email-Event-Webhook-Timestamp"
)

// ParseSendGridKey reads the verification key SendGrid shows for its
// Signed Event Webhook: base64 of the DER public key (PEM is accepted
// too). It must be an ECDSA P-256 key.
func ParseSendGridKey(s string) (*ecdsa.PublicKey, error) {
	s = strings.TrimSpace(s)
	var der []byte
	if blk, _ := pem.Decode([]byte(s)); blk != nil {
		der = blk.Bytes
	} else {
		var err error
		if der, err = base64.StdEncoding.DecodeString(strings.Join(strings.Fields(s), "")); err != nil {
			return nil, fmt.Errorf("not base64: %v", err)
		}
	}
	pub, err := x509.ParsePKIXPublicKey(der)
	if err != nil {
		return nil, fmt.Errorf("not a public key: %v", err)
	}
	k, ok := pub.(*ecdsa.PublicKey)
	if !ok || k.Curve != elliptic.P256() {
		return nil, fmt.Errorf("not an ECDSA P-256 key")
	}
	return k, nil
}

// VerifySendGrid checks the signature header (base64 of an ASN.1 ECDSA
// signature of SHA-256 over the timestamp header followed by the raw
// body) under key, and that the timestamp (Unix seconds) is inside the
// tolerance at now.
func VerifySendGrid(key *ecdsa.PublicKey, body []byte, signature, timestamp string, now time.Time) error {
	if signature == "" || timestamp == "" {
		return fmt.Errorf("%w: no %s or %s header", ErrUnauthenticated, SendGridSignatureHeader, SendGridTimestampHeader)
	}
	sig, err := base64.StdEncoding.DecodeString(strings.TrimSpace(signature))
	if err != nil {
		return fmt.Errorf("%w: signature is not base64", ErrForged)
	}
	h := sha256.New()
	h.Write([]byte(timestamp))
	h.Write(body)
	if !ecdsa.VerifyASN1(key, h.Sum(nil), sig) {
		return fmt.Errorf("%w: SendGrid signature does not verify", ErrForged)
	}
	return checkUnix(timestamp, now)
}

// checkUnix refuses a signed Unix timestamp outside the tolerance.
func checkUnix(ts string, now time.Time) error {
	sec, err := parseUnix(ts)
	if err != nil {
		return fmt.Errorf("%w: timestamp %q", ErrForged, ts)
	}
	t := time.Unix(sec, 0)
	if now.Sub(t) > WebhookTolerance || t.Sub(now) > FutureSkew {
		return fmt.Errorf("%w: signed at %s, now %s", ErrStale, t.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	return nil
}

// parseUnix reads Unix seconds.
func parseUnix(ts string) (int64, error) {
	return strconv.ParseInt(strings.TrimSpace(ts), 10, 64)
}

// sendGridEvent is one event of SendGrid's Event Webhook.
type sendGridEvent struct {
	Email          string `json:"email"`
	Event          string `json:"event"`
	SMTPID         string `json:"smtp-id"`
	Type           string `json:"type"` // bounce events: bounce or blocked
	Status         string `json:"status"`
	Reason         string `json:"reason"`
	Response       string `json:"response"` // deferred
	Classification string `json:"bounce_classification"`
}

// sendGridClass maps SendGrid's bounce classification onto the
// vocabulary.
var sendGridClass = map[string]bounce.Reason{
	"invalid address":     bounce.UnknownUser,
	"mailbox unavailable": bounce.NotAccepting,
	"technical":           bounce.Temporary,
	"content":             bounce.Policy,
	"reputation":          bounce.Blocked,
	"frequency or volume": bounce.RateLimited,
	"unclassified":        bounce.Undetermined,
}

// sendGridDropped maps the reason SendGrid gives for dropping a message
// (never attempted) onto the vocabulary: an address it suppressed after
// earlier bounces is dead, one that unsubscribed or complained refused
// the mail itself.
var sendGridDropped = map[string]bounce.Reason{
	"bounced address":        bounce.NotAccepting,
	"invalid":                bounce.UnknownUser,
	"unsubscribed address":   bounce.Filtered,
	"spam reporting address": bounce.Filtered,
}

// ParseSendGrid reads a batch of SendGrid events (a JSON array): bounce
// (type bounce, or blocked: refused for the message, not the address),
// dropped and deferred (a delay, never a failure) are bounces, spamreport
// a complaint; every other event is ignored. smtp-id carries the
// Message-ID.
func ParseSendGrid(body []byte, opt Options) (Batch, error) {
	var events []sendGridEvent
	if err := json.Unmarshal(body, &events); err != nil {
		return Batch{}, fmt.Errorf("%w: SendGrid events: %v", ErrMalformed, err)
	}
	if len(events) > MaxEvents {
		return Batch{}, fmt.Errorf("%w: %d events in one callback (at most %d)", ErrMalformed, len(events), MaxEvents)
	}
	var b Batch
	for _, e := range events {
		n := Notice{Kind: KindBounce, Recipient: e.Email, MessageIDs: addID(nil, e.SMTPID), Event: e.Event}
		text := oneLine(e.Reason)
		switch strings.ToLower(e.Event) {
		case "bounce":
			hint, ok := sendGridClass[strings.ToLower(e.Classification)]
			if !ok {
				hint = bounce.NotAccepting // SendGrid's own hard bounce
				if strings.EqualFold(e.Type, "blocked") {
					hint = bounce.Temporary
				}
			}
			n.Event += " " + e.Type
			n.Failure = bounce.Failure{Status: statusIn(e.Status, text), Code: replyCode(text), Text: text, Hint: hint, Final: true}
		case "dropped":
			hint, ok := sendGridDropped[strings.ToLower(text)]
			if !ok {
				hint = bounce.Undetermined
			}
			n.Failure = bounce.Failure{Text: text, Hint: hint, Final: true}
		case "deferred":
			text = oneLine(e.Response)
			n.Failure = bounce.Failure{Status: statusIn("", text), Code: replyCode(text), Text: text,
				Hint: bounce.Temporary, Delayed: true}
		case "spamreport":
			n.Kind = KindComplaint
		default:
			b.Ignored++
			continue
		}
		b.Notices = append(b.Notices, n)
	}
	return b, nil
}
