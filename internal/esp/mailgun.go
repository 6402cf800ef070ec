package esp

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/feedmail/feedmail/internal/bounce"
)

// MailgunSignature is the signature object of a Mailgun webhook.
type MailgunSignature struct {
	Timestamp string `json:"timestamp"`
	Token     string `json:"token"`
	Signature string `json:"signature"`
}

// Mailgun is one Mailgun webhook (the JSON body with its signature and
// event data).
type Mailgun struct {
	Signature MailgunSignature `json:"signature"`
	EventData struct {
		Event     string `json:"event"`
		Severity  string `json:"severity"` // failed: permanent or temporary
		Reason    string `json:"reason"`
		Recipient string `json:"recipient"`
		Message   struct {
			Headers struct {
				MessageID string `json:"message-id"`
			} `json:"headers"`
		} `json:"message"`
		DeliveryStatus struct {
			Code         json.Number `json:"code"`
			Message      string      `json:"message"`
			Description  string      `json:"description"`
			EnhancedCode string      `json:"enhanced-code"`
		} `json:"delivery-status"`
		Envelope struct {
			Sender string `json:"sender"`
		} `json:"envelope"`
	} `json:"event-data"`
}

// DecodeMailgun reads a Mailgun webhook body.
func DecodeMailgun(body []byte) (*Mailgun, error) {
	var m Mailgun
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("%w: Mailgun JSON: %v", ErrMalformed, err)
	}
	if m.EventData.Event == "" {
		return nil, fmt.Errorf("%w: Mailgun webhook without event-data.event", ErrMalformed)
	}
	return &m, nil
}

// Verify checks the signature (hex HMAC-SHA256 of timestamp and token
// under the webhook signing key) and that the timestamp is inside the
// tolerance at now. Tokens seen before are the caller's to refuse (Seen).
func (m *Mailgun) Verify(key []byte, now time.Time) error {
	s := m.Signature
	if s.Signature == "" || s.Token == "" || s.Timestamp == "" {
		return fmt.Errorf("%w: Mailgun webhook without a signature", ErrUnauthenticated)
	}
	got, err := hex.DecodeString(s.Signature)
	if err != nil {
		return fmt.Errorf("%w: signature is not hex", ErrForged)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(s.Timestamp + s.Token))
	if !hmac.Equal(got, mac.Sum(nil)) {
		return fmt.Errorf("%w: Mailgun signature does not verify", ErrForged)
	}
	return checkUnix(s.Timestamp, now)
}

// mailgunReasons maps the reason of a permanent failure onto the
// vocabulary: "bounce" is Mailgun's own hard bounce, the suppressions say
// the address bounced, unsubscribed or complained before, "old" that
// retries ran out.
var mailgunReasons = map[string]bounce.Reason{
	"bounce":               bounce.NotAccepting,
	"suppress-bounce":      bounce.NotAccepting,
	"suppress-unsubscribe": bounce.Filtered,
	"suppress-complaint":   bounce.Filtered,
	"espblock":             bounce.Blocked,
	"old":                  bounce.Expired,
	"generic":              bounce.Undetermined,
}

// Batch returns the webhook's notice: event failed (severity permanent,
// or temporary: a delay still being retried) is a bounce, complained a
// complaint, every other event is ignored.
func (m *Mailgun) Batch(opt Options) Batch {
	e := m.EventData
	n := Notice{Kind: KindBounce, Recipient: e.Recipient, MessageIDs: addID(nil, e.Message.Headers.MessageID),
		Tokens: opt.tokens(nil, e.Envelope.Sender), Event: strings.TrimSpace(e.Event + " " + e.Severity + " " + e.Reason)}
	switch strings.ToLower(e.Event) {
	case "failed":
		ds := e.DeliveryStatus
		text := oneLine(strings.TrimSpace(ds.Message + " " + ds.Description))
		code := replyCode(text)
		if c, err := ds.Code.Int64(); err == nil && c >= 200 && c < 600 {
			code = int(c)
		}
		f := bounce.Failure{Status: statusIn(ds.EnhancedCode, text), Code: code, Text: text, Final: true}
		if strings.EqualFold(e.Severity, "temporary") {
			f.Hint, f.Delayed, f.Final = bounce.Temporary, true, false
		} else if hint, ok := mailgunReasons[strings.ToLower(e.Reason)]; ok {
			f.Hint = hint
		} else {
			f.Hint = bounce.Undetermined
		}
		n.Failure = f
	case "complained":
		n.Kind = KindComplaint
	default:
		return Batch{Ignored: 1}
	}
	return Batch{Notices: []Notice{n}}
}

// Seen remembers the Mailgun tokens of callbacks already handled by this
// process, each until its timestamp leaves the tolerance (after which the
// timestamp check refuses it anyway), at most Max of them: past that the
// soonest to expire is forgotten. It is per process: a replay that
// reaches another process of the same install is still harmless, since
// every effect is recorded once per email in the database.
type Seen struct {
	Max int // 0: 10,000

	mu     sync.Mutex
	tokens map[string]time.Time // token → when it may be forgotten
}

// Has reports whether tok was added and has not expired at now.
func (s *Seen) Has(tok string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	until, ok := s.tokens[tok]
	return ok && now.Before(until)
}

// Add remembers tok until the tolerance of the timestamp it was signed
// at (Unix seconds) has passed.
func (s *Seen) Add(tok, timestamp string, now time.Time) {
	until := now.Add(WebhookTolerance + FutureSkew)
	if sec, err := parseUnix(timestamp); err == nil {
		until = time.Unix(sec, 0).Add(WebhookTolerance + time.Second)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tokens == nil {
		s.tokens = map[string]time.Time{}
	}
	max := s.Max
	if max <= 0 {
		max = 10000
	}
	if len(s.tokens) >= max {
		var oldest string
		var oldestAt time.Time
		for k, u := range s.tokens {
			if !now.Before(u) {
				delete(s.tokens, k)
				continue
			}
			if oldest == "" || u.Before(oldestAt) {
				oldest, oldestAt = k, u
			}
		}
		if len(s.tokens) >= max {
			delete(s.tokens, oldest)
		}
	}
	s.tokens[tok] = until
}
